package sieve

import (
	"math/rand/v2"
	"testing"
)

// The MultiGet benchmarks: one op is 64 random present keys of the 1M-key
// read databases (bench_read_test.go), looked up by one MultiGet or by 64
// Gets of the same keys. Compare ns/op (and cpu-ns/op) of a pair from one
// run:
//
//	go test -run '^$' -bench 'Benchmark(Steady)?(MultiGet|Get)64' -benchtime 3000x .
//
// The Clustered pair looks up 64 neighbouring present keys (a run from a
// random start), which share data blocks.
func BenchmarkMultiGet64(b *testing.B)          { benchMulti(b, benchReadDB(b), true, false) }
func BenchmarkGet64(b *testing.B)               { benchMulti(b, benchReadDB(b), false, false) }
func BenchmarkSteadyMultiGet64(b *testing.B)    { benchMulti(b, benchSteadyDB(b), true, false) }
func BenchmarkSteadyGet64(b *testing.B)         { benchMulti(b, benchSteadyDB(b), false, false) }
func BenchmarkMultiGet64Clustered(b *testing.B) { benchMulti(b, benchReadDB(b), true, true) }
func BenchmarkGet64Clustered(b *testing.B)      { benchMulti(b, benchReadDB(b), false, true) }

func benchMulti(b *testing.B, db *DB, multi, clustered bool) {
	rng := rand.New(rand.NewPCG(7, 8))
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = make([]byte, 16)
	}
	// Warm up: the first reads open the tables (index and filter blocks),
	// which whichever benchmark ran first would otherwise pay.
	for i := 0; i < 20000; i++ {
		db.Get(putBenchKey(keys[0], 2*rng.Uint64N(benchReadN)))
	}
	before := db.Metrics().PointLookups
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuTimer(b)()
	for i := 0; i < b.N; i++ {
		start := rng.Uint64N(benchReadN - uint64(len(keys)))
		for j, k := range keys {
			if clustered {
				putBenchKey(k, 2*(start+uint64(j)))
			} else {
				putBenchKey(k, 2*rng.Uint64N(benchReadN))
			}
		}
		if multi {
			_, errs := db.MultiGet(keys)
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			continue
		}
		for _, k := range keys {
			if _, err := db.Get(k); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	after := db.Metrics().PointLookups
	b.ReportMetric(float64(after.TablesProbed-before.TablesProbed)/float64(b.N), "tables/op")
	b.ReportMetric(float64(after.DataBlocksRead-before.DataBlocksRead)/float64(b.N), "blocks/op")
}
