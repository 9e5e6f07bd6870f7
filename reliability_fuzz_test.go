package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
)

// FuzzBatchDecode feeds arbitrary bytes to the batch decoder that recovery
// runs on every WAL record: it must reject them with ErrCorruption or
// decode entries that encode back to a batch decoding to the same entries.
func FuzzBatchDecode(f *testing.F) {
	b := &Batch{}
	b.Put([]byte("key"), []byte("value"))
	b.Delete([]byte("gone"))
	b.Merge([]byte("m"), []byte("op"))
	b.add(base.KindSet, 3, []byte("cf-key"), []byte("cf-value"))
	b.finish()
	b.setSeq(42)
	f.Add(append([]byte(nil), b.data...))
	f.Add(append(append([]byte(nil), b.data...), b.data...)) // a group record
	f.Add(b.data[:batchHeaderLen])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for rec := data; len(rec) > 0; {
			n, err := batchLen(rec)
			if err != nil {
				if !errors.Is(err, ErrCorruption) {
					t.Fatalf("batchLen: unmarked error %v", err)
				}
				return
			}
			entries, seq, err := decodeBatch(rec[:n])
			if err != nil {
				if !errors.Is(err, ErrCorruption) {
					t.Fatalf("decode: unmarked error %v", err)
				}
				return
			}
			var re Batch
			for _, e := range entries {
				if err := re.add(e.kind, e.cf, e.key, e.value); err != nil {
					t.Fatalf("re-encoding %+v: %v", e, err)
				}
			}
			re.finish()
			re.setSeq(seq)
			again, seq2, err := decodeBatch(re.data)
			if err != nil || seq2 != seq || len(again) != len(entries) {
				t.Fatalf("round trip: %v, seq %d vs %d, %d vs %d entries", err, seq2, seq, len(again), len(entries))
			}
			for i := range again {
				a, b := again[i], entries[i]
				if a.kind != b.kind || a.cf != b.cf || !bytes.Equal(a.key, b.key) || !bytes.Equal(a.value, b.value) {
					t.Fatalf("round trip: entry %d %+v vs %+v", i, a, b)
				}
			}
			rec = rec[n:]
		}
	})
}

func decodeBatch(data []byte) ([]batchEntry, uint64, error) {
	br, seq, err := newBatchReader(data)
	if err != nil {
		return nil, 0, err
	}
	var out []batchEntry
	for e, ok := br.next(); ok; e, ok = br.next() {
		out = append(out, e)
	}
	return out, seq, br.Err
}

// FuzzWALRecovery opens a database whose WAL holds arbitrary bytes (seeded
// with a real WAL and torn copies of it): Open must succeed or fail with
// ErrCorruption, never panic or hang, and a database that opens must read
// back without errors.
func FuzzWALRecovery(f *testing.F) {
	template := vfs.NewMem()
	db, err := Open("/db", &Options{FS: template, Merger: appendMerger{}})
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		k := []byte(fmt.Sprintf("k%02d", i%7))
		switch i % 3 {
		case 0:
			db.Put(k, []byte(fmt.Sprintf("value-%d", i)), Sync)
		case 1:
			db.Merge(k, []byte(fmt.Sprintf("op%d", i)), NoSync)
		default:
			b := db.NewBatch()
			b.Delete(k)
			b.Put([]byte("other"), k)
			db.Apply(b, NoSync)
		}
	}
	db.Close()
	walName := ""
	names, _ := template.List("/db")
	for _, n := range names {
		if t, _, ok := base.ParseFilename(n); ok && t == base.FileTypeLog {
			walName = "/db/" + n
		}
	}
	wal, err := template.ReadFile(walName)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(wal)
	f.Add(wal[:len(wal)/2])
	f.Add(wal[:len(wal)-19]) // without the end-of-log trailer
	f.Add(wal[:36])          // the file header only
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := template.CrashClone(vfs.CrashOptions{})
		if err := fs.WriteFile(walName, data); err != nil {
			t.Fatal(err)
		}
		db, err := Open("/db", &Options{FS: fs, Merger: appendMerger{}})
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("Open: unmarked error %v", err)
			}
			return
		}
		defer db.Close()
		it := db.NewIter(nil)
		for ok := it.First(); ok; ok = it.Next() {
		}
		if err := it.Close(); err != nil {
			t.Fatalf("scan: %v", err)
		}
		if err := db.CheckInvariants(true); err != nil {
			t.Fatal(err)
		}
	})
}
