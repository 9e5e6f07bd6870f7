package sstable

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// packedTables are partitioned tables of the shapes packedIndex handles
// differently: separators within 8 bytes past the common prefix and equal
// trailers (a compacted table of fixed-width keys), separators with
// tails past those 8 bytes and ties on the word (wordsTable's keys), and
// trailers that differ (sequence numbers kept).
func packedTables(t *testing.T) map[string][][]byte {
	tables := map[string][][]byte{}
	var short, long, seqs []kv
	var shortKeys, longKeys [][]byte
	for i := 0; i < 600; i++ {
		k := fmt.Sprintf("key%013d", 2*i)
		shortKeys = append(shortKeys, []byte(k))
		short = append(short, kv{ikey(k, 0, base.KindSet), []byte("value")})
		seqs = append(seqs, kv{ikey(k, uint64(i+1), base.KindSet), []byte("value")})
	}
	for g := 0; g < 30; g++ {
		for i := 0; i < 20; i++ {
			k := fmt.Sprintf("k%03dzzzzzzzz%03d", g, i)
			longKeys = append(longKeys, []byte(k))
			long = append(long, kv{ikey(k, uint64(g*20+i+1), base.KindSet), []byte("value")})
		}
	}
	for name, kvs := range map[string][]kv{"short": short, "long": long, "seqs": seqs} {
		data, meta := buildTable(t, kvs, WriterOptions{BlockSize: 64, PartitionSize: 512})
		require.Greater(t, meta.Props.IndexPartitions, uint64(3), name)
		tables[name] = append([][]byte{data}, map[string][][]byte{"short": shortKeys, "long": longKeys, "seqs": shortKeys}[name]...)
	}
	return tables
}

// TestPackedIndexMatchesLazy: a packed partition gives every entry (its
// separator, trailer and block handle) and every search answer the stored
// partition gives, for every probe key and trailer; the tail and the
// per-entry trailer paths are reached.
func TestPackedIndexMatchesLazy(t *testing.T) {
	var tails, trailers, ties, smaller int
	for name, tk := range packedTables(t) {
		r := openTable(t, tk[0], ReaderOptions{FileNum: 1, Cache: cache.New(8 << 20), CacheIndexAndFilter: true})
		probes := probeKeys(tk[1:])
		for p, li := range storedParts(t, r) {
			pk := li.pack()
			require.NotNil(t, pk, "%s partition %d not packed", name, p)
			if pk.tailEnd != nil {
				tails++
			}
			if pk.trailers != nil || pk.trailerIdx != nil {
				trailers++
			}
			n := li.blk.numRestarts
			require.Equal(t, n, pk.n)
			var le, pe indexEntry
			var buf, scratch []byte
			for i := 0; i < n; i++ {
				require.NoError(t, li.at(i, &le))
				pk.at(i, &pe, &buf)
				require.Equal(t, string(le.sepUser), string(pe.sepUser), "%s partition %d entry %d", name, p, i)
				require.Equal(t, le.sepTrailer, pe.sepTrailer)
				require.Equal(t, le.h, pe.h)
			}
			for _, k := range probes {
				for _, tr := range []uint64{seekTrailer, 0, base.MakeTrailer(300, base.KindSet)} {
					want, err := li.searchRange(0, n, k, tr)
					require.NoError(t, err)
					require.Equal(t, want, pk.search(k, tr, &scratch), "%s partition %d key %q trailer %x", name, p, k, tr)
					if lo, hi := pk.words.wordRange(k, n); hi-lo > 1 {
						ties++
					}
				}
			}
			if pk.packedBytes < li.storedCharge() {
				smaller++
			}
		}
		r.Close()
	}
	require.Positive(t, tails, "no separator reached the tail arena")
	require.Positive(t, trailers, "no partition kept per-entry trailers")
	require.Positive(t, ties, "no search broke a tie on the word")
	require.Positive(t, smaller, "no packed partition is smaller than its stored form")
}

// TestPackedIndexReplacesCached: point lookups leave partitions stored,
// seeks pack them and the cache then holds the packed form, charged less;
// every key is still found, and a seek of every probe lands where the
// whole index's does.
func TestPackedIndexReplacesCached(t *testing.T) {
	packedAll := 0
	for name, tk := range packedTables(t) {
		c := cache.New(8 << 20)
		r := openTable(t, tk[0], ReaderOptions{FileNum: 1, Cache: c, CacheIndexAndFilter: true})
		whole := openTable(t, tk[0], ReaderOptions{FileNum: 2})
		stored := storedCharges(t, r)
		for _, k := range tk[1:] {
			v, err := getValue(r, k, nil)
			require.NoError(t, err)
			require.Equal(t, "value", string(v), "%s key %q", name, k)
		}
		require.Zero(t, r.indexPacks.Load(), "%s: point lookups packed partitions", name)
		for _, k := range tk[1:] {
			seekFirst(t, r, k)
		}
		packed := 0
		for p := range r.indexTop {
			if v := r.indexHot[p].Load(); v != nil {
				if _, ok := v.Object().(*packedIndex); ok {
					packed++
				}
			}
		}
		require.Equal(t, len(r.indexTop)-unpacked(t, r), packed, "%s: partitions packed", name)
		if packed > 0 {
			require.Less(t, c.KindSize(cache.KindIndex), stored, "%s: packed partitions are charged no less", name)
		}
		packedAll += packed
		for _, k := range probeKeys(tk[1:]) {
			got, want := seekFirst(t, r, k), seekFirst(t, whole, k)
			require.Equal(t, want, got, "%s seek %q", name, k)
		}
		r.Close()
		whole.Close()
	}
	require.Positive(t, packedAll, "no partition was packed")
}

// seekFirst is the keys SeekGE(k) and three Nexts, then SeekLT(k) and
// three Prevs, land on.
func seekFirst(t *testing.T, r *Reader, k []byte) string {
	s := seekFirstE(r, k)
	require.NotContains(t, s, "error:")
	return s
}

func seekFirstE(r *Reader, k []byte) string {
	it := r.NewIter(nil, nil)
	defer it.Close()
	var out []string
	for ok, n := it.SeekGE(k), 0; ok && n < 4; ok, n = it.Next(), n+1 {
		out = append(out, it.Key().String())
	}
	out = append(out, "|")
	for ok, n := it.SeekLT(k), 0; ok && n < 4; ok, n = it.Prev(), n+1 {
		out = append(out, it.Key().String())
	}
	if err := it.Error(); err != nil {
		out = append(out, "error: "+err.Error())
	}
	return fmt.Sprint(out)
}

// unpacked counts the partitions too small for packing to save memory.
func unpacked(t *testing.T, r *Reader) int {
	n := 0
	for _, li := range storedParts(t, r) {
		if pk := li.pack(); pk == nil || pk.packedBytes >= li.storedCharge() {
			n++
		}
	}
	return n
}

// storedCharges is what the table's index partitions cost cached stored.
func storedCharges(t *testing.T, r *Reader) int64 {
	n := int64(0)
	for _, li := range storedParts(t, r) {
		n += int64(li.storedCharge())
	}
	return n
}

func storedParts(t *testing.T, r *Reader) []*lazyIndex {
	var parts []*lazyIndex
	for p := range r.indexTop {
		data, _, err := r.readBlockCtx(r.indexTop[p].h, "index partition")
		require.NoError(t, err)
		li, err := r.checkIndexPartition(p, data, errCtx{})
		require.NoError(t, err)
		parts = append(parts, li)
	}
	return parts
}

// TestPackedIndexConcurrentEvictions: goroutines reading and seeking in a
// charged partitioned table whose partitions are packed, evicted and
// packed again by other lookups all the while (an evictor drops the
// table's blocks) get the whole index's answers; under -race the packed
// form is published in one step.
func TestPackedIndexConcurrentEvictions(t *testing.T) {
	seed := testutil.Seed(t)
	tk := packedTables(t)["short"]
	c := cache.New(1 << 20)
	r := openTable(t, tk[0], ReaderOptions{FileNum: 1, Cache: c, CacheIndexAndFilter: true})
	defer r.Close()
	whole := openTable(t, tk[0], ReaderOptions{FileNum: 2})
	defer whole.Close()
	keys := tk[1:]
	probes := probeKeys(keys)
	want := make([]string, len(probes))
	for i, k := range probes {
		want[i] = seekFirst(t, whole, k)
	}
	stop := startEvictor(c, 1)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			var st ReadStats
			for i := 0; i < 1500; i++ {
				k := keys[rng.IntN(len(keys))]
				if v, err := getValue(r, k, &st); err != nil || string(v) != "value" {
					t.Errorf("get %q: %q, %v", k, v, err)
					return
				}
				j := rng.IntN(len(probes))
				if got := seekFirstE(r, probes[j]); got != want[j] {
					t.Errorf("seek %q: %s, want %s", probes[j], got, want[j])
					return
				}
			}
		}()
	}
	wg.Wait()
	stop()
	require.Positive(t, r.indexPacks.Load(), "no seek packed a partition")
}

// BenchmarkPackIndexPartition is the cost of packing one index partition
// of fixed-width keys (what a charged lookup pays when it reads one).
func BenchmarkPackIndexPartition(b *testing.B) {
	var kvs []kv
	for i := 0; i < 20000; i++ {
		kvs = append(kvs, kv{ikey(fmt.Sprintf("key%013d", 2*i), 0, base.KindSet), make([]byte, 100)})
	}
	data, _ := buildTable(b, kvs, WriterOptions{PartitionSize: 4096})
	r := openTable(b, data, ReaderOptions{FileNum: 1, Cache: cache.New(8 << 20), CacheIndexAndFilter: true})
	defer r.Close()
	raw, _, err := r.readBlockCtx(r.indexTop[0].h, "index partition")
	if err != nil {
		b.Fatal(err)
	}
	li, err := r.checkIndexPartition(0, raw, errCtx{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pack", func(b *testing.B) {
		for range b.N {
			if li.pack() == nil {
				b.Fatal("not packed")
			}
		}
		b.ReportMetric(float64(li.blk.numRestarts), "entries")
	})
	b.Run("decode", func(b *testing.B) {
		var e indexEntry
		for range b.N {
			for i := 0; i < li.blk.numRestarts; i++ {
				if li.at(i, &e) != nil {
					b.Fatal("corrupt")
				}
			}
		}
	})
}
