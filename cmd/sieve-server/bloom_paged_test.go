package main

import (
	"fmt"
	"testing"
)

// TestBloomPagedServer: a filter of many pages through the server:
// BF.RESERVE of 10M (nothing written until items arrive), adds and
// lookups, BF.SCANDUMP and BF.LOADCHUNK into another key, DEL dropping
// the pages (a re-created filter of the same key answers 0), a filter
// inside MULTI/EXEC.
func TestBloomPagedServer(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	want := func(args []any, exp string) {
		t.Helper()
		if got := do(c, args...); got != exp {
			t.Fatalf("%v: %q, want %q", args, got, exp)
		}
	}
	want([]any{"bf.reserve", "big", "0.01", "10000000"}, "OK")
	for i := range 2000 {
		want([]any{"bf.add", "big", fmt.Sprint("item", i)}, "1")
	}
	want([]any{"bf.exists", "big", "item7"}, "1")
	want([]any{"bf.card", "big"}, "2000")
	var chunks [][2]any
	for iter := int64(0); ; {
		v, err := c.Do(ctx, "bf.scandump", "big", iter).Slice()
		if err != nil {
			t.Fatal(err)
		}
		next := v[0].(int64)
		if next == 0 {
			break
		}
		chunks = append(chunks, [2]any{next, v[1]})
		iter = next
	}
	if len(chunks) < 3 {
		t.Fatalf("%d chunks for 2000 items spread over a 10M filter's pages", len(chunks))
	}
	for _, ch := range chunks {
		want([]any{"bf.loadchunk", "copy", ch[0], ch[1]}, "OK")
	}
	want([]any{"bf.exists", "copy", "item1999"}, "1")
	want([]any{"bf.card", "copy"}, "2000")
	want([]any{"bf.loadchunk", "copy", "2", "junk"}, "ERR:ERR received bad data")
	want([]any{"bf.scandump", "nokey", "0"}, "ERR:ERR not found")
	want([]any{"del", "big"}, "1")
	want([]any{"bf.reserve", "big", "0.01", "10000000"}, "OK")
	want([]any{"bf.exists", "big", "item7"}, "0")
	want([]any{"multi"}, "OK")
	want([]any{"bf.add", "big", "t1"}, "QUEUED")
	want([]any{"bf.exists", "big", "t1"}, "QUEUED")
	want([]any{"bf.add", "big", "t1"}, "QUEUED")
	want([]any{"exec"}, "[1 1 0]")
	want([]any{"bf.exists", "big", "t1"}, "1")
	want([]any{"flushall"}, "OK")
	want([]any{"bf.reserve", "copy", "0.01", "10000000"}, "OK")
	want([]any{"bf.exists", "copy", "item1999"}, "0")
}

// TestCFScanDumpServer: a cuckoo filter moves through CF.SCANDUMP and
// CF.LOADCHUNK (one chunk in sieve) and keeps its items.
func TestCFScanDumpServer(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	for i := range 50 {
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
	for _, ch := range chunks {
		if got := do(c, "cf.loadchunk", "copy", ch[0], ch[1]); got != "OK" {
			t.Fatalf("cf.loadchunk: %s", got)
		}
	}
	if got := do(c, "cf.exists", "copy", "i49"); got != "1" {
		t.Fatalf("cf.exists after the load: %s", got)
	}
}
