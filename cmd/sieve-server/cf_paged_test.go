package main

import (
	"fmt"
	"testing"
)

// TestCFPagedScanDumpServer: a paged cuckoo filter of many pages moves
// through CF.SCANDUMP and CF.LOADCHUNK in several chunks (the header,
// then pages) and answers the same afterwards; a page chunk that does
// not fit the loaded header is refused.
func TestCFPagedScanDumpServer(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	if got := do(c, "cf.reserve", "cf", "1000000", "bucketsize", "4"); got != "OK" {
		t.Fatalf("cf.reserve: %s", got)
	}
	for i := range 3000 {
		if got := do(c, "cf.add", "cf", fmt.Sprint("i", i)); got != "1" {
			t.Fatalf("cf.add: %s", got)
		}
	}
	var chunks [][2]any
	for iter := int64(0); ; {
		v, err := c.Do(ctx, "cf.scandump", "cf", iter).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if v[0].(int64) == 0 {
			break
		}
		chunks = append(chunks, [2]any{v[0], v[1]})
		iter = v[0].(int64)
	}
	if len(chunks) < 3 {
		t.Fatalf("%d chunks, want the header and several of pages", len(chunks))
	}
	for _, ch := range chunks {
		if got := do(c, "cf.loadchunk", "copy", ch[0], ch[1]); got != "OK" {
			t.Fatalf("cf.loadchunk: %s", got)
		}
	}
	for i := range 3000 {
		if got := do(c, "cf.exists", "copy", fmt.Sprint("i", i)); got != "1" {
			t.Fatalf("cf.exists i%d after the load: %s", i, got)
		}
	}
	if a, b := do(c, "cf.info", "cf"), do(c, "cf.info", "copy"); a != b {
		t.Fatalf("cf.info: %s, copy %s", a, b)
	}
	if got := do(c, "cf.loadchunk", "copy", chunks[1][0], "garbage"); got != "ERR:Couldn't load chunk!" {
		t.Fatalf("cf.loadchunk of garbage: %s", got)
	}
	if got := do(c, "type", "cf"); got != "MBbloomCF" {
		t.Fatalf("type of a paged cuckoo filter: %s", got)
	}
}
