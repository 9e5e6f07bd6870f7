package sketchcol

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/vfs"
)

// Benchmarks of the Store (issue 7). Each compares variants in one run:
// go test -run '^$' -bench 'Store' -count 5 ./sketchcol/ and quote medians
// and ratios. The DB is on disk (b.TempDir) with the Store's default
// NoSync writes, unless a benchmark says otherwise.

func benchStore(b *testing.B, dbOpts *sieve.Options) *Store {
	b.Helper()
	var opts sieve.Options
	if dbOpts != nil {
		opts = *dbOpts
	}
	dir := b.TempDir()
	if opts.FS != nil {
		dir = "/db"
	}
	db, err := sieve.Open(dir, &opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	s, err := Open(db)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkStorePFAdd: PFADD of 16 elements to one hot key — blind (one
// operand per call; and 64 calls per Batch, the counterpart of Redis's
// pipelining), with the reply (reply-uncached: a read, which merges the key's
// operands, then the operand; reply: from the cached registers, hll_cache.go), and redis-server over loopback pipelined 64 deep.
// ns/op is per PFADD of 16 elements; elems/s is the throughput.
func BenchmarkStorePFAdd(b *testing.B) {
	const batch = 16
	elems := benchElems(1 << 16)
	next := func(i int) [][]byte {
		o := (i * batch) & (1<<16 - 1)
		return elems[o : o+batch]
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "elems/s")
	}
	b.Run("blind", func(b *testing.B) {
		s := benchStore(b, nil)
		i := 0
		for b.Loop() {
			if err := s.PFAddBlind([]byte("bench"), next(i)...); err != nil {
				b.Fatal(err)
			}
			i++
		}
		report(b)
	})
	b.Run("blind-batch64", func(b *testing.B) {
		s := benchStore(b, nil)
		i := 0
		for n := 0; n < b.N; n += 64 {
			bt := s.NewBatch()
			for range 64 {
				if err := bt.PFAdd([]byte("bench"), next(i)...); err != nil {
					b.Fatal(err)
				}
				i++
			}
			if err := bt.Commit(nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(i*batch)/b.Elapsed().Seconds(), "elems/s")
	})
	for _, cached := range []bool{false, true} {
		name := "reply-uncached"
		if cached {
			name = "reply"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, nil)
			if !cached {
				s.disableCache()
			}
			i := 0
			for b.Loop() {
				if _, err := s.PFAdd([]byte("bench"), next(i)...); err != nil {
					b.Fatal(err)
				}
				i++
			}
			report(b)
		})
	}
	b.Run("reply-deferred16", func(b *testing.B) {
		// 16 reply-bearing PFAdds per commit, as sieve-server writes a
		// pipeline of 16.
		s := benchStore(b, nil)
		i := 0
		for n := 0; n < b.N; n += 16 {
			d := s.NewDeferred(s.db.NewBatch())
			for range 16 {
				if _, _, err := d.PFAdd([]byte("bench"), next(i)...); err != nil {
					b.Fatal(err)
				}
				i++
			}
			if err := d.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(i*batch)/b.Elapsed().Seconds(), "elems/s")
	})
	b.Run("redis-pipelined64", benchRedisPFADD)
}

// BenchmarkStorePFCount: PFCOUNT of one key holding n elements — after
// compaction (one stored value with a valid cache: the answer is read
// from the header), as a stale-cache value written around the Store (the
// estimate is computed on each count, never written back), and as a
// compacted value with 16 PFADD operands on top in the memtable (the
// read merges them, computing the estimate).
func BenchmarkStorePFCount(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		enc := "sparse"
		if n > 5000 {
			enc = "dense"
		}
		s := benchStore(b, nil)
		key := []byte("k")
		elems := benchElems(n)
		for i := 0; i < n; i += 1000 {
			if err := s.PFAddBlind(key, elems[i:min(i+1000, n)]...); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.ColumnFamily().Compact(nil, nil); err != nil {
			b.Fatal(err)
		}
		v, err := s.Dump(key)
		if err != nil {
			b.Fatal(err)
		}
		stale := append([]byte(nil), v...)
		stale[15] |= hllCardInvalid
		if err := s.ColumnFamily().Put([]byte("stale"), stale, nil); err != nil {
			b.Fatal(err)
		}
		if err := s.Restore([]byte("ops"), v); err != nil {
			b.Fatal(err)
		}
		for i := range 16 {
			if err := s.PFAddBlind([]byte("ops"), fmt.Appendf(nil, "more:%d", i)); err != nil {
				b.Fatal(err)
			}
		}
		for _, tc := range []struct{ name, key string }{
			{"cached", "k"}, {"stale-cache", "stale"}, {"16-operands", "ops"},
		} {
			b.Run(enc+"/"+tc.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := s.PFCount([]byte(tc.key)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStoreBFAdd: BF.ADD of one new item to a filter reserved for
// capacity items at 1% — blind, and with the reply (a read of the whole
// filter, merging its operands, then the operand). ns/op is per item.
// Every 10,000 items go to a new key, so that the filters keep their size
// (1.2 KB or 120 KB) however long the benchmark runs: the engine keeps a
// collapsed copy of a hot key's value in the memtable every 64 operands
// (MaxSuccessiveMerges), and a filter scaled by millions of adds would
// make those copies huge (they are flushed too, and counted in ns/op).
func BenchmarkStoreBFAdd(b *testing.B) {
	const perKey = 10_000
	items := benchElems(1 << 20)
	for _, capacity := range []int64{1000, 100000} {
		for _, mode := range []string{"blind", "reply-uncached", "reply"} {
			b.Run(fmt.Sprintf("cap=%d/%s", capacity, mode), func(b *testing.B) {
				s := benchStore(b, nil)
				if mode == "reply-uncached" {
					s.disableCache()
				}
				var key []byte
				i := 0
				for b.Loop() {
					if i%perKey == 0 {
						key = fmt.Appendf(nil, "bf%d", i/perKey)
						if err := s.BFReserve(key, 0.01, capacity, nil); err != nil {
							b.Fatal(err)
						}
					}
					it := items[i&(1<<20-1)]
					var err error
					if mode == "blind" {
						err = s.BFAddBlind(key, it)
					} else {
						_, err = s.BFAdd(key, it)
					}
					if err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
			})
		}
	}
}

// BenchmarkStoreCompact: a Compact of the sketch column family over 1000
// keys of one kind, each with 16 operands stacked across 16 L0 tables
// (HLL: 16 PFADDs of 16 elements; Bloom: 16 BF.MADDs of 16 items into a
// filter for 1000; cuckoo: 16 CF.ADDs of 16 items into one for 1024).
// Reports keys/s and the compaction's input MB/s.
func BenchmarkStoreCompact(b *testing.B) {
	const keys, layers, per = 1000, 16, 16
	for _, kind := range []string{"hll", "bloom", "cuckoo"} {
		b.Run(kind, func(b *testing.B) {
			var read int64
			for range b.N {
				b.StopTimer()
				s := benchStore(b, &sieve.Options{FS: vfs.NewMem(), L0CompactionTrigger: 1000, L0StopWritesTrigger: 1000})
				if kind == "bloom" {
					for k := range keys {
						if err := s.BFReserve(fmt.Appendf(nil, "key%04d", k), 0.01, 1000, nil); err != nil {
							b.Fatal(err)
						}
					}
				}
				for l := range layers {
					bt := s.NewBatch()
					for k := range keys {
						key := fmt.Appendf(nil, "key%04d", k)
						its := make([][]byte, per)
						for j := range its {
							its[j] = fmt.Appendf(nil, "%d:%d:%d", k, l, j)
						}
						var err error
						switch kind {
						case "hll":
							err = bt.PFAdd(key, its...)
						case "bloom":
							err = bt.BFAdd(key, its...)
						default:
							err = bt.CFAdd(key, its...)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					if err := bt.Commit(nil); err != nil {
						b.Fatal(err)
					}
					if err := s.db.Flush(); err != nil {
						b.Fatal(err)
					}
				}
				before := s.ColumnFamily().Metrics().Compaction.BytesRead
				b.StartTimer()
				if err := s.ColumnFamily().Compact(nil, nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				read += s.ColumnFamily().Metrics().Compaction.BytesRead - before
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*keys)/b.Elapsed().Seconds(), "keys/s")
			b.ReportMetric(float64(read)/1e6/b.Elapsed().Seconds(), "MB/s")
		})
	}
}
