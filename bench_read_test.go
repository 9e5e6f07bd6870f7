package sieve

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The read benchmarks share one database of benchReadN keys ("key%013d" of
// even numbers scattered, as peerbench does), built once per process in a
// temporary directory, flushed and compacted.
const benchReadN = 1000000

var (
	benchReadOnce sync.Once
	benchReadDir  string
	benchReadErr  error
)

func putBenchKey(dst []byte, n uint64) []byte {
	copy(dst, "key")
	for i := 15; i >= 3; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
	return dst[:16]
}

// scatter maps i to a pseudo-random position in [0, n) (an affine bijection).
func scatter(i, n uint64) uint64 { return (i*2654435761 + 12345) % n }

func benchReadDB(b *testing.B) *DB {
	benchReadOnce.Do(func() {
		// SIEVE_BENCH_DIR keeps the database between runs (profiling
		// the reads alone); it is built there if missing.
		if dir := os.Getenv("SIEVE_BENCH_DIR"); dir != "" {
			benchReadDir = dir
			if _, err := os.Stat(filepath.Join(dir, "db", "CURRENT")); err == nil {
				return
			}
		} else {
			benchReadDir, benchReadErr = os.MkdirTemp("", "sieve-bench-read")
			if benchReadErr != nil {
				return
			}
		}
		db, err := buildCompactedBenchDB(filepath.Join(benchReadDir, "db"))
		if err != nil {
			benchReadErr = err
			return
		}
		benchReadErr = db.Close()
	})
	if benchReadErr != nil {
		b.Fatal(benchReadErr)
	}
	db, err := Open(filepath.Join(benchReadDir, "db"), benchReadOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// buildCompactedBenchDB opens a new database in dir with benchReadOptions,
// loads the benchReadN keys, flushes and compacts them into one level, and
// returns it open.
func buildCompactedBenchDB(dir string) (*DB, error) {
	db, err := Open(dir, benchReadOptions())
	if err != nil {
		return nil, err
	}
	err = loadBenchKeys(db)
	if err == nil {
		err = db.Flush()
	}
	if err == nil {
		err = db.Compact(nil, nil)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// loadBenchKeys puts the benchReadN keys (the even numbers 2i, in a
// scattered order) with benchValues.
func loadBenchKeys(db *DB) error {
	key := make([]byte, 16)
	vals := benchValues()
	for i := uint64(0); i < benchReadN; i++ {
		if err := db.Put(putBenchKey(key, 2*scatter(i, benchReadN)), vals[i%uint64(len(vals))], NoSync); err != nil {
			return err
		}
	}
	return nil
}

// benchReadOptions are peerbench's: an 8 MiB block cache (and the default
// Bloom(10) filters). SIEVE_BENCH_BLOCK_SIZE overrides the block size (for
// experiments; use a fresh SIEVE_BENCH_DIR).
func benchReadOptions() *Options {
	o := &Options{BlockCacheSize: 8 << 20}
	if n, err := strconv.Atoi(os.Getenv("SIEVE_BENCH_BLOCK_SIZE")); err == nil {
		o.BlockSize = n
	}
	return o
}

// benchValues returns the values the read benchmarks load, shaped as
// peerbench's (and LevelDB db_bench's): 100 bytes, 50 random printable
// bytes twice, so blocks compress about 2:1 as they do there.
func benchValues() [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([][]byte, 10000)
	for i := range vals {
		v := make([]byte, 100)
		for j := 0; j < 50; j++ {
			v[j] = byte(' ' + rng.IntN(95))
		}
		copy(v[50:], v[:50])
		vals[i] = v
	}
	return vals
}

// cpuTimer reports process CPU time per op, which holds up on a busy
// machine where wall time does not.
func cpuTimer(b *testing.B) func() {
	start := processCPU()
	return func() {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkReadRandom(b *testing.B)  { benchGets(b, benchReadDB(b), 0) }
func BenchmarkReadMissing(b *testing.B) { benchGets(b, benchReadDB(b), 1) }

// benchGets Gets b.N scattered keys 2i+odd: present keys (odd 0) or the
// absent ones between them (odd 1).
func benchGets(b *testing.B, db *DB, odd uint64) {
	key := make([]byte, 16)
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuTimer(b)()
	for i := 0; i < b.N; i++ {
		_, err := db.Get(putBenchKey(key, 2*scatter(uint64(i)*7919, benchReadN)+odd))
		if (odd == 0 && err != nil) || (odd == 1 && err != ErrNotFound) {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadRandomParallel is ReadRandom from GOMAXPROCS goroutines on
// the compacted database: -cpu=1,2 gives peers scaling's 2 readers ÷ 1
// in-process.
func BenchmarkReadRandomParallel(b *testing.B) { benchGetsParallel(b, benchReadDB(b)) }

// BenchmarkReadRandomParallelTwoDBs is ReadRandomParallel with its
// goroutines split over two open instances of the same data: the shared
// database and a checkpoint of it (hard links, so the page cache holds
// one copy of the tables). Nothing a DB instance keeps (its read state,
// table cache entries, block cache, metrics) is shared between the two
// halves, so at -cpu=2 it is the ceiling ReadRandomParallel's 2-CPU
// throughput would reach if no state of one instance were written by
// both readers; the machine's own part of the loss is in both.
func BenchmarkReadRandomParallelTwoDBs(b *testing.B) {
	db := benchReadDB(b)
	dir := filepath.Join(b.TempDir(), "twin")
	if err := db.Checkpoint(dir); err != nil {
		b.Fatal(err)
	}
	twin, err := Open(dir, benchReadOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer twin.Close()
	// The twin's tables open and its block cache fills here, not inside
	// the measurement (as the shared database's did in earlier runs).
	key := make([]byte, 16)
	for i := uint64(0); i < 20000; i++ {
		if _, err := twin.Get(putBenchKey(key, 2*scatter(i*7919, benchReadN))); err != nil {
			b.Fatal(err)
		}
	}
	benchGetsParallelOn(b, db, twin)
}

// benchGetsParallel Gets present keys from GOMAXPROCS goroutines, each
// walking its own scattered key sequence: no counter shared between them,
// which would be a contended cache line per Get.
func benchGetsParallel(b *testing.B, db *DB) { benchGetsParallelOn(b, db) }

// benchGetsParallelOn is benchGetsParallel with worker w reading dbs[w %
// len(dbs)].
func benchGetsParallelOn(b *testing.B, dbs ...*DB) {
	var worker atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuTimer(b)()
	b.RunParallel(func(pb *testing.PB) {
		key := make([]byte, 16)
		w := worker.Add(1)
		db := dbs[w%uint64(len(dbs))]
		i := w << 40
		for pb.Next() {
			i++
			if _, err := db.Get(putBenchKey(key, 2*scatter(i*7919, benchReadN))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkSeekRandom(b *testing.B) { benchSeeks(b, benchReadDB(b)) }

// benchSeeks is peerbench's seekrandom on db: one iterator, a seek and 10
// more entries per op.
func benchSeeks(b *testing.B, db *DB) {
	key := make([]byte, 16)
	it := db.NewIter(nil)
	defer it.Close()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuTimer(b)()
	for i := 0; i < b.N; i++ {
		if !it.SeekGE(putBenchKey(key, 2*scatter(uint64(i)*7919, benchReadN))) {
			b.Fatal("seek ran off the end", it.Error())
		}
		// peerbench's seekrandom: the seek and 10 more entries.
		for j := 0; j < 10 && it.Next(); j++ {
			_ = it.Value()
		}
	}
}

// BenchmarkScan is a forward scan of the whole database, wrapping around;
// an op is one Next.
func BenchmarkScan(b *testing.B) {
	db := benchReadDB(b)
	it := db.NewIter(nil)
	defer it.Close()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuTimer(b)()
	ok := it.First()
	for i := 0; i < b.N; i++ {
		if !ok {
			if err := it.Error(); err != nil {
				b.Fatal(err)
			}
			ok = it.First()
		}
		_ = it.Value()
		ok = it.Next()
	}
}

// The steady-state read benchmarks share one database of benchReadN keys
// loaded in a scattered order and left as the load left it — memtables, L0
// tables and whatever compactions ran during the load — kept open for the
// process (a reopen would flush the memtables).
var (
	benchSteadyOnce sync.Once
	benchSteady     *DB
	benchSteadyErr  error
)

func benchSteadyDB(b *testing.B) *DB {
	benchSteadyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sieve-bench-steady")
		if err != nil {
			benchSteadyErr = err
			return
		}
		db, err := Open(dir, benchReadOptions())
		if err != nil {
			benchSteadyErr = err
			return
		}
		if benchSteadyErr = loadBenchKeys(db); benchSteadyErr != nil {
			return
		}
		// Let the compactions the load started finish, so every
		// benchmark reads the same shape.
		for last, still := "", 0; still < 20 && benchSteadyErr == nil; time.Sleep(100 * time.Millisecond) {
			m := db.Metrics()
			shape := fmt.Sprintf("%s %d %d", shapeLine(m), m.Compaction.Count, m.Flush.Count)
			if shape == last {
				still++
			} else {
				last, still = shape, 0
			}
		}
		benchSteady = db
	})
	if benchSteadyErr != nil {
		b.Fatal(benchSteadyErr)
	}
	b.Logf("shape: %s", shapeLine(benchSteady.Metrics()))
	return benchSteady
}

func shapeLine(m *Metrics) string {
	s := fmt.Sprintf("memtable %d B, %d immutable;", m.MemTable.Size, m.MemTable.Immutable)
	for i, l := range m.Levels {
		if l.NumFiles > 0 {
			s += fmt.Sprintf(" L%d:%d", i, l.NumFiles)
		}
	}
	return s
}

func BenchmarkSteadyReadRandom(b *testing.B)  { benchGets(b, benchSteadyDB(b), 0) }
func BenchmarkSteadyReadMissing(b *testing.B) { benchGets(b, benchSteadyDB(b), 1) }

// BenchmarkSteadyReadRandomParallel is SteadyReadRandom from GOMAXPROCS
// goroutines (-cpu=1,2 gives the read scaling).
func BenchmarkSteadyReadRandomParallel(b *testing.B) { benchGetsParallel(b, benchSteadyDB(b)) }

// BenchmarkShortScan is YCSB E's scan (a new iterator, a seek and 50
// entries, closed) on the compacted database: most of its data blocks miss
// the 8 MiB cache.
func BenchmarkShortScan(b *testing.B) { benchShortScans(b, benchReadDB(b)) }

// BenchmarkSteadyShortScan is YCSB E's scan: a new iterator, a seek and
// 50 entries, closed.
func BenchmarkSteadyShortScan(b *testing.B) { benchShortScans(b, benchSteadyDB(b)) }

// benchShortScans is YCSB E's scan on db: a new iterator, a seek and 50
// entries, closed.
func benchShortScans(b *testing.B, db *DB) {
	key := make([]byte, 16)
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuTimer(b)()
	for i := 0; i < b.N; i++ {
		it := db.NewIter(nil)
		ok := it.SeekGE(putBenchKey(key, 2*scatter(uint64(i)*7919, benchReadN)))
		for j := 0; ok && j < 50; j++ {
			_ = it.Value()
			ok = it.Next()
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSteadySeekRandom is peerbench's seekrandom on the steady-state
// database.
func BenchmarkSteadySeekRandom(b *testing.B) { benchSeeks(b, benchSteadyDB(b)) }

// compactedScanDB opens a database with a 64 MiB block cache holding keys
// putBenchKey(2i) for i < n (benchValues' values), compacted into L6; it
// is closed when b ends.
func compactedScanDB(b *testing.B, n uint64) (*DB, [][]byte) {
	db := openBench(b, &Options{BlockCacheSize: 64 << 20})
	vals := benchValues()
	key := make([]byte, 16)
	for i := uint64(0); i < n; i++ {
		if err := db.Put(putBenchKey(key, 2*i), vals[i%uint64(len(vals))], NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		b.Fatal(err)
	}
	return db, vals
}

// BenchmarkCachedShortScan is YCSB E's scan (a new iterator, a seek and
// entries=N entries, closed) on data the block cache holds whole: 100k
// keys compacted, a fifth of them updated since in the memtable. What is
// left is the iterator stack's own cost and the CPU-cache misses of
// reading cached blocks and memtable entries; entries=1 is a scan's fixed
// cost, the slope to entries=200 the cost of an entry.
func BenchmarkCachedShortScan(b *testing.B) {
	const n = 100000
	db, vals := compactedScanDB(b, n)
	key := make([]byte, 16)
	for i := uint64(0); i < n/5; i++ {
		if err := db.Put(putBenchKey(key, 2*scatter(i, n)), vals[(i+7)%uint64(len(vals))], NoSync); err != nil {
			b.Fatal(err)
		}
	}
	scan := func(b *testing.B, i, entries int) {
		it := db.NewIter(nil)
		ok := it.SeekGE(putBenchKey(key, 2*scatter(uint64(i)*7919, n)))
		for j := 0; ok && j < entries; j++ {
			_ = it.Value()
			ok = it.Next()
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 20000; i++ { // every block into the cache
		scan(b, i, 50)
	}
	for _, entries := range []int{1, 50, 200} {
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) {
			b.ReportAllocs()
			defer cpuTimer(b)()
			for i := 0; i < b.N; i++ {
				scan(b, i, entries)
			}
		})
	}
}

// BenchmarkScanL6: scans of 1 and 1000 entries, each with a new iterator,
// over 100k keys compacted into L6 with an empty memtable and every block
// cached: the fixed cost of NewIter, SeekGE and Close (entries=1) and the
// cost of an entry of one level (entries=1000).
func BenchmarkScanL6(b *testing.B) {
	const n = 100000
	db, _ := compactedScanDB(b, n)
	key := make([]byte, 16)
	for _, entries := range []int{1, 1000} {
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				it := db.NewIter(nil)
				ok := it.SeekGE(putBenchKey(key, 2*scatter(uint64(i)*7919, n-2000)))
				for j := 0; ok && j < entries; j++ {
					_ = it.Value()
					ok = it.Next()
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
