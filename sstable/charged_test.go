package sstable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// flakyFile fails its reads while fail is set.
type flakyFile struct {
	testutil.MemFile
	fail atomic.Bool
}

func (f *flakyFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fail.Load() {
		return 0, errors.New("injected read error")
	}
	return f.MemFile.ReadAt(p, off)
}

func chargedTable(t *testing.T, n int) ([]byte, []kv) {
	var kvs []kv
	for i := 0; i < n; i++ {
		kvs = append(kvs, kv{ikey(fmt.Sprintf("key%06d", 2*i), uint64(i+1), base.KindSet), []byte(fmt.Sprintf("value%d", i))})
	}
	data, _ := buildTable(t, kvs, WriterOptions{BlockSize: 256, FilterPolicy: exactPolicy{}})
	return data, kvs
}

func openCharged(t *testing.T, data []byte, c *cache.Cache) (*Reader, *flakyFile) {
	f := &flakyFile{MemFile: testutil.MemFile{Data: append([]byte(nil), data...)}}
	r, err := NewReader(f, int64(len(data)), ReaderOptions{FileNum: 7, Cache: c, CacheIndexAndFilter: true, Policies: testPolicies()})
	require.NoError(t, err)
	return r, f
}

func getValue(r *Reader, ukey []byte, stats *ReadStats) (val []byte, err error) {
	err = r.Get(ukey, base.SeqNumMax, stats, func(_ base.InternalKey, v []byte) bool {
		val = append([]byte(nil), v...)
		return false
	})
	return val, err
}

// TestChargedIndexAndFilterThroughCache: with CacheIndexAndFilter the
// Reader holds nothing resident, reads its index and filter again after
// they are evicted (counted), fails open on a filter read error and
// reports a corrupt filter or index block as corruption.
func TestChargedIndexAndFilterThroughCache(t *testing.T) {
	data, kvs := chargedTable(t, 2000)
	c := cache.New(1 << 20)
	r, f := openCharged(t, data, c)
	defer r.Close()
	idx, flt := r.ResidentSize()
	require.Zero(t, idx+flt, "charged reader keeps blocks resident")
	require.Greater(t, c.KindSize(cache.KindIndex), int64(0))
	require.Greater(t, c.KindSize(cache.KindFilter), int64(0))
	require.Equal(t, FilterLoaded, r.FilterState())

	var st ReadStats
	for _, e := range kvs[:100] {
		ok, err := r.ProbeFilter(e.key.UserKey, filter.HashKey(e.key.UserKey), &st)
		require.NoError(t, err)
		require.True(t, ok)
		v, err := getValue(r, e.key.UserKey, &st)
		require.NoError(t, err)
		require.Equal(t, e.value, v)
	}
	require.EqualValues(t, 100, st.IndexHits)
	require.EqualValues(t, 100, st.FilterHits)
	require.Zero(t, st.IndexMisses+st.FilterMisses)

	c.EvictFile(7)
	st = ReadStats{}
	ok, err := r.ProbeFilter([]byte("key000001"), filter.HashKey([]byte("key000001")), &st)
	require.NoError(t, err)
	require.False(t, ok, "absent key passed the exact filter")
	v, err := getValue(r, kvs[7].key.UserKey, &st)
	require.NoError(t, err)
	require.Equal(t, kvs[7].value, v)
	require.EqualValues(t, 1, st.IndexMisses)
	require.EqualValues(t, 1, st.FilterMisses)

	c.EvictFile(7)
	f.fail.Store(true)
	st = ReadStats{}
	ok, err = r.ProbeFilter([]byte("key000001"), filter.HashKey([]byte("key000001")), &st)
	require.NoError(t, err, "a filter that cannot be read must fail open")
	require.True(t, ok)
	require.EqualValues(t, 1, st.FilterFailOpen)
	f.fail.Store(false)

	for _, l := range r.Layout() {
		if l.Kind == "filter" || l.Kind == "index" {
			f.Data[l.Offset+1] ^= 0x40
		}
	}
	c.EvictFile(7)
	_, err = r.ProbeFilter([]byte("key000001"), filter.HashKey([]byte("key000001")), &st)
	require.ErrorIs(t, err, base.ErrCorruption)
	_, err = getValue(r, kvs[7].key.UserKey, &st)
	require.ErrorIs(t, err, base.ErrCorruption)
}

// TestChargedPinReservesBudget: Pin moves the blocks out of the cache into
// a reservation, lookups stop touching the cache for them, Close gives the
// reservation back.
func TestChargedPinReservesBudget(t *testing.T) {
	data, kvs := chargedTable(t, 2000)
	c := cache.New(1 << 20)
	r, _ := openCharged(t, data, c)
	require.NoError(t, r.Pin())
	require.True(t, r.Pinned())
	pi, pf := r.PinnedSize()
	require.Greater(t, pi, int64(0))
	require.Greater(t, pf, int64(0))
	require.Equal(t, pi+pf, c.Reserved())
	require.Zero(t, c.KindSize(cache.KindIndex)+c.KindSize(cache.KindFilter))
	var st ReadStats
	for _, e := range kvs {
		v, err := getValue(r, e.key.UserKey, &st)
		require.NoError(t, err)
		require.Equal(t, e.value, v)
	}
	require.Zero(t, st.IndexHits+st.IndexMisses)
	require.NoError(t, r.Close())
	require.Zero(t, c.Reserved())

	// A cache too small to reserve the blocks leaves them cached.
	small := cache.New(16 << 10)
	r2, _ := openCharged(t, data, small)
	defer r2.Close()
	require.NoError(t, r2.Pin())
	require.False(t, r2.Pinned())
	require.True(t, r2.PinTried())
	require.Zero(t, small.Reserved())
}

// TestChargedConcurrentEvictions reads and scans a charged table from
// several goroutines while another keeps evicting it, under -race with
// poisoned recycled memory.
func TestChargedConcurrentEvictions(t *testing.T) {
	seed := testutil.Seed(t)
	data, kvs := chargedTable(t, 3000)
	c := cache.New(1 << 20)
	r, _ := openCharged(t, data, c)
	defer r.Close()
	var wg sync.WaitGroup
	var misses atomic.Int64
	stop := startEvictor(c, 7)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			var st ReadStats
			for i := 0; i < 3000; i++ {
				e := kvs[rng.IntN(len(kvs))]
				v, err := getValue(r, e.key.UserKey, &st)
				if err != nil || string(v) != string(e.value) {
					t.Errorf("get %s: %q, %v", e.key.UserKey, v, err)
					return
				}
				if i%500 == 0 {
					it := r.NewIter(nil, nil)
					n := 0
					for ok := it.First(); ok; ok = it.Next() {
						n++
					}
					if err := it.Close(); err != nil || n != len(kvs) {
						t.Errorf("scan: %d of %d entries, %v", n, len(kvs), err)
					}
				}
			}
			misses.Add(st.IndexMisses)
		}(g)
	}
	wg.Wait()
	stop()
	require.Greater(t, misses.Load(), int64(0), "the evictions never made a lookup reload the index")
}

// startEvictor drops every block of file from c in a loop until the
// returned stop is called. It returns once it has evicted: readers started
// before it could be done before a descheduled evictor ran.
func startEvictor(c *cache.Cache, file uint64) (stop func()) {
	var done atomic.Bool
	var evictions atomic.Int64
	go func() {
		for !done.Load() {
			c.EvictFile(file)
			evictions.Add(1)
		}
	}()
	for evictions.Load() == 0 {
		runtime.Gosched()
	}
	return func() { done.Store(true) }
}

// BenchmarkProbeFilter compares a filter probe of a resident and a charged
// (cache hit) filter.
func BenchmarkProbeFilter(b *testing.B) {
	var kvs []kv
	for i := 0; i < 20000; i++ {
		kvs = append(kvs, kv{ikey(fmt.Sprintf("key%06d", 2*i), uint64(i+1), base.KindSet), []byte("v")})
	}
	data, _ := buildTable(b, kvs, WriterOptions{FilterPolicy: exactPolicy{}})
	for _, charged := range []bool{false, true} {
		b.Run(fmt.Sprintf("charged=%v", charged), func(b *testing.B) {
			r, err := NewReader(testutil.NewMemFile(data), int64(len(data)), ReaderOptions{FileNum: 1,
				Cache: cache.New(8 << 20), CacheIndexAndFilter: charged, Policies: testPolicies()})
			require.NoError(b, err)
			defer r.Close()
			key := []byte("key000001")
			h := filter.HashKey(key)
			var st ReadStats
			for b.Loop() {
				if ok, _ := r.ProbeFilter(key, h, &st); ok {
					b.Fatal("absent key passed")
				}
			}
		})
	}
}
