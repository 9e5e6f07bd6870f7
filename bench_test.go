package sieve

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchKey writes a 16-byte key for i into buf.
func benchKey(buf []byte, i uint64) []byte {
	binary.BigEndian.PutUint64(buf[:8], i*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(buf[8:16], i)
	return buf[:16]
}

func openBench(b *testing.B, o *Options) *DB {
	b.Helper()
	db, err := Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkPut: NoSync puts of 16-byte keys and 100-byte values on the OS
// file system.
func BenchmarkPut(b *testing.B) {
	db := openBench(b, nil)
	key := make([]byte, 16)
	val := make([]byte, 100)
	rand.New(rand.NewSource(1)).Read(val)
	b.ReportAllocs()
	b.SetBytes(116)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := db.Put(benchKey(key, uint64(i)), val, NoSync); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetMemtable: point lookups of present keys served by the
// memtable.
func BenchmarkGetMemtable(b *testing.B) {
	db := openBench(b, &Options{MemTableSize: 256 << 20})
	const n = 100000
	key := make([]byte, 16)
	val := make([]byte, 100)
	for i := 0; i < n; i++ {
		if err := db.Put(benchKey(key, uint64(i)), val, NoSync); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Get(benchKey(key, uint64(i%n))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncWriters: Sync puts from 1, 4 and 16 concurrent writers;
// group commit shares one fsync among the writers waiting for it.
func BenchmarkSyncWriters(b *testing.B) {
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := openBench(b, nil)
			val := make([]byte, 100)
			var next atomic.Uint64
			b.ReportAllocs()
			start := time.Now()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := make([]byte, 16)
					for {
						i := next.Add(1)
						if i > uint64(b.N) {
							return
						}
						if err := db.Put(benchKey(key, i), val, Sync); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			m := db.Metrics()
			b.ReportMetric(float64(b.N)/float64(max(m.WAL.Syncs, 1)), "writes/fsync")
			// The share of the time the WAL was being fsynced (1: the
			// disk is the bottleneck) and the mean fsync.
			b.ReportMetric(float64(m.Commit.SyncTime)/float64(time.Since(start)), "fsync-busy")
			b.ReportMetric(float64(m.Commit.SyncTime.Microseconds())/float64(max(m.WAL.Syncs, 1)), "µs/fsync")
		})
	}
}

// BenchmarkFillRandomCompact loads b.N random 16-byte keys with 100-byte
// values (NoSync), then flushes and compacts everything: the peerbench
// fillrandom + flush+compact workload, for profiling.
func BenchmarkFillRandomCompact(b *testing.B) {
	db := openBench(b, nil)
	key := make([]byte, 16)
	val := make([]byte, 100)
	rng := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rng.Read(val[:50])
		if err := db.Put(benchKey(key, uint64(rng.Int63n(int64(b.N)*4))), val, NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	m := db.Metrics()
	b.ReportMetric(m.WriteAmp, "write-amp")
	b.ReportMetric(float64(m.Stall.Duration.Milliseconds()), "stall-ms")
	var sz int64
	for _, l := range m.Levels {
		sz += l.Size
	}
	b.ReportMetric(float64(sz)/(1<<20), "MiB")
}

// BenchmarkMergeVsPut: blind NoSync merge operands against NoSync puts of
// the same sizes (16-byte keys, 8-byte operands/values).
func BenchmarkMergeVsPut(b *testing.B) {
	for _, op := range []string{"put", "merge"} {
		b.Run(op, func(b *testing.B) {
			db := openBench(b, &Options{Merger: benchCounter{}})
			key := make([]byte, 16)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := benchKey(key, uint64(i%100000))
				var err error
				if op == "put" {
					err = db.Put(k, []byte("00000001"), NoSync)
				} else {
					err = db.Merge(k, []byte("00000001"), NoSync)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetMergeStack: Get of a key with 1, 10 and 100 stacked operands
// (memtable cap off), before and after Flush + Compact collapse them.
func BenchmarkGetMergeStack(b *testing.B) {
	for _, ops := range []int{1, 10, 100} {
		for _, phase := range []string{"memtable", "flushed", "compacted"} {
			b.Run(fmt.Sprintf("ops=%d/%s", ops, phase), func(b *testing.B) {
				db := openBench(b, &Options{Merger: benchCounter{}, MaxSuccessiveMerges: -1})
				k := []byte("stacked-key-0001")
				for i := 0; i < ops; i++ {
					if err := db.Merge(k, []byte("00000001"), NoSync); err != nil {
						b.Fatal(err)
					}
				}
				switch phase {
				case "flushed":
					if err := db.Flush(); err != nil {
						b.Fatal(err)
					}
				case "compacted":
					if err := db.Compact(nil, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := db.Get(k); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchCounter adds fixed-width decimal counters; cheap enough not to
// dominate the measurements.
type benchCounter struct{}

func (benchCounter) Name() string { return "bench.counter" }

func (benchCounter) FullMerge(_, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	var sum uint64
	parse := func(b []byte) {
		var v uint64
		for _, c := range b {
			v = v*10 + uint64(c-'0')
		}
		sum += v
	}
	if hasBase {
		parse(base)
	}
	for _, op := range ops {
		parse(op)
	}
	return []byte(fmt.Sprintf("%08d", sum)), nil
}

func (m benchCounter) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	v, _ := m.FullMerge(key, nil, false, ops)
	return v, true
}

// BenchmarkCompactUpdates: the compaction YCSB's E pays for A-D's writes.
// 1M keys (16-byte, 100-byte half-compressible values) lie compacted in
// L6; each iteration writes 200k updates of scattered keys into the
// memtable, then flushes and compacts them into L6 (the whole level is
// rewritten). compact-cpu-ms/op is the process CPU of the flush and
// compaction (the puts excluded).
func BenchmarkCompactUpdates(b *testing.B) {
	db := openBench(b, &Options{DisableSeekCompactions: true})
	key := make([]byte, 16)
	val := make([]byte, 100)
	rng := rand.New(rand.NewSource(1))
	const n = 1_000_000
	for i := uint64(0); i < n; i++ {
		rng.Read(val[:50])
		copy(val[50:], val[:50])
		if err := db.Put(benchKey(key, scatter(i, n)), val, NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := 0; j < 200_000; j++ {
			rng.Read(val[:50])
			copy(val[50:], val[:50])
			if err := db.Put(benchKey(key, uint64(rng.Int63n(n))), val, NoSync); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := processCPU()
		if err := db.Compact(nil, nil); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - start
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "compact-cpu-ms/op")
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
