package sieve

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestIterAllocReuse builds iterators one after another over a database
// whose shape changes (memtable, many L0 tables, deeper levels), with
// random bounds, so that recycled stacks (iterAlloc) are reused with other
// shapes and bounds; each scan is checked against the model. Shapes
// beyond the inline capacity (more children than iterAlloc.children, more
// level iterators than iterAlloc.levels) are reached and counted, as is
// reuse of a recycled stack. After Close an iterator answers nothing.
func TestIterAllocReuse(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	db := openDB(t, &Options{FS: vfs.NewMem(), L0CompactionTrigger: 100, L0StopWritesTrigger: 200, DisableSeekCompactions: true})
	model := map[string]string{}
	seen := map[*iterAlloc]bool{}
	var reused, overflow int
	for round := 0; round < 40; round++ {
		for i := 0; i < 50; i++ {
			k, v := fmt.Sprintf("k%04d", rng.Intn(2000)), fmt.Sprintf("v%d.%d", round, i)
			require.NoError(t, db.Put([]byte(k), []byte(v), NoSync))
			model[k] = v
		}
		if round%2 == 0 {
			require.NoError(t, db.Flush())
		}
		if round == 30 {
			require.NoError(t, db.Compact(nil, nil))
		}
		for q := 0; q < 10; q++ {
			lo, hi := fmt.Sprintf("k%04d", rng.Intn(2100)), fmt.Sprintf("k%04d", rng.Intn(2100))
			if lo > hi {
				lo, hi = hi, lo
			}
			it := db.NewIter(&IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)})
			if seen[it.alloc] {
				reused++
			}
			seen[it.alloc] = true
			if sources(db.Metrics()) > len(it.alloc.children) {
				overflow++
			}
			checkPooledScan(t, it, model, lo, hi)
			require.NoError(t, it.Close())
			require.False(t, it.SeekGE([]byte(lo)))
			require.False(t, it.Valid())
			require.Nil(t, it.Key())
		}
	}
	t.Logf("recycled stacks reused %d times, %d iterators over more children than the inline array", reused, overflow)
	require.NotZero(t, reused)
	require.NotZero(t, overflow)
}

// checkPooledScan compares a forward scan, a backward scan and a seek of it
// (bounded to [lo, hi)) with the model.
func checkPooledScan(t *testing.T, it *Iterator, model map[string]string, lo, hi string) {
	t.Helper()
	var want []string
	for k, v := range model {
		if k >= lo && k < hi {
			want = append(want, k+"="+v)
		}
	}
	sort.Strings(want)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Error())
	require.Equal(t, want, got, "forward [%s,%s)", lo, hi)
	got = nil
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
		got[i], got[j] = got[j], got[i]
	}
	require.Equal(t, want, got, "backward [%s,%s)", lo, hi)
	if len(want) > 0 {
		k := want[len(want)/2]
		k = k[:bytes.IndexByte([]byte(k), '=')]
		require.True(t, it.SeekGE([]byte(k)))
		require.Equal(t, k, string(it.Key()))
	}
}

// TestIterAllocConcurrent creates, uses and closes iterators from several
// goroutines while a writer puts and flushes, so that recycled stacks
// move between goroutines (run with -race). Every scan must be sorted and
// see the keys written before the iterator was made.
func TestIterAllocConcurrent(t *testing.T) {
	db := openDB(t, &Options{FS: vfs.NewMem(), MemTableSize: 64 << 10})
	for i := 0; i < 500; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("base%04d", i)), []byte("v"), NoSync))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Put([]byte(fmt.Sprintf("w%06d", i)), bytes.Repeat([]byte("x"), 100), NoSync); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var readers sync.WaitGroup
	for r := 0; r < 3; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for n := 0; n < 200; n++ {
				it := db.NewIter(&IterOptions{UpperBound: []byte("c")})
				count, prev := 0, ""
				for ok := it.First(); ok; ok = it.Next() {
					if k := string(it.Key()); k <= prev {
						t.Errorf("out of order: %q after %q", k, prev)
					} else {
						prev = k
					}
					count++
				}
				if err := it.Close(); err != nil || count != 500 {
					t.Errorf("scan saw %d keys (err %v), want 500", count, err)
					return
				}
			}
		}()
	}
	readers.Wait()
	close(stop)
	wg.Wait()
}

// sources is how many children an unbounded iterator over m's shape has:
// the memtables, each L0 table, each deeper non-empty level.
func sources(m *Metrics) int {
	n := 1 + int(m.MemTable.Immutable)
	for i, l := range m.Levels {
		switch {
		case i == 0:
			n += int(l.NumFiles)
		case l.NumFiles > 0:
			n++
		}
	}
	return n
}

// TestIterAllocDropsLargeBuffers: the copy of a value larger than
// maxPooledBuf is not kept in the pool for the next iterator.
func TestIterAllocDropsLargeBuffers(t *testing.T) {
	db := openDB(t, &Options{FS: vfs.NewMem()})
	big := bytes.Repeat([]byte("v"), 2*maxPooledBuf)
	require.NoError(t, db.Put([]byte("big"), big, NoSync))
	it := db.NewIter(nil)
	require.True(t, it.First())
	require.Equal(t, big, it.Value())
	a := it.alloc
	require.NoError(t, it.Close())
	require.LessOrEqual(t, cap(a.value), maxPooledBuf)
}
