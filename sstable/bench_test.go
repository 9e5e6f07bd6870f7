package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/stretchr/testify/require"
)

// benchKVs are n entries with 16-byte user keys and 100-byte values, the
// shape of the project's peer benchmark.
func benchKVs(n int) []kv {
	kvs := make([]kv, n)
	val := bytes.Repeat([]byte("0123456789"), 10)
	for i := range kvs {
		kvs[i] = kv{ikey(fmt.Sprintf("%016d", i*2), uint64(i+1), base.KindSet), val}
	}
	return kvs
}

func benchReader(tb testing.TB, kvs []kv, policy filter.Policy) *Reader {
	data, _ := buildTable(tb, kvs, WriterOptions{FilterPolicy: policy})
	r := openTable(tb, data, ReaderOptions{FileNum: 1, Cache: cache.New(256 << 20), Policies: benchPolicies()})
	it := r.NewIter(nil, nil) // warm the cache
	for ok := it.First(); ok; ok = it.Next() {
	}
	require.NoError(tb, it.Close())
	return r
}

func TestGetDoesNotAllocateOnCacheHit(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	kvs := benchKVs(10000)
	r := benchReader(t, kvs, nil)
	var stats ReadStats
	found := 0
	fn := func(k base.InternalKey, v []byte) bool { found++; return false }
	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		i = (i + 7919) % len(kvs)
		if err := r.Get(kvs[i].key.UserKey, base.SeqNumMax, &stats, fn); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, 2001, found)
	require.Zero(t, stats.FileReads)
}

func BenchmarkGet(b *testing.B) {
	kvs := benchKVs(100_000)
	r := benchReader(b, kvs, nil)
	rng := rand.New(rand.NewPCG(1, 1))
	var stats ReadStats
	b.Run("present", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k := kvs[rng.IntN(len(kvs))].key.UserKey
			_ = r.Get(k, base.SeqNumMax, &stats, func(base.InternalKey, []byte) bool { return false })
		}
	})
	b.Run("present-l2", func(b *testing.B) {
		// A table small enough (~230 KB) to stay in the CPU caches: the
		// cost of the code path rather than of memory latency.
		small := kvs[:2000]
		rs := benchReader(b, small, nil)
		for b.Loop() {
			k := small[rng.IntN(len(small))].key.UserKey
			_ = rs.Get(k, base.SeqNumMax, &stats, func(base.InternalKey, []byte) bool { return false })
		}
	})
	b.Run("absent", func(b *testing.B) {
		absent := make([][]byte, 1024)
		for i := range absent {
			absent[i] = []byte(fmt.Sprintf("%016d", rng.IntN(len(kvs))*2+1))
		}
		i := 0
		for b.Loop() {
			_ = r.Get(absent[i%len(absent)], base.SeqNumMax, &stats, func(base.InternalKey, []byte) bool { return false })
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			var stats ReadStats
			for pb.Next() {
				k := kvs[rng.IntN(len(kvs))].key.UserKey
				_ = r.Get(k, base.SeqNumMax, &stats, func(base.InternalKey, []byte) bool { return false })
			}
		})
	})
}

func BenchmarkMayContain(b *testing.B) {
	kvs := benchKVs(100_000)
	probes := make([][]byte, 4096)
	for i := range probes {
		probes[i] = []byte(fmt.Sprintf("%016d", i*2+1))
	}
	for _, p := range benchPolicies() {
		b.Run(p.Name(), func(b *testing.B) {
			r := benchReader(b, kvs, p)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r.MayContain(probes[i&4095])
				i++
			}
		})
	}
}

func BenchmarkWriter(b *testing.B) {
	kvs := benchKVs(100_000)
	for _, comp := range []Compression{NoCompression, SnappyCompression} {
		for _, p := range append([]filter.Policy{nil}, benchPolicies()...) {
			name := "nofilter"
			if p != nil {
				name = p.Name()
			}
			b.Run(fmt.Sprintf("%s/%s", comp, name), func(b *testing.B) {
				var buf bytes.Buffer
				for b.Loop() {
					buf.Reset()
					w := NewWriter(&buf, WriterOptions{Compression: comp, FilterPolicy: p})
					for _, e := range kvs {
						if err := w.Add(e.key, e.value); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := w.Finish(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(kvs)), "ns/key")
				b.SetBytes(int64(buf.Len()))
			})
		}
	}
}

func BenchmarkIterScan(b *testing.B) {
	kvs := benchKVs(100_000)
	r := benchReader(b, kvs, nil)
	b.ReportAllocs()
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			it := r.NewIter(nil, nil)
			for ok := it.First(); ok; ok = it.Next() {
			}
			_ = it.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(kvs)), "ns/key")
	})
	b.Run("backward", func(b *testing.B) {
		for b.Loop() {
			it := r.NewIter(nil, nil)
			for ok := it.Last(); ok; ok = it.Prev() {
			}
			_ = it.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(kvs)), "ns/key")
	})
}

// scanMatching scans it from First, checking each entry against kvs in
// order, closes it (which must succeed) and returns the entries seen.
func scanMatching(t *testing.T, it base.InternalIterator, kvs []kv) int {
	t.Helper()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, kvs[n].key.UserKey, it.Key().UserKey)
		require.Equal(t, kvs[n].value, it.Value())
		n++
	}
	require.NoError(t, it.Close())
	return n
}

// TestCompactionIterLeavesCache: a compaction's input iterator uses the
// blocks the cache holds (without counting hits or promoting them) and
// adds none it reads from the file, while a reader's iterator fills the
// cache.
func TestCompactionIterLeavesCache(t *testing.T) {
	kvs := benchKVs(5000)
	data, _ := buildTable(t, kvs, WriterOptions{})
	c := cache.New(64 << 20)
	r := openTable(t, data, ReaderOptions{FileNum: 1, Cache: c, Policies: benchPolicies()})
	scan := func(it base.InternalIterator) int { return scanMatching(t, it, kvs) }
	blocks := int64(r.Properties().NumDataBlocks)
	require.Greater(t, blocks, int64(10))

	// Cold: every block is read from the file and none is cached.
	require.Equal(t, len(kvs), scan(r.NewCompactionIter(nil, nil)))
	require.Zero(t, c.KindSize(cache.KindData))
	require.Zero(t, c.Hits())

	// A reader's scan fills the cache with every block.
	require.Equal(t, len(kvs), scan(r.NewIter(nil, nil)))
	require.EqualValues(t, blocks, c.Count())
	hits, misses := c.Hits(), c.Misses()

	// Warm: the compaction iterator reads the cached blocks and leaves
	// the counters alone.
	require.Equal(t, len(kvs), scan(r.NewCompactionIter(nil, nil)))
	require.EqualValues(t, blocks, c.Count())
	require.Equal(t, hits, c.Hits())
	require.Equal(t, misses, c.Misses())
}

// TestCompactionIterReadahead: a compaction iterator reads its table
// through a readahead window (readaheadSize) — across many windows, and
// with blocks larger than the window — and returns what a reader's
// iterator returns; a corrupted block is still reported.
func TestCompactionIterReadahead(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, blockSize := range []int{0, 1 << 20} {
		t.Run(fmt.Sprintf("blocksize=%d", blockSize), func(t *testing.T) {
			kvs := make([]kv, 40000)
			for i := range kvs {
				v := make([]byte, 100)
				for j := range v {
					v[j] = byte(rng.Uint32())
				}
				kvs[i] = kv{ikey(fmt.Sprintf("%016d", i), uint64(i+1), base.KindSet), v}
			}
			data, _ := buildTable(t, kvs, WriterOptions{BlockSize: blockSize})
			require.Greater(t, len(data), 3*readaheadSize, "the table fits too few windows")
			r := openTable(t, data, ReaderOptions{FileNum: 1, Cache: cache.New(1 << 20), Policies: benchPolicies()})
			require.Equal(t, len(kvs), scanMatching(t, r.NewCompactionIter(nil, nil), kvs))

			// Flip a byte in the middle of the file: the scan fails
			// with a corruption error instead of returning entries.
			bad := append([]byte(nil), data...)
			bad[len(bad)/2] ^= 0x40
			rb := openTable(t, bad, ReaderOptions{FileNum: 2, Cache: cache.New(1 << 20), Policies: benchPolicies()})
			it := rb.NewCompactionIter(nil, nil)
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			require.Error(t, it.Close())
			require.Less(t, n, len(kvs))
		})
	}
}
