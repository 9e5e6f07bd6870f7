package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/stretchr/testify/require"
)

// shape is a family of table contents.
type shape struct {
	name      string
	blockSize int
	scale     bool // a large shape: run once, sample its keys
	make      func(rng *rand.Rand) []kv
}

func raceOrShort() bool { return testing.Short() || raceEnabled }

func shapes() []shape {
	return append(append(basicShapes(), versionShapes()...), bigShape())
}

// basicShapes: one key, empty values, empty user keys, large values.
func basicShapes() []shape {
	return []shape{
		{"one key", 0, false, func(*rand.Rand) []kv {
			return []kv{{ikey("only", 1, base.KindSet), []byte("value")}}
		}},
		{"empty values", 64, false, func(*rand.Rand) []kv {
			var kvs []kv
			for i := 0; i < 300; i++ {
				kvs = append(kvs, kv{ikey(fmt.Sprintf("k%05d", i), uint64(i+1), base.KindSet), nil})
			}
			return kvs
		}},
		{"empty user key", 64, false, func(*rand.Rand) []kv {
			var kvs []kv
			for s := uint64(20); s > 0; s-- {
				kvs = append(kvs, kv{ikey("", s, base.Kind(s%3)), []byte(fmt.Sprint(s))})
			}
			for i := 0; i < 50; i++ {
				kvs = append(kvs, kv{ikey(fmt.Sprintf("\x00%d", i), 7, base.KindSet), []byte("x")})
			}
			sortKVs(kvs)
			return kvs
		}},
		{"large values", 4096, false, func(rng *rand.Rand) []kv {
			var kvs []kv
			for i := 0; i < 40; i++ {
				v := make([]byte, 1000+rng.IntN(30000))
				for j := range v {
					v[j] = byte(rng.IntN(4) + 'a') // compressible
				}
				kvs = append(kvs, kv{ikey(fmt.Sprintf("big%03d", i), uint64(i+1), base.KindSet), v})
			}
			return kvs
		}},
	}
}

// versionShapes: many versions of one key across blocks, and random binary
// keys with a few versions each.
func versionShapes() []shape {
	return []shape{
		{"versions across block boundaries", 128, false, func(rng *rand.Rand) []kv {
			var kvs []kv
			for i := 0; i < 30; i++ {
				kvs = append(kvs, kv{ikey(fmt.Sprintf("a%03d", i), 5, base.KindSet), []byte("v")})
			}
			for s := uint64(400); s > 0; s-- {
				kvs = append(kvs, kv{ikey("hot", s, base.Kind(rng.IntN(3))), []byte(fmt.Sprintf("hot@%d", s))})
			}
			for i := 0; i < 30; i++ {
				kvs = append(kvs, kv{ikey(fmt.Sprintf("z%03d", i), 5, base.KindDelete), nil})
			}
			return kvs
		}},
		{"random binary keys", 256, false, func(rng *rand.Rand) []kv {
			seen := map[string]bool{}
			var kvs []kv
			for len(kvs) < 3000 {
				k := make([]byte, rng.IntN(12))
				for j := range k {
					k[j] = []byte{0, 1, 0x7f, 0xfe, 0xff}[rng.IntN(5)]
				}
				if seen[string(k)] {
					continue
				}
				seen[string(k)] = true
				for v := 0; v < 1+rng.IntN(3); v++ {
					kvs = append(kvs, kv{base.MakeInternalKey(k, uint64(rng.IntN(1000)+v*1000), base.Kind(rng.IntN(3))), k})
				}
			}
			sortKVs(kvs)
			// Equal (ukey, seq) pairs could repeat with different kinds; dedupe.
			out := kvs[:1]
			for _, e := range kvs[1:] {
				if base.CompareInternal(out[len(out)-1].key, e.key) < 0 {
					out = append(out, e)
				}
			}
			return out
		}},
	}
}

// bigShape: a million small keys (20,000 with -short or -race).
func bigShape() shape {
	bigN := 1_000_000
	if raceOrShort() {
		bigN = 20_000
	}
	return shape{fmt.Sprintf("%d small keys", bigN), 0, true, func(*rand.Rand) []kv {
		kvs := make([]kv, bigN)
		for i := range kvs {
			kvs[i] = kv{ikey(fmt.Sprintf("user%010d", i*7), uint64(i+1), base.KindSet), []byte(fmt.Sprintf("v%d", i))}
		}
		return kvs
	}}
}

type policyCase struct {
	name   string
	policy filter.Policy
}

func policyCases() []policyCase {
	cases := []policyCase{{"nofilter", nil}}
	for _, p := range testPolicies() {
		cases = append(cases, policyCase{p.Name(), p})
	}
	return cases
}

func TestTableRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	for _, sh := range shapes() {
		kvs := sh.make(rand.New(rand.NewPCG(seed, 2)))
		big := sh.scale
		for _, pc := range policyCases() {
			for _, cm := range []struct {
				comp Compression
				fast bool
			}{{NoCompression, false}, {SnappyCompression, false}, {SnappyCompression, true}} {
				comp := cm.comp
				if big && (comp == NoCompression || cm.fast || pc.name != filter.Bloom(10).Name()) {
					continue // the big shape runs once, with the default filter: it is about scale, not options
				}
				name := comp.String()
				if cm.fast {
					name += "-fast"
				}
				t.Run(fmt.Sprintf("%s/%s/%s", sh.name, pc.name, name), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, 3))
					o := WriterOptions{BlockSize: sh.blockSize, Compression: comp, FastCompression: cm.fast, FilterPolicy: pc.policy}
					data, meta := buildTable(t, kvs, o)
					c := cache.New(1 << 20)
					r := openTable(t, data, ReaderOptions{FileNum: 7, Cache: c})
					defer r.Close()
					checkTable(t, rng, r, meta, kvs, pc.policy, big)
				})
			}
		}
	}
}

func checkTable(t *testing.T, rng *rand.Rand, r *Reader, meta *WriterMetadata, kvs []kv, policy filter.Policy, big bool) {
	t.Helper()
	checkTableProps(t, r, meta, kvs, policy)
	checkFullScans(t, r, kvs)
	// Seeks at and between every user key (sampled for big tables).
	ukeys := distinctUserKeys(kvs)
	step := 1
	if big {
		step = len(ukeys)/2000 + 1
	}
	checkSeeks(t, r, kvs, ukeys, step)
	checkWalks(t, rng, r, kvs, big)
	checkGets(t, rng, r, kvs, ukeys, step)
}

// checkTableProps: the table verifies; its properties, bounds and filter
// are the writer's.
func checkTableProps(t *testing.T, r *Reader, meta *WriterMetadata, kvs []kv, policy filter.Policy) {
	t.Helper()
	require.NoError(t, r.Verify())
	p := r.Properties()
	require.EqualValues(t, len(kvs), p.NumEntries)
	require.Equal(t, kvs[0].key.String(), meta.Smallest.String())
	require.Equal(t, kvs[len(kvs)-1].key.String(), meta.Largest.String())
	require.Equal(t, meta.Props.NumDataBlocks, p.NumDataBlocks)
	if policy == filter.None {
		require.Equal(t, FilterNone, r.FilterState(), "filter.None writes no filter block")
		require.Empty(t, p.FilterPolicy)
	} else if policy != nil {
		require.Equal(t, FilterLoaded, r.FilterState())
		require.Equal(t, policy.Name(), p.FilterPolicy)
	} else {
		require.Equal(t, FilterNone, r.FilterState())
	}
}

// checkFullScans: full scans both ways.
func checkFullScans(t *testing.T, r *Reader, kvs []kv) {
	t.Helper()
	it := r.NewIter(nil, nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Less(t, i, len(kvs))
		require.Equal(t, kvs[i].key.String(), it.Key().String())
		require.True(t, bytes.Equal(kvs[i].value, it.Value()), "value of %s", kvs[i].key)
		i++
	}
	require.NoError(t, it.Error())
	require.Equal(t, len(kvs), i)
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		require.Equal(t, kvs[i].key.String(), it.Key().String())
	}
	require.Equal(t, 0, i)
	require.NoError(t, it.Close())
}

// checkSeeks: SeekGE and SeekLT at every step-th user key and just after
// it, and no filter false negative.
func checkSeeks(t *testing.T, r *Reader, kvs []kv, ukeys [][]byte, step int) {
	t.Helper()
	it := r.NewIter(nil, nil)
	for j := 0; j < len(ukeys); j += step {
		uk := ukeys[j]
		for _, probe := range [][]byte{uk, append(append([]byte(nil), uk...), 0)} {
			ge := sort.Search(len(kvs), func(i int) bool { return bytes.Compare(kvs[i].key.UserKey, probe) >= 0 })
			if ge < len(kvs) {
				require.True(t, it.SeekGE(probe), "SeekGE(%q)", probe)
				require.Equal(t, kvs[ge].key.String(), it.Key().String(), "SeekGE(%q)", probe)
			} else {
				require.False(t, it.SeekGE(probe))
			}
			if ge > 0 {
				require.True(t, it.SeekLT(probe), "SeekLT(%q)", probe)
				require.Equal(t, kvs[ge-1].key.String(), it.Key().String(), "SeekLT(%q)", probe)
			} else {
				require.False(t, it.SeekLT(probe))
			}
		}
		require.True(t, r.MayContain(uk), "filter false negative for %q", uk)
	}
	require.NoError(t, it.Close())
}

// checkWalks: random walks against the model, the first unbounded, the
// others with random bounds.
func checkWalks(t *testing.T, rng *rand.Rand, r *Reader, kvs []kv, big bool) {
	t.Helper()
	walks := 20
	if big {
		walks = 3
	} else if raceEnabled {
		walks = 5
	}
	for w := 0; w < walks; w++ {
		var lower, upper []byte
		if w > 0 {
			if rng.IntN(3) > 0 {
				lower = probeKey(rng, kvs)
			}
			if rng.IntN(3) > 0 {
				upper = probeKey(rng, kvs)
			}
		}
		var in []kv
		for _, e := range kvs {
			if (lower == nil || bytes.Compare(e.key.UserKey, lower) >= 0) && (upper == nil || bytes.Compare(e.key.UserKey, upper) < 0) {
				in = append(in, e)
			}
		}
		it := r.NewIter(lower, upper)
		walkModel(t, rng, in, boundedOps{it, lower, upper}, 300)
		require.NoError(t, it.Close())
	}
}

// boundedOps clamps seek keys the way the model does: the table iterator
// clamps SeekGE to lower and SeekLT to upper, and the model's positions come
// from the bounded entry list, so the model needs no change.
type boundedOps struct {
	base.InternalIterator
	lower, upper []byte
}

func distinctUserKeys(kvs []kv) [][]byte {
	var out [][]byte
	for i, e := range kvs {
		if i == 0 || !bytes.Equal(kvs[i-1].key.UserKey, e.key.UserKey) {
			out = append(out, e.key.UserKey)
		}
	}
	return out
}

func checkGets(t *testing.T, rng *rand.Rand, r *Reader, kvs []kv, ukeys [][]byte, step int) {
	versions := func(uk []byte, seq uint64) []string {
		var out []string
		i := sort.Search(len(kvs), func(i int) bool { return bytes.Compare(kvs[i].key.UserKey, uk) >= 0 })
		for ; i < len(kvs) && bytes.Equal(kvs[i].key.UserKey, uk); i++ {
			if kvs[i].key.SeqNum() <= seq {
				out = append(out, kvs[i].key.String()+"="+string(kvs[i].value))
			}
		}
		return out
	}
	get := func(uk []byte, seq uint64, limit int) []string {
		var out []string
		var stats ReadStats
		err := r.Get(uk, seq, &stats, func(k base.InternalKey, v []byte) bool {
			out = append(out, k.String()+"="+string(v))
			return len(out) < limit
		})
		require.NoError(t, err)
		require.Equal(t, stats.BlocksRead, stats.CacheHits+stats.FileReads)
		return out
	}
	for j := 0; j < len(ukeys); j += step {
		uk := ukeys[j]
		seqs := []uint64{base.SeqNumMax, 0, uint64(rng.IntN(2000))}
		i := sort.Search(len(kvs), func(i int) bool { return bytes.Compare(kvs[i].key.UserKey, uk) >= 0 })
		seqs = append(seqs, kvs[i].key.SeqNum(), kvs[i].key.SeqNum()-1)
		for _, seq := range seqs {
			want := versions(uk, seq)
			got := get(uk, seq, 1<<30)
			require.Equal(t, want, got, "Get(%q, %d)", uk, seq)
			if len(want) > 1 {
				require.Equal(t, want[:1], get(uk, seq, 1), "Get(%q, %d) stopping after one", uk, seq)
			}
		}
		absent := append(append([]byte(nil), uk...), 0)
		require.Equal(t, versions(absent, base.SeqNumMax), get(absent, base.SeqNumMax, 1<<30))
	}
	require.Empty(t, get([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), base.SeqNumMax, 10))
}

func TestWriterRejects(t *testing.T) {
	w := NewWriter(&bytes.Buffer{}, WriterOptions{})
	require.NoError(t, w.Add(ikey("b", 5, base.KindSet), nil))
	require.Error(t, w.Add(ikey("b", 5, base.KindSet), nil), "duplicate")
	require.Error(t, w.Add(ikey("b", 6, base.KindSet), nil), "newer version after older")
	require.Error(t, w.Add(ikey("a", 9, base.KindSet), nil), "smaller user key")
	require.Error(t, w.Add(base.InternalKey{UserKey: []byte("c"), Trailer: 7<<8 | 9}, nil), "bad kind")
	require.NoError(t, w.Add(ikey("b", 4, base.KindDelete), nil), "writer still usable")
	_, err := w.Finish()
	require.NoError(t, err)
	require.ErrorIs(t, w.Add(ikey("c", 1, base.KindSet), nil), ErrWriterFinished)
	_, err = w.Finish()
	require.ErrorIs(t, err, ErrWriterFinished)

	w = NewWriter(&bytes.Buffer{}, WriterOptions{Compression: 9})
	require.Error(t, w.Add(ikey("a", 1, base.KindSet), nil))
}

func TestEmptyTable(t *testing.T) {
	data, meta := buildTable(t, nil, WriterOptions{FilterPolicy: exactPolicy{}})
	require.Zero(t, meta.Props.NumEntries)
	r := openTable(t, data, ReaderOptions{})
	require.NoError(t, r.Verify())
	it := r.NewIter(nil, nil)
	require.False(t, it.First())
	require.False(t, it.Last())
	require.False(t, it.SeekGE([]byte("a")))
	require.False(t, it.SeekLT([]byte("a")))
	require.NoError(t, it.Close())
	require.NoError(t, r.Get([]byte("a"), base.SeqNumMax, nil, func(base.InternalKey, []byte) bool {
		t.Fatal("entry in empty table")
		return false
	}))
}

func TestSeparators(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"abc", "abd", ""},           // adjacent: nothing shorter
		{"abc1xyz", "abc2", "abc1y"}, // next byte after the differing one
		{"abcdef", "abzz", "abd"},
		{"ab", "abc", ""}, // prefix
		{"a\xff\xffq", "b", "a\xff\xffr"[:0]},
		{"hello world", "help", "hello x"[:0]},
	} {
		got, ok := shortSeparator(nil, []byte(tc.a), []byte(tc.b))
		if ok {
			require.Less(t, tc.a, string(got))
			require.Less(t, string(got), tc.b)
			require.Less(t, len(got), len(tc.a))
		}
		if tc.want != "" {
			require.Equal(t, tc.want, string(got))
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 100000; i++ {
		a := randKey(rng)
		b := randKey(rng)
		if c := bytes.Compare(a, b); c == 0 {
			continue
		} else if c > 0 {
			a, b = b, a
		}
		if s, ok := shortSeparator(nil, a, b); ok {
			require.True(t, bytes.Compare(a, s) < 0 && bytes.Compare(s, b) < 0 && len(s) < len(a), "%q %q -> %q", a, b, s)
		}
		if s, ok := shortSuccessor(nil, a); ok {
			require.True(t, bytes.Compare(a, s) < 0 && len(s) < len(a), "%q -> %q", a, s)
		}
		// Internal separators hold across versions of one user key too.
		la := base.MakeInternalKey(a, uint64(rng.IntN(10)), base.KindSet)
		nb := base.MakeInternalKey(b, uint64(rng.IntN(10)), base.KindSet)
		sep := indexSeparator(nil, la, nb)
		require.True(t, base.CompareEncoded(la.AppendEncoded(nil), sep) <= 0 && base.CompareEncoded(sep, nb.AppendEncoded(nil)) < 0)
		same := base.MakeInternalKey(a, la.SeqNum()+1+uint64(rng.IntN(5)), base.KindSet)
		sep = indexSeparator(nil, same, la)
		require.True(t, base.CompareEncoded(same.AppendEncoded(nil), sep) <= 0 && base.CompareEncoded(sep, la.AppendEncoded(nil)) < 0)
	}
}

func randKey(rng *rand.Rand) []byte {
	k := make([]byte, rng.IntN(8))
	for i := range k {
		k[i] = []byte{0, 'a', 'b', 0xfe, 0xff}[rng.IntN(5)]
	}
	return k
}

// TestConcurrentReaders shares one Reader between goroutines doing Gets,
// scans and MayContain through a small cache that keeps evicting; run it
// with -race.
func TestConcurrentReaders(t *testing.T) {
	kvs := benchKVs(20000)
	data, _ := buildTable(t, kvs, WriterOptions{FilterPolicy: filter.Bloom(10)})
	r := openTable(t, data, ReaderOptions{FileNum: 9, Cache: cache.New(64 << 10)})
	defer r.Close()
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func(seed uint64) {
			errs <- func() error {
				rng := rand.New(rand.NewPCG(seed, 5))
				for i := 0; i < 2000; i++ {
					e := kvs[rng.IntN(len(kvs))]
					if !r.MayContain(e.key.UserKey) {
						return fmt.Errorf("filter lost %q", e.key.UserKey)
					}
					var got []byte
					if err := r.Get(e.key.UserKey, base.SeqNumMax, nil, func(k base.InternalKey, v []byte) bool {
						got = append(got, v...)
						return false
					}); err != nil {
						return err
					}
					if !bytes.Equal(got, e.value) {
						return fmt.Errorf("Get(%q) = %q", e.key.UserKey, got)
					}
					if i%100 == 0 {
						it := r.NewIter(e.key.UserKey, nil)
						n := 0
						for ok := it.First(); ok && n < 300; ok = it.Next() {
							n++
						}
						if err := it.Close(); err != nil {
							return err
						}
					}
				}
				return nil
			}()
		}(uint64(g))
	}
	for g := 0; g < 4; g++ {
		require.NoError(t, <-errs)
	}
}

func TestReadAfterClose(t *testing.T) {
	kvs := benchKVs(1000)
	data, _ := buildTable(t, kvs, WriterOptions{})
	r := openTable(t, data, ReaderOptions{})
	require.NoError(t, r.Close())
	require.Error(t, r.Close())
	it := r.NewIter(nil, nil)
	require.False(t, it.First())
	require.Error(t, it.Error())
	require.Error(t, r.Get(kvs[0].key.UserKey, base.SeqNumMax, nil, func(base.InternalKey, []byte) bool { return true }))
}
