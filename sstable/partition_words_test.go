package sstable

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// wordsTable is a partitioned table whose keys tie in the word search:
// groups of keys equal in the 8 bytes after any shared prefix
// ("k<group>zzzzzzzz<i>"), one or two keys per data block, so each index
// partition holds many separators.
func wordsTable(t testing.TB) (*Reader, [][]byte) {
	var kvs []kv
	var keys [][]byte
	for g := 0; g < 30; g++ {
		for i := 0; i < 20; i++ {
			k := fmt.Sprintf("k%03dzzzzzzzz%03d", g, i)
			keys = append(keys, []byte(k))
			kvs = append(kvs, kv{ikey(k, uint64(g*20+i+1), base.KindSet), []byte("value")})
		}
	}
	data, meta := buildTable(t, kvs, WriterOptions{BlockSize: 64, PartitionSize: 512})
	require.Greater(t, meta.Props.IndexPartitions, uint64(3))
	r := openTable(t, data, ReaderOptions{FileNum: 1, Cache: cache.New(8 << 20), CacheIndexAndFilter: true})
	return r, keys
}

// probeKeys are the table's keys, keys between and around them, and keys
// that share a group's word but sort before or after its keys.
func probeKeys(keys [][]byte) [][]byte {
	probes := [][]byte{[]byte(""), []byte("a"), []byte("k"), []byte("z")}
	for _, k := range keys {
		probes = append(probes, k, append(append([]byte{}, k...), 0), k[:len(k)-1], k[:12])
	}
	return probes
}

// TestPartitionWordsMatchLazySearch: once a cached index partition has
// been searched denseAfter times its searches go through the word search,
// and they answer as the in-place search did, for every probe key and
// trailer, ties on the word included.
func TestPartitionWordsMatchLazySearch(t *testing.T) {
	r, keys := wordsTable(t)
	defer r.Close()
	probes := probeKeys(keys)
	var dense, ties int
	for p, li := range storedParts(t, r) {
		n := li.blk.numRestarts
		want := make([]int, 0, 3*len(probes))
		for _, k := range probes {
			for _, tr := range []uint64{seekTrailer, 0, base.MakeTrailer(1000, base.KindSet)} {
				i, err := li.searchRange(0, n, k, tr)
				require.NoError(t, err)
				want = append(want, i)
			}
		}
		for range denseAfter {
			_, err := li.search(probes[0], seekTrailer)
			require.NoError(t, err)
		}
		w := li.words.Load()
		require.NotNil(t, w, "partition %d searched %d times has no word search", p, denseAfter)
		dense++
		j := 0
		for _, k := range probes {
			for _, tr := range []uint64{seekTrailer, 0, base.MakeTrailer(1000, base.KindSet)} {
				i, err := li.search(k, tr)
				require.NoError(t, err)
				require.Equal(t, want[j], i, "partition %d key %q trailer %x", p, k, tr)
				if lo, hi := w.wordRange(k, n); hi-lo > 1 {
					ties++
				}
				j++
			}
		}
	}
	require.Equal(t, len(r.indexTop), dense)
	require.Positive(t, ties, "no search had to break a tie on the word")
}

// TestPartitionWordsConcurrent: goroutines seeking in the same cached
// partitions while one of them builds the word search all get the right
// entries (run under -race: the words are published in one atomic step).
func TestPartitionWordsConcurrent(t *testing.T) {
	r, keys := wordsTable(t)
	defer r.Close()
	seed := testutil.Seed(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(g)))
			var st ReadStats
			for n := 0; n < 400; n++ {
				k := keys[rng.Intn(len(keys))]
				v, err := getValue(r, k, &st)
				if err == nil && string(v) != "value" {
					err = fmt.Errorf("key %q: value %q", k, v)
				}
				if err != nil {
					errs[g] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	built := 0
	for p := range r.indexTop {
		if v := r.indexHot[p].Load(); v != nil {
			switch o := v.Object().(type) {
			case *lazyIndex:
				if o.words.Load() != nil {
					built++
				}
			case *packedIndex:
				built++
			}
		}
	}
	require.Positive(t, built, "3,200 lookups built no partition's word search or packed form")
}
