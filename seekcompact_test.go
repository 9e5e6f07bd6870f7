package sieve

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

func seekTestKey(i int) []byte { return []byte(fmt.Sprintf("k%06d", i)) }

// seekShape loads n keys, compacts them to the bottom, then overwrites
// every third key in l0 flushed L0 tables (below the L0 trigger).
func seekShape(t *testing.T, n, l0 int) *DB {
	db, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 1 << 20, L0CompactionTrigger: 4})
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		require.NoError(t, db.Put(seekTestKey(i), []byte("v0"), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil))
	for r := 1; r <= l0; r++ {
		for i := r; i < n; i += 3 {
			require.NoError(t, db.Put(seekTestKey(i), []byte(fmt.Sprintf("v%d", r)), NoSync))
		}
		require.NoError(t, db.Flush())
	}
	return db
}

// TestSeekCompaction: iterator seeks into L0 tables that overlap the
// bottom level compact L0 once a table's seek budget runs out, with no
// write, and every key reads the same before and after.
func TestSeekCompaction(t *testing.T) {
	const n = 3000
	db := seekShape(t, n, 2)
	defer db.Close()
	want := map[string]string{}
	it := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		want[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Close())
	require.Len(t, want, n)
	m := db.Metrics()
	require.Equal(t, int64(2), m.Levels[0].NumFiles, "the shape: two L0 tables")
	require.Zero(t, m.Compaction.SeekTriggered)
	seeks := 0
	for i := 0; db.Metrics().Levels[0].NumFiles > 0; i++ {
		require.Less(t, i, 100000, "100,000 seeks compacted nothing")
		it := db.NewIter(nil)
		k := seekTestKey((i * 7919) % n)
		require.True(t, it.SeekGE(k))
		require.Equal(t, want[string(k)], string(it.Value()))
		require.NoError(t, it.Close())
		seeks++
		if i%50 == 0 {
			waitCompactionsIdle(db)
		}
	}
	m = db.Metrics()
	t.Logf("L0 compacted after %d seeks\n%s", seeks, m)
	require.GreaterOrEqual(t, seeks, 100, "compacted before any table's budget ran out")
	require.Positive(t, m.Compaction.SeekTriggered)
	require.Contains(t, m.String(), "seek-triggered")
	it = db.NewIter(nil)
	got := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, want[string(it.Key())], string(it.Value()), "key %s", it.Key())
		got++
	}
	require.NoError(t, it.Close())
	require.Equal(t, n, got)
}

// TestSeekCompactionDisabled: with DisableSeekCompactions the same seeks
// leave L0 as it is.
func TestSeekCompactionDisabled(t *testing.T) {
	const n = 3000
	db := seekShape(t, n, 2)
	defer db.Close()
	db.opts.DisableSeekCompactions = true
	for i := 0; i < 1000; i++ {
		it := db.NewIter(nil)
		require.True(t, it.SeekGE(seekTestKey((i*7919)%n)))
		require.NoError(t, it.Close())
	}
	waitCompactionsIdle(db)
	m := db.Metrics()
	require.Equal(t, int64(2), m.Levels[0].NumFiles)
	require.Zero(t, m.Compaction.SeekTriggered)
}

// TestSeekCompactionNeedsOverlap: seeks into an L0 table that is the only
// source at the key charge nothing, and neither do Gets it answers.
func TestSeekCompactionNeedsOverlap(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 1 << 20, L0CompactionTrigger: 4})
	require.NoError(t, err)
	defer db.Close()
	for i := 0; i < 1000; i++ {
		require.NoError(t, db.Put(seekTestKey(i), []byte("v"), NoSync))
	}
	require.NoError(t, db.Flush())
	for i := 0; i < 2000; i++ {
		it := db.NewIter(nil)
		require.True(t, it.SeekGE(seekTestKey(i%1000)))
		require.NoError(t, it.Close())
		_, err := db.Get(seekTestKey(i % 1000))
		require.NoError(t, err)
	}
	waitCompactionsIdle(db)
	m := db.Metrics()
	require.Equal(t, int64(1), m.Levels[0].NumFiles)
	require.Zero(t, m.Compaction.SeekTriggered)
}

// getUntilL0Compacted reads keys (via get, which checks each value) until
// L0 is empty, and returns how many reads that took.
func getUntilL0Compacted(t *testing.T, db *DB, keys [][]byte, get func(k [][]byte)) int {
	reads := 0
	for i := 0; db.Metrics().Levels[0].NumFiles > 0; i++ {
		require.Less(t, reads, 1000000, "a million reads compacted nothing")
		batch := keys[(i*16)%len(keys):]
		batch = batch[:min(16, len(batch))]
		get(batch)
		reads += len(batch)
		if i%50 == 0 {
			waitCompactionsIdle(db)
		}
	}
	return reads
}

// TestGetSeekCompaction: Gets that pass through both L0 tables to the
// bottom level charge them (one Get in getSeekWeight) until L0 is compacted,
// with no write; Gets answered by the newest L0 table charge nothing.
func TestGetSeekCompaction(t *testing.T) {
	const n = 3000
	db := seekShape(t, n, 2)
	defer db.Close()
	var inNewest, inBottom [][]byte
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 2:
			inNewest = append(inNewest, seekTestKey(i))
		case 0:
			inBottom = append(inBottom, seekTestKey(i))
		}
	}
	get := func(want string) func([][]byte) {
		return func(keys [][]byte) {
			for _, k := range keys {
				v, err := db.Get(k)
				require.NoError(t, err)
				require.Equal(t, want, string(v), "key %s", k)
			}
		}
	}
	for range 200 * getSeekWeight / len(inNewest) {
		get("v2")(inNewest)
	}
	waitCompactionsIdle(db)
	m := db.Metrics()
	require.Equal(t, int64(2), m.Levels[0].NumFiles, "Gets the newest L0 table answers charged it")
	require.Zero(t, m.Compaction.SeekTriggered)

	reads := getUntilL0Compacted(t, db, inBottom, get("v0"))
	m = db.Metrics()
	t.Logf("L0 compacted after %d Gets\n%s", reads, m)
	require.GreaterOrEqual(t, reads, 100*getSeekWeight/4, "compacted long before a table's budget (100 charged Gets) ran out")
	require.Positive(t, m.Compaction.SeekTriggered)
	get("v0")(inBottom)
	get("v2")(inNewest)
}

// seekShapeBottom is seekShape(3000 keys, 2 L0 tables) and the keys only
// the bottom level holds (every third): a Get of one passes through both
// L0 tables.
func seekShapeBottom(t *testing.T) (*DB, [][]byte) {
	const n = 3000
	db := seekShape(t, n, 2)
	var inBottom [][]byte
	for i := 0; i < n; i += 3 {
		inBottom = append(inBottom, seekTestKey(i))
	}
	return db, inBottom
}

// TestMultiGetSeekCompaction: MultiGet charges the first L0 table for each
// key of its range that goes on to another table, as Get does.
func TestMultiGetSeekCompaction(t *testing.T) {
	db, inBottom := seekShapeBottom(t)
	defer db.Close()
	reads := getUntilL0Compacted(t, db, inBottom, func(keys [][]byte) {
		vals, errs := db.MultiGet(keys)
		for i := range keys {
			require.NoError(t, errs[i])
			require.Equal(t, "v0", string(vals[i]), "key %s", keys[i])
		}
	})
	m := db.Metrics()
	t.Logf("L0 compacted after %d MultiGet keys", reads)
	require.GreaterOrEqual(t, reads, 100*getSeekWeight/4)
	require.Positive(t, m.Compaction.SeekTriggered)
}

// TestGetSeekCompactionWaitsUnderWrites: Gets that pass through the L0
// tables while as many writes land elsewhere do not compact L0 for them
// (the L0 trigger will), though they charge the tables many budgets' worth.
func TestGetSeekCompactionWaitsUnderWrites(t *testing.T) {
	db, inBottom := seekShapeBottom(t)
	defer db.Close()
	// Five budgets' worth of Gets, one write per two Gets (two thirds of
	// readMostlyRatio's reads a write) to keys above the tables' (a flush of them
	// adds an L0 table no Get consults).
	gets, writes := 5*100*getSeekWeight, 0
	for i := 0; i < gets; i++ {
		k := inBottom[i%len(inBottom)]
		v, err := db.Get(k)
		require.NoError(t, err)
		require.Equal(t, "v0", string(v), "key %s", k)
		if i%2 == 0 {
			// Outside every table's range: the Gets' path stays the same.
			require.NoError(t, db.Put([]byte(fmt.Sprintf("z%07d", i)), []byte("w"), NoSync))
			writes++
		}
	}
	waitCompactionsIdle(db)
	m := db.Metrics()
	var charged int64
	for _, f := range db.versions.Current().Levels(0)[0] {
		charged += f.Seeks.Load()
	}
	t.Logf("%d Gets beside %d writes: L0 tables charged %d seeks\n%s", gets, writes, charged, m)
	require.Zero(t, m.Compaction.SeekTriggered)
	require.Greater(t, charged, int64(2*100), "the Gets did not charge the L0 tables")
	require.GreaterOrEqual(t, m.Levels[0].NumFiles, int64(2), "L0 was compacted")
}

// TestGetSeekCompactionConcurrent: four goroutines Get and MultiGet keys
// that pass through both L0 tables (every value checked) while a writer
// adds keys above the tables' range and flushes once, so the charges,
// the budget's request and the compaction run beside reads and a flush
// (run with -race). L0's two tables must be compacted by the reads.
func TestGetSeekCompactionConcurrent(t *testing.T) {
	db, inBottom := seekShapeBottom(t)
	defer db.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !stop.Load(); i++ {
				if g == 0 {
					keys := inBottom[i%len(inBottom):]
					vals, kerrs := db.MultiGet(keys[:min(8, len(keys))])
					for j := range vals {
						if kerrs[j] != nil || string(vals[j]) != "v0" {
							errs <- fmt.Errorf("MultiGet %s: %q, %v", keys[j], vals[j], kerrs[j])
							return
						}
					}
					continue
				}
				k := inBottom[(i*7919)%len(inBottom)]
				if v, err := db.Get(k); err != nil || string(v) != "v0" {
					errs <- fmt.Errorf("Get %s: %q, %v", k, v, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200 && !stop.Load(); i++ {
			if err := db.Put([]byte(fmt.Sprintf("z%07d", i)), []byte("w"), NoSync); err != nil {
				errs <- err
				return
			}
			if i == 100 {
				if err := db.Flush(); err != nil {
					errs <- err
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for db.Metrics().Compaction.SeekTriggered == 0 && time.Now().Before(deadline) && len(errs) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitCompactionsIdle(db)
	m := db.Metrics()
	t.Logf("%s", m)
	require.Positive(t, m.Compaction.SeekTriggered, "the concurrent reads compacted nothing")
	for _, k := range inBottom {
		v, err := db.Get(k)
		require.NoError(t, err)
		require.Equal(t, "v0", string(v))
	}
}

// TestSeekTriggeredFlush: a memtable holding more than a quarter of
// MemTableSize beside the bottom level is rotated and flushed once
// iterator seeks that merge it outnumber the writes three to one over a
// window, and every key reads the same before and after; seeks with a
// write each leave it in place.
func TestSeekTriggeredFlush(t *testing.T) {
	const n = 20000
	open := func(t *testing.T) *DB {
		db, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 1 << 20})
		require.NoError(t, err)
		for i := 0; i < n; i++ {
			require.NoError(t, db.Put(seekTestKey(i), []byte("v0"), NoSync))
		}
		require.NoError(t, db.Compact(nil, nil))
		// About 570 KB into the memtable (a quarter of MemTableSize is
		// 262 KB): every fifth key, a value of 64 bytes, about 143 bytes
		// of B-tree and arena each.
		val := make([]byte, 64)
		for i := 0; i < n; i += 5 {
			copy(val, fmt.Sprintf("v1-%d", i))
			require.NoError(t, db.Put(seekTestKey(i), val, NoSync))
		}
		m := db.Metrics()
		require.GreaterOrEqual(t, m.MemTable.Size, int64(1<<20)/4, "the memtable must hold a quarter of MemTableSize")
		require.Zero(t, m.Flush.SeekTriggered)
		return db
	}
	seek := func(t *testing.T, db *DB, i int, want map[string]string) {
		it := db.NewIter(nil)
		k := seekTestKey((i * 7919) % n)
		require.True(t, it.SeekGE(k))
		require.Equal(t, want[string(k)], string(it.Value()))
		require.NoError(t, it.Close())
	}

	t.Run("read-mostly", func(t *testing.T) {
		db := open(t)
		defer db.Close()
		want := extScan(t, db)
		require.Len(t, want, n)
		i := 0
		for ; db.Metrics().Flush.SeekTriggered == 0; i++ {
			require.Less(t, i, 10*memSeekWindow, "no seek-triggered flush")
			seek(t, db, i, want)
			if i%100 == 0 { // a few writes, well under one per three seeks
				require.NoError(t, db.Put(seekTestKey(i%n), []byte(want[string(seekTestKey(i%n))]), NoSync))
			}
		}
		// The first window starts at the first seek and decides.
		require.GreaterOrEqual(t, i, memSeekWindow-1)
		require.Less(t, i, 2*memSeekWindow-1, "the first window must decide")
		require.NoError(t, db.Flush()) // waits for the rotated group's flush
		m := db.Metrics()
		require.Equal(t, int64(1), m.Flush.SeekTriggered)
		require.Less(t, m.MemTable.Size, int64(1<<20)/4)
		require.Equal(t, want, extScan(t, db))
	})

	t.Run("write-heavy", func(t *testing.T) {
		db := open(t)
		defer db.Close()
		want := extScan(t, db)
		for i := 0; i < 3*memSeekWindow; i++ {
			seek(t, db, i, want)
			k := seekTestKey(n + i) // one new key per seek
			require.NoError(t, db.Put(k, []byte("w"), NoSync))
			want[string(k)] = "w"
		}
		require.Zero(t, db.Metrics().Flush.SeekTriggered)
	})
}

// TestSeekTriggeredFlushRacesClose: readers seeking from several
// goroutines ask for the rotation while a writer writes and Close runs;
// Close must not deadlock with the rotation's goroutine (which takes the
// commit pipeline Close also takes), and the seeks and writes that race
// Close, ignored, must not panic.
func TestSeekTriggeredFlushRacesClose(t *testing.T) {
	for round := 0; round < 5; round++ {
		db, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 1 << 20})
		require.NoError(t, err)
		for i := 0; i < 4000; i++ {
			require.NoError(t, db.Put(seekTestKey(i), []byte("v0"), NoSync))
		}
		require.NoError(t, db.Compact(nil, nil))
		val := make([]byte, 64)
		for i := 0; i < 4000; i += 2 { // about 286 KB: over a quarter of MemTableSize
			require.NoError(t, db.Put(seekTestKey(i), val, NoSync))
		}
		require.GreaterOrEqual(t, db.Metrics().MemTable.Size, int64(1<<20)/4)
		var wg sync.WaitGroup
		var stop atomic.Bool
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; !stop.Load(); i += 4 {
					it := db.NewIter(nil)
					it.SeekGE(seekTestKey((i * 7919) % 4000))
					_ = it.Close()
					if g == 0 && i%400 == 0 {
						_ = db.Put(seekTestKey(i%4000), []byte("w"), NoSync)
					}
				}
			}()
		}
		deadline := time.Now().Add(5 * time.Second)
		for db.Metrics().Flush.SeekTriggered == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		require.NotZero(t, db.Metrics().Flush.SeekTriggered, "round %d: no seek-triggered flush", round)
		done := make(chan error, 1)
		go func() { done <- db.Close() }()
		select {
		case err := <-done:
			if err != nil {
				require.ErrorIs(t, err, ErrLeaked, "iterators racing Close may be open; nothing else may fail")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Close did not return")
		}
		stop.Store(true)
		wg.Wait()
	}
}
