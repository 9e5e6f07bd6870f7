package sieve

import (
	"testing"
	"time"
)

// TestBatchRecords replays a batch's records, read with Records, on a
// second DB and checks that it reads the same.
func TestBatchRecords(t *testing.T) {
	src, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cf, err := src.OpenColumnFamily("fam", nil)
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Truncate(time.Nanosecond)
	b := src.NewBatch()
	_ = b.Put([]byte("a"), []byte("1"))
	_ = b.PutCFWithExpiry(cf, []byte("b"), []byte("2"), exp)
	_ = b.DeleteCF(cf, []byte("c"))
	_ = b.DeleteRangeCF(cf, []byte("d"), []byte("e"))
	var got []BatchRecord
	if err := b.Records(func(r BatchRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []BatchRecord{
		{Kind: RecordPut, Family: "default", Key: []byte("a"), Value: []byte("1")},
		{Kind: RecordPut, Family: "fam", Key: []byte("b"), Value: []byte("2"), Expiry: exp},
		{Kind: RecordDelete, Family: "fam", Key: []byte("c")},
		{Kind: RecordDeleteRange, Family: "fam", Key: []byte("d"), End: []byte("e")},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.Family != w.Family || string(g.Key) != string(w.Key) ||
			string(g.Value) != string(w.Value) || string(g.End) != string(w.End) || !g.Expiry.Equal(w.Expiry) {
			t.Errorf("record %d: %+v, want %+v", i, g, w)
		}
	}
	if err := src.NewBatch().Records(func(BatchRecord) error { t.Fatal("record in an empty batch"); return nil }); err != nil {
		t.Fatal(err)
	}
}
