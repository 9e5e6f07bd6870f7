package sieve

import (
	"fmt"
	stdmaps "maps"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestStressCopyIngestIterators: copy-path Ingests (keys at sequence
// number 0, no snapshot open) while readers hold iterators open across
// them and writers make flushes and compactions, so that held iterators
// are refreshed onto new read states. Every ingest table n holds keys
// z<n>-00..z<n>-09, above every earlier one, so each takes the copy path.
// An iterator's view is the moment it was made: its first scan holds the
// ingests 1..m (each whole) with m between the ingests acknowledged before
// it was made and one past those acknowledged after, and every later scan
// (First, SeekGE) of the same iterator returns exactly its first. make
// stress runs the long form (SIEVE_STRESS_LONG=1).
func TestStressCopyIngestIterators(t *testing.T) {
	d := 3 * time.Second
	if os.Getenv("SIEVE_STRESS_LONG") != "" || relLong() {
		d = 60 * time.Second
	} else if testing.Short() {
		d = time.Second
	}
	seed := uint64(testutil.Seed(t))
	fs := vfs.NewMem()
	db := openDB(t, &Options{FS: fs, MemTableSize: 64 << 10, TargetFileSize: 16 << 10, BlockSize: 1 << 10, L0CompactionTrigger: 2, LBaseMaxBytes: 128 << 10})
	require.NoError(t, fs.MkdirAll("ext", 0o755))
	var acked atomic.Int64 // ingests whose Ingest returned
	var scans, rescans, crossed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	fail := func(format string, args ...any) { t.Errorf("seed %d: "+format, append([]any{seed}, args...)...) }
	for w := 0; w < 2; w++ { // writers below the ingest keys: flushes, compactions
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for i := 0; !stopped(stop); i++ {
				if err := db.Put(fmt.Appendf(nil, "a%05d", rng.IntN(5000)), fmt.Appendf(nil, "w%d", i), nil); err != nil {
					fail("Put: %v", err)
					return
				}
			}
		})
	}
	wg.Go(func() { // the ingester
		for n := int64(1); !stopped(stop); n++ {
			path := fmt.Sprintf("ext/%d.sst", n)
			w, err := NewExternalTableWriter(path, &Options{FS: fs, BlockSize: 512})
			require.NoError(t, err)
			for i := 0; i < 10; i++ {
				require.NoError(t, w.Set(fmt.Appendf(nil, "z%06d-%02d", n, i), fmt.Appendf(nil, "v%d", n)))
			}
			require.NoError(t, w.Close())
			if err := db.Ingest([]string{path}); err != nil {
				fail("Ingest %d: %v", n, err)
				return
			}
			acked.Store(n)
			time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		}
	})
	for r := 0; r < 4; r++ {
		rng := rand.New(rand.NewPCG(seed, uint64(100+r)))
		wg.Go(func() { copyIngestReader(db, rng, stop, &acked, &scans, &rescans, &crossed, fail) })
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	// What a short run (the race detector's) may not reach: an iterator
	// re-seeked after a flush of what it sees (nothing written since)
	// refreshes onto the new table.
	require.NoError(t, db.Put([]byte("a99999"), []byte("x"), nil))
	it := db.NewIter(nil)
	require.True(t, it.First())
	require.NoError(t, db.Flush())
	it.SeekGE([]byte("a"))
	require.NoError(t, it.Close())
	m := db.Metrics()
	t.Logf("copy-ingest stress: %d Ingests (%d by copy), %d flushes, %d compactions, %d iterator refreshes; %d iterators scanned, %d rescans of held iterators, %d of them after an Ingest the iterator must not see",
		m.Ingest.Count, m.Ingest.Copied, m.Flush.Count, m.Compaction.Count, m.IteratorRefreshes, scans.Load(), rescans.Load(), crossed.Load())
	require.Positive(t, m.Ingest.Copied, "no Ingest took the copy path")
	require.Positive(t, crossed.Load(), "no held iterator was rescanned across an Ingest")
	require.Positive(t, m.IteratorRefreshes, "no iterator was refreshed")
}

// copyIngestReader makes iterators over the ingested keys, checks that
// each sees a whole prefix of the acknowledged ingests, and rescans each
// while later ingests land: a held iterator's view never changes.
func copyIngestReader(db *DB, rng *rand.Rand, stop chan struct{}, acked, scans, rescans, crossed *atomic.Int64, fail func(string, ...any)) {
	for !stopped(stop) {
		before := acked.Load()
		it := db.NewIter(&IterOptions{LowerBound: []byte("z"), UpperBound: []byte("{")})
		after := acked.Load()
		first := scanIngested(it, nil)
		scans.Add(1)
		if m, ok := wholePrefix(first); !ok || int64(m) < before || int64(m) > after+1 {
			fail("iterator made between ingests %d and %d sees %d tables (whole: %v)", before, after, m, ok)
		}
		for k := 0; k < 1+rng.IntN(4); k++ {
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			var seek []byte
			if rng.IntN(2) == 0 {
				seek = fmt.Appendf(nil, "z%06d", 1+rng.Int64N(acked.Load()+1))
			}
			again := scanIngested(it, seek)
			want := stdmaps.Clone(first)
			if seek != nil {
				stdmaps.DeleteFunc(want, func(k string, _ string) bool { return k < string(seek) })
			}
			if !stdmaps.Equal(want, again) {
				fail("a held iterator's scan changed: %d keys, then %d (ingests acknowledged %d → %d)", len(first), len(again), after, acked.Load())
			}
			rescans.Add(1)
			if acked.Load() > after {
				crossed.Add(1)
			}
		}
		if err := it.Close(); err != nil {
			fail("iterator: %v", err)
		}
	}
}

func stopped(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// scanIngested scans it from First (or SeekGE(seek)) into a map.
func scanIngested(it *Iterator, seek []byte) map[string]string {
	out := map[string]string{}
	ok := it.First()
	if seek != nil {
		ok = it.SeekGE(seek)
	}
	for ; ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	return out
}

// wholePrefix reports the number of ingest tables in a scan and whether
// they are exactly tables 1..m, each with its ten keys.
func wholePrefix(scan map[string]string) (int, bool) {
	if len(scan)%10 != 0 {
		return len(scan) / 10, false
	}
	m := len(scan) / 10
	for n := 1; n <= m; n++ {
		for i := 0; i < 10; i++ {
			if scan[fmt.Sprintf("z%06d-%02d", n, i)] != fmt.Sprintf("v%d", n) {
				return m, false
			}
		}
	}
	return m, true
}
