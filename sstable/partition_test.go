package sstable

import (
	"fmt"
	"github.com/sievedb/sieve/internal/base"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/stretchr/testify/require"
)

// TestPartitionedRoundTrip writes every table shape with partitioned
// index and filter blocks (tiny partitions, so most shapes get many) and
// reads it back both ways: resident (partitions flattened at open) and
// charged through a cache small enough that partitions are evicted and
// read again. The table checks are TestTableRoundTrip's: gets, seeks and
// walks against the entries, Verify.
func TestPartitionedRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	var partitioned, filterParts int
	for _, sh := range shapes() {
		kvs := sh.make(rand.New(rand.NewPCG(seed, 2)))
		for _, pc := range policyCases() {
			if sh.scale && pc.name != filter.Bloom(10).Name() {
				continue
			}
			for _, charged := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/charged=%v", sh.name, pc.name, charged), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, 3))
					o := WriterOptions{BlockSize: sh.blockSize, FilterPolicy: pc.policy, PartitionSize: 64}
					if sh.scale {
						o.PartitionSize = 4096
					}
					data, meta := buildTable(t, kvs, o)
					if meta.Props.IndexPartitions+meta.Props.FilterPartitions > 0 {
						require.Equal(t, TableFormatV3, meta.Props.FormatVersion)
					} else {
						require.Equal(t, TableFormatV1, meta.Props.FormatVersion, "a table that was not cut stays v1")
					}
					c := cache.New(16 << 10)
					r := openTable(t, data, ReaderOptions{FileNum: 7, Cache: c, CacheIndexAndFilter: charged, Policies: testPolicies()})
					defer r.Close()
					p := r.Properties()
					if p.IndexPartitions > 1 {
						partitioned++
					}
					if p.FilterPartitions > 1 {
						filterParts++
					}
					require.Equal(t, p.IndexPartitions > 0, p.NumDataBlocks > 1 && p.IndexPartitions != 0)
					checkTable(t, rng, r, meta, kvs, pc.policy, sh.scale)
					var out strings.Builder
					require.NoError(t, r.Describe(&out, DescribeOptions{Entries: !sh.scale}))
					if p.IndexPartitions > 0 {
						require.Contains(t, out.String(), "index partition #0")
					}
				})
			}
		}
	}
	// The cases above must really be partitioned (a writer that never
	// cut would pass them as whole tables).
	require.NotZero(t, partitioned, "no table had a partitioned index")
	require.NotZero(t, filterParts, "no table had a partitioned filter")
}

// TestPartitionedChargedLoadsOnePartition: a charged Get goes through one
// index partition and at most one filter partition, and the resident
// memory is the top-level blocks only.
func TestPartitionedChargedLoadsOnePartition(t *testing.T) {
	var kvs []kv
	for i := 0; i < 20000; i++ {
		kvs = append(kvs, kv{ikey(fmt.Sprintf("key%08d", i), uint64(i+1), 1), []byte("value")})
	}
	whole, _ := buildTable(t, kvs, WriterOptions{FilterPolicy: filter.Bloom(10)})
	part, _ := buildTable(t, kvs, WriterOptions{FilterPolicy: filter.Bloom(10), PartitionSize: 1024})
	c := cache.New(1 << 20)
	rw := openTable(t, whole, ReaderOptions{FileNum: 1, Cache: c, CacheIndexAndFilter: false})
	defer rw.Close()
	rp := openTable(t, part, ReaderOptions{FileNum: 2, Cache: c, CacheIndexAndFilter: true})
	defer rp.Close()
	require.Greater(t, rp.Properties().IndexPartitions, uint64(1))
	require.Greater(t, rp.Properties().FilterPartitions, uint64(1))
	wi, wf := rw.ResidentSize()
	pi, pf := rp.ResidentSize()
	t.Logf("resident: whole index %d filter %d; partitioned top-levels %d %d", wi, wf, pi, pf)
	require.Less(t, pi*10, wi)
	require.Less(t, pf*10, wf)
	for i := 0; i < 2000; i += 7 {
		var st ReadStats
		k := []byte(fmt.Sprintf("key%08d", i*10))
		may, err := rp.ProbeFilter(k, filter.HashKey(k), &st)
		require.NoError(t, err)
		require.True(t, may)
		v, err := getValue(rp, k, &st)
		require.NoError(t, err)
		require.Equal(t, "value", string(v))
		require.EqualValues(t, 1, st.FilterPartitions)
		require.EqualValues(t, 1, st.IndexPartitions)
	}
	// Above the table's last key: no partition is loaded.
	var st ReadStats
	may, err := rp.ProbeFilter([]byte("zzz"), filter.HashKey([]byte("zzz")), &st)
	require.NoError(t, err)
	require.False(t, may)
	require.Zero(t, st.FilterPartitions)
}

// partitionedCorruptionTable is corruptionTestTable with partitioned
// index and filter blocks.
func partitionedCorruptionTable(t *testing.T) ([]byte, []kv) {
	var kvs []kv
	for i := 0; i < 400; i++ {
		kvs = append(kvs, kv{ikey(fmt.Sprintf("key%05d", i), uint64(i+1), base.KindSet), []byte(strings.Repeat("v", i%40))})
	}
	data, meta := buildTable(t, kvs, WriterOptions{BlockSize: 512, FilterPolicy: exactPolicy{}, PartitionSize: 128})
	require.Greater(t, meta.Props.IndexPartitions, uint64(2))
	require.Greater(t, meta.Props.FilterPartitions, uint64(2))
	return data, kvs
}

// TestPartitionedLayoutCoversFile: Layout's blocks, partitions included,
// tile the whole file.
func TestPartitionedLayoutCoversFile(t *testing.T) {
	data, _ := partitionedCorruptionTable(t)
	r := openTable(t, data, ReaderOptions{})
	kinds := layoutKinds(t, r, data)
	require.EqualValues(t, r.Properties().IndexPartitions, kinds["index partition"])
	require.EqualValues(t, r.Properties().FilterPartitions, kinds["filter partition"])
	require.Equal(t, 1, kinds["filter top-level"])
}

// TestPartitionedCorruption flips bits in every block of a partitioned
// table (partitions and top-level blocks included): reading it every way,
// resident or charged, reports ErrCorruption naming the file, never a
// wrong answer or a panic.
func TestPartitionedCorruption(t *testing.T) {
	data, kvs := partitionedCorruptionTable(t)
	for _, charged := range []bool{false, true} {
		read := func(b []byte) error { return readEverythingWith(b, kvs, charged) }
		require.NoError(t, read(data))
		r := openTable(t, data, ReaderOptions{})
		layout := r.Layout()
		r.Close()
		for i, b := range layout {
			if b.Kind == "data" && i%5 != 0 {
				continue
			}
			stride := max(uint64(1), b.Length/24)
			for off := b.Offset; off < b.Offset+b.Length; off += stride {
				bad := append([]byte(nil), data...)
				bad[off] ^= 1 << (off % 8)
				err := read(bad)
				require.ErrorIs(t, err, base.ErrCorruption, "charged=%v: flip in %s block at %d: %v", charged, b.Kind, off, err)
				require.Contains(t, err.Error(), "000007.sst")
			}
		}
	}
}

// readEverythingWith is readEverything, charged through a small cache
// (partitions evicted and read again) or not.
func readEverythingWith(data []byte, kvs []kv, charged bool) error {
	o := ReaderOptions{FileNum: 7, Cache: cache.New(1 << 20), Policies: testPolicies()}
	if charged {
		o.Cache, o.CacheIndexAndFilter = cache.New(4<<10), true
	}
	return readEverythingOpts(data, kvs, o)
}

// probeTableCase is a table of a filter-probe benchmark and how it is read.
type probeTableCase struct {
	name    string
	data    []byte
	charged bool
}

// probeTableCases builds a table of perTable even keys with a Bloom(10)
// filter, whole and partitioned: read resident, charged whole, charged
// partitioned.
func probeTableCases(b *testing.B, perTable int) []probeTableCase {
	var kvs []kv
	for i := 0; i < perTable; i++ {
		kvs = append(kvs, kv{ikey(fmt.Sprintf("key%08d", 2*i), uint64(i+1), base.KindSet), []byte("v")})
	}
	whole, _ := buildTable(b, kvs, WriterOptions{FilterPolicy: filter.Bloom(10)})
	part, _ := buildTable(b, kvs, WriterOptions{FilterPolicy: filter.Bloom(10), PartitionSize: 4096})
	return []probeTableCase{{"resident", whole, false}, {"charged", whole, true}, {"partitioned", part, true}}
}

// absentProbeKeys returns n random odd (absent) keys below 2*perTable and
// their filter hashes.
func absentProbeKeys(perTable, n int) ([][]byte, []uint64) {
	keys := make([][]byte, n)
	hashes := make([]uint64, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%08d", 2*rand.IntN(perTable)+1))
		hashes[i] = filter.HashKey(keys[i])
	}
	return keys, hashes
}

// BenchmarkProbeFilterRandom probes a 70,000-key table's Bloom(10) filter
// for random absent keys: resident, charged whole, charged partitioned.
func BenchmarkProbeFilterRandom(b *testing.B) {
	const perTable = 70000
	keys, hashes := absentProbeKeys(perTable, 4096)
	for _, c := range probeTableCases(b, perTable) {
		b.Run(c.name, func(b *testing.B) {
			r := openTable(b, c.data, ReaderOptions{FileNum: 1, Cache: cache.New(8 << 20), CacheIndexAndFilter: c.charged})
			defer r.Close()
			var st ReadStats
			i := 0
			for b.Loop() {
				r.ProbeFilter(keys[i&4095], hashes[i&4095], &st)
				i++
			}
		})
	}
}

// TestTopSearchMatchesBinarySearch: the integer-keyed search of a
// top-level block answers as the plain binary search, for separators
// sharing long prefixes, short and empty ones, and probes inside and
// outside the shared prefix.
func TestTopSearchMatchesBinarySearch(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	alpha := []byte{0, 1, 'a', 'b', 0xff}
	randKey := func(prefix string) []byte {
		k := []byte(prefix)
		for n := rng.IntN(12); n > 0; n-- {
			k = append(k, alpha[rng.IntN(len(alpha))])
		}
		return k
	}
	for round := 0; round < 300; round++ {
		prefix := []string{"", "a", "common-prefix-", "\xff\xff"}[rng.IntN(4)]
		var ks []string
		seen := map[string]bool{}
		for n := 1 + rng.IntN(40); len(ks) < n; {
			k := string(randKey(prefix))
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		top := make([]topEntry, len(ks))
		for i, k := range ks {
			top[i].sepUser, top[i].sepTrailer = []byte(k), uint64(rng.IntN(3))
		}
		s := newTopSearch(top)
		entries := make([]indexEntry, len(top))
		for i := range top {
			entries[i] = top[i].indexEntry
		}
		for probe := 0; probe < 50; probe++ {
			var k []byte
			switch rng.IntN(3) {
			case 0:
				k = []byte(ks[rng.IntN(len(ks))])
			case 1:
				k = randKey(prefix)
			default:
				k = randKey("")
			}
			tr := uint64(rng.IntN(4))
			require.Equal(t, searchIndex(entries, k, tr), s.search(top, k, tr), "probe %q trailer %d in %q", k, tr, ks)
		}
	}
}

// TestPartitionedPrefixFilter: with partitions cut every few keys (so
// most prefixes straddle a cut, and shortened separators fall between
// prefixes), every present prefix passes, resident and charged, and
// absent prefixes are mostly ruled out.
func TestPartitionedPrefixFilter(t *testing.T) {
	var kvs []kv
	for p := 0; p < 300; p++ {
		for j := 0; j < 1+p%7; j++ {
			kvs = append(kvs, kv{key: ikey(fmt.Sprintf("p%03d/%d", 2*p, j), 1, base.KindSet), value: []byte("v")})
		}
	}
	sortKVs(kvs)
	for _, pol := range []filter.Policy{filter.Bloom(10), filter.Ribbon(10)} {
		data, meta := buildTable(t, kvs, WriterOptions{FilterPolicy: pol, Prefix: first4, PrefixName: "first4", PartitionSize: 64, BlockSize: 128})
		require.Greater(t, meta.Props.FilterPartitions, uint64(20))
		require.EqualValues(t, 300, meta.Props.FilterPrefixes)
		for _, charged := range []bool{false, true} {
			r := openTable(t, data, ReaderOptions{Cache: cache.New(8 << 10), CacheIndexAndFilter: charged, Policies: []filter.Policy{pol}})
			require.True(t, r.PrefixUsable("first4"))
			falsePos := 0
			for p := 0; p < 600; p++ {
				pre := []byte(fmt.Sprintf("p%03d", p))
				ok, err := r.ProbePrefix(pre, filter.HashPrefix(pre), nil)
				require.NoError(t, err)
				if p%2 == 0 {
					require.True(t, ok, "%s: present prefix %s ruled out (charged=%v)", pol.Name(), pre, charged)
				} else if ok {
					falsePos++
				}
			}
			// The point is no false negative; partitions of a few keys
			// (64 B) give Ribbon a high rate, and an absent prefix may
			// probe two partitions.
			require.Less(t, falsePos, 200, "%s: absent prefixes mostly pass", pol.Name())
			r.Close()
		}
	}
}

// BenchmarkProbeFilterManyTables probes the Bloom(10) filters of 32
// tables of 70,000 keys (2.7 MiB of filters, more than a core's L2) for
// random absent keys of random tables, so each probe's metadata comes
// from memory as in a database: resident, charged whole, charged
// partitioned (all partitions cached: the cost of the indirection).
func BenchmarkProbeFilterManyTables(b *testing.B) {
	const tables, perTable = 32, 70000
	keys, hashes := absentProbeKeys(perTable, 1<<16)
	for _, c := range probeTableCases(b, perTable) {
		b.Run(c.name, func(b *testing.B) {
			c64 := cache.New(64 << 20)
			rs := make([]*Reader, tables)
			for t := range rs {
				rs[t] = openTable(b, c.data, ReaderOptions{FileNum: uint64(t + 1), Cache: c64, CacheIndexAndFilter: c.charged})
				defer rs[t].Close()
			}
			var st ReadStats
			for i := range keys { // load every partition once
				rs[i%tables].ProbeFilter(keys[i], hashes[i], &st)
			}
			i := 0
			for b.Loop() {
				k := i & (len(keys) - 1)
				rs[(i*7+k)%tables].ProbeFilter(keys[k], hashes[k], &st)
				i++
			}
		})
	}
}
