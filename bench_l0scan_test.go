package sieve

import (
	"os"
	"sync"
	"testing"
)

// The L0-shaped read benchmarks share one database of benchReadN keys
// loaded in a scattered order with compaction out of reach (L0 trigger
// 100): the shape peerbench's -compact=false reads start on, a handful of
// whole-key-range L0 tables and a large memtable, without the background
// compaction that makes that shape drift during a run.
var (
	benchL0Once sync.Once
	benchL0     *DB
	benchL0Err  error
)

func benchL0DB(b *testing.B) *DB {
	benchL0Once.Do(func() {
		dir, err := os.MkdirTemp("", "sieve-bench-l0")
		if err != nil {
			benchL0Err = err
			return
		}
		o := benchReadOptions()
		o.L0CompactionTrigger, o.L0StopWritesTrigger = 100, 200
		if benchL0, benchL0Err = Open(dir, o); benchL0Err != nil {
			return
		}
		benchL0Err = loadBenchKeys(benchL0)
	})
	if benchL0Err != nil {
		b.Fatal(benchL0Err)
	}
	b.Logf("shape: %s", shapeLine(benchL0.Metrics()))
	return benchL0
}

// BenchmarkL0SeekRandom is peerbench's seekrandom on the L0-shaped
// database: one iterator, a seek and 10 more entries per op.
func BenchmarkL0SeekRandom(b *testing.B) { benchSeeks(b, benchL0DB(b)) }

// BenchmarkL0ShortScan is YCSB E's scan on the L0-shaped database: a new
// iterator, a seek and 50 entries, closed.
func BenchmarkL0ShortScan(b *testing.B) { benchShortScans(b, benchL0DB(b)) }
