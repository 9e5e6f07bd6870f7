//go:build rocksdb

package main

import (
	"bytes"
	"fmt"
	"testing"
)

// TestRocksDBAdapter opens each RocksDB engine, puts keys, gets present
// and absent ones, iterates (past the end: Next on an exhausted RocksDB
// iterator would abort the process in Debian's build), flushes and
// compacts, reads the counters and closes.
func TestRocksDBAdapter(t *testing.T) {
	for _, name := range []string{"rocksdb", "rocksdb-ribbon"} {
		t.Run(name, func(t *testing.T) {
			e := openConform(t, registry[name], t.TempDir(), Config{CacheBytes: 1 << 20, BitsPerKey: 10})
			const n = 1000
			for i := 0; i < n; i++ {
				if err := e.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%d", i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.PutSync([]byte("k99999"), []byte("last")); err != nil {
				t.Fatal(err)
			}
			checkRocksDBGets(t, e, n)
			checkRocksDBIterator(t, e, n)
			if err := e.FlushCompact(); err != nil {
				t.Fatal(err)
			}
			checkRocksDBGets(t, e, n)
			checkRocksDBIterator(t, e, n)
			st := e.Stats()
			if st[statFilterChecks] == 0 || st[statFilterNegatives] == 0 {
				t.Errorf("filter counters after absent Gets on a compacted table: %v", st)
			}
			if st[statWALSyncs] == 0 {
				t.Errorf("no WAL sync counted after PutSync: %v", st)
			}
			if wa, ok := e.WriteAmp(); !ok || wa <= 0 {
				t.Errorf("WriteAmp = %v, %v", wa, ok)
			}
			t.Logf("shape %s; stats %v", e.Shape(), st)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func checkRocksDBGets(t *testing.T, e Engine, n int) {
	t.Helper()
	var v []byte
	for i := 0; i < n; i++ {
		v, found, err := e.Get([]byte(fmt.Sprintf("k%05d", i)), v)
		if err != nil || !found || string(v) != fmt.Sprintf("v%d", i) {
			t.Fatalf("Get(k%05d) = %q, %v, %v", i, v, found, err)
		}
		if v, found, err = e.Get([]byte(fmt.Sprintf("k%05d+", i)), v); err != nil || found {
			t.Fatalf("Get(absent k%05d+) = %q, %v, %v", i, v, found, err)
		}
	}
}

// checkRocksDBIterator seeks to the middle, walks to the end and past it.
func checkRocksDBIterator(t *testing.T, e Engine, n int) {
	t.Helper()
	it, err := e.NewIterator()
	if err != nil {
		t.Fatal(err)
	}
	i := n / 2
	for ok := it.Seek([]byte(fmt.Sprintf("k%05d", i))); ok; ok = it.Next() {
		want := fmt.Sprintf("k%05d", i)
		if i == n {
			want = "k99999"
		}
		if !bytes.Equal(it.Key(), []byte(want)) {
			t.Fatalf("iterator at %q, want %q", it.Key(), want)
		}
		i++
	}
	if i != n+1 {
		t.Fatalf("iterated to %d, want %d", i, n+1)
	}
	if it.Next() || it.Seek([]byte("l")) || it.Next() {
		t.Fatal("iterator valid past the end")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRocksDBTableNote: every report table marks the RocksDB columns and
// says under it that the build keeps its assertions.
func TestRocksDBTableNote(t *testing.T) {
	var tb table
	tb.add("workload", "sieve", "rocksdb", "rocksdb-ribbon")
	tb.add("readrandom ops/s", "1", "2", "3")
	var b bytes.Buffer
	tb.write(&b)
	out := b.String()
	for _, want := range []string{"rocksdb*", "rocksdb-ribbon*", "* rocksdb, rocksdb-ribbon: Debian build of RocksDB 7.8.3, assertions on"} {
		if !bytes.Contains([]byte(out), []byte(want)) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	t.Log("\n" + out)
}
