package sieve

import (
	"fmt"
	"testing"
	"time"

	"github.com/sievedb/sieve/vfs"
)

// The range-deletion benchmark's database: rangeDelBenchN keys "key%08d"
// (16-byte values) in an in-memory file system, flushed and compacted,
// whose middle half, rangeDelBenchN/2 keys, DeleteRange deletes.
const rangeDelBenchN = 2000000

func rangeDelKey(i int) []byte { return fmt.Appendf(nil, "key%08d", i) }

func openRangeDelBench(b *testing.B) *DB {
	b.Helper()
	db, err := Open("/db", &Options{FS: vfs.NewMem()})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < rangeDelBenchN; {
		bt := db.NewBatch()
		for end := i + 1000; i < end; i++ {
			bt.Put(rangeDelKey(i), []byte("value-0123456789"))
		}
		if err := db.Apply(bt, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkDeleteRange measures DeleteRange of 1M keys and the Gets of
// the keys it deleted. First one DeleteRange of the middle 1M keys
// (logged: its time and WAL bytes); then "get" sub-benchmarks alternate
// rounds of 64 Gets of deleted keys, of absent keys (between present
// ones, so every level's filter is asked) and of present keys, and report
// each kind's ns per Get and the ratio deleted/absent, in the same run:
// with the tombstone in the memtable, in an L0 table after a flush, and
// after a compaction dropped the keys and the tombstone. Last, "write"
// sub-benchmarks repeat DeleteRange of 1M keys, of 10 keys, and a Put,
// reporting the WAL bytes of each.
//
//	go test -run '^$' -bench BenchmarkDeleteRange -benchtime 2s .
func BenchmarkDeleteRange(b *testing.B) {
	db := openRangeDelBench(b)
	defer db.Close()
	lo, hi := rangeDelKey(rangeDelBenchN/4), rangeDelKey(3*rangeDelBenchN/4)
	wal, start := db.Metrics().WAL.Bytes, time.Now()
	if err := db.DeleteRange(lo, hi, nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("DeleteRange of %d keys: %v, %d WAL bytes", rangeDelBenchN/2, time.Since(start), db.Metrics().WAL.Bytes-wal)
	b.Run("get/tombstone-in-memtable", func(b *testing.B) { benchGetDeleted(b, db) })
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.Run("get/tombstone-in-L0", func(b *testing.B) { benchGetDeleted(b, db) })
	start = time.Now()
	if err := db.Compact(nil, nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("compaction after the DeleteRange: %v; %+v", time.Since(start), db.Metrics().RangeDel)
	b.Run("get/compacted", func(b *testing.B) { benchGetDeleted(b, db) })
	write := func(name string, op func(i int) error) {
		b.Run("write/"+name, func(b *testing.B) {
			wal := db.Metrics().WAL.Bytes
			for i := 0; i < b.N; i++ {
				if err := op(i); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(db.Metrics().WAL.Bytes-wal)/float64(b.N), "WAL-bytes/op")
		})
	}
	write("put", func(i int) error { return db.Put(rangeDelKey(rangeDelBenchN+i%1000), []byte("value-0123456789"), nil) })
	write("deleterange-10-keys", func(int) error { return db.DeleteRange(lo, rangeDelKey(rangeDelBenchN/4+10), nil) })
	write("deleterange-1M-keys", func(int) error { return db.DeleteRange(lo, hi, nil) })
}

// benchGetDeleted runs b.N rounds of 64 Gets of deleted keys, 64 of
// absent keys and 64 of present keys, timing each kind apart.
func benchGetDeleted(b *testing.B, db *DB) {
	const n, round = rangeDelBenchN, 64
	var t [3]time.Duration
	keys := [3]func(i int) []byte{
		func(i int) []byte { return rangeDelKey(n/4 + int(scatter(uint64(i), n/2))) }, // deleted
		func(i int) []byte { // absent: between two present keys
			j := int(scatter(uint64(i), n/2))
			if j >= n/4 {
				j += n / 2
			}
			return append(rangeDelKey(j), 'x')
		},
		func(i int) []byte { // present
			j := int(scatter(uint64(i), n/2))
			if j >= n/4 {
				j += n / 2
			}
			return rangeDelKey(j)
		},
	}
	var misses int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for kind := range keys {
			t0 := time.Now()
			for j := 0; j < round; j++ {
				if _, err := db.Get(keys[kind](i*round + j)); err != nil && kind == 2 {
					b.Fatal(err)
				} else if err == nil && kind < 2 {
					misses++
				}
			}
			t[kind] += time.Since(t0)
		}
	}
	if misses > 0 {
		b.Fatalf("%d deleted or absent keys found", misses)
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*round) }
	b.ReportMetric(per(t[0]), "deleted-ns/get")
	b.ReportMetric(per(t[1]), "absent-ns/get")
	b.ReportMetric(per(t[2]), "present-ns/get")
	b.ReportMetric(per(t[0])/per(t[1]), "deleted/absent")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDeleteRangeInterleaved alternates a DeleteRange of 10 keys and
// a Get (of a key in the last range) on an in-memory database, so that
// every Get follows a change of the memtable's tombstones: the memtable
// scans the tombstones added since its fragmented list was built and
// rebuilds the list only every max(32, n/16) of them.
//
//	go test -run '^$' -bench BenchmarkDeleteRangeInterleaved .
func BenchmarkDeleteRangeInterleaved(b *testing.B) {
	db, err := Open("/db", &Options{FS: vfs.NewMem(), MemTableSize: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < b.N; i++ {
		j := (i * 10) % 10000000
		if err := db.DeleteRange(rangeDelKey(j), rangeDelKey(j+10), nil); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Get(rangeDelKey(j + 5)); err == nil {
			b.Fatal("deleted key found")
		}
	}
}
