package sstable

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

func buildBlock(kvs []kv, restartInterval int) block {
	bw := blockWriter{restartInterval: restartInterval}
	for _, e := range kvs {
		bw.add(e.key.AppendEncoded(nil), e.value)
	}
	blk, err := parseBlock(append([]byte(nil), bw.finish()...))
	if err != nil {
		panic(err)
	}
	return blk
}

// blockModelKVs makes n entries with shared prefixes and several versions
// of some user keys.
func blockModelKVs(rng *rand.Rand, n int) []kv {
	var kvs []kv
	for i := 0; len(kvs) < n; i++ {
		uk := fmt.Sprintf("key%04d", i*3)
		for v := 0; v < 1+rng.IntN(3) && len(kvs) < n; v++ {
			kvs = append(kvs, kv{ikey(uk, uint64(100-v), base.Kind(rng.IntN(3))), []byte(fmt.Sprintf("v%d.%d", i, v))})
		}
	}
	sortKVs(kvs)
	return kvs
}

func TestBlockIterBasics(t *testing.T) {
	kvs := []kv{
		{ikey("a", 3, base.KindSet), []byte("a3")},
		{ikey("a", 1, base.KindDelete), nil},
		{ikey("ab", 5, base.KindMerge), []byte("ab5")},
		{ikey("b", 2, base.KindSet), []byte("")},
	}
	blk := buildBlock(kvs, 2)
	var it blockIter
	it.init(blk, true, errCtx{})
	keyAt := func() string { return it.ikey().String() }

	require.True(t, it.first())
	require.Equal(t, `"a"#3,SET`, keyAt())
	require.Equal(t, "a3", string(it.val))
	require.True(t, it.next())
	require.Equal(t, `"a"#1,DEL`, keyAt())
	require.True(t, it.next())
	require.True(t, it.next())
	require.Equal(t, `"b"#2,SET`, keyAt())
	require.False(t, it.next())
	require.True(t, it.prev(), "Prev after the end goes to the last entry")
	require.Equal(t, `"b"#2,SET`, keyAt())
	require.True(t, it.prev())
	require.Equal(t, `"ab"#5,MERGE`, keyAt())
	require.True(t, it.next(), "direction change")
	require.Equal(t, `"b"#2,SET`, keyAt())

	require.True(t, it.last())
	require.Equal(t, `"b"#2,SET`, keyAt())

	require.True(t, it.seekGE([]byte("a"), seekTrailer))
	require.Equal(t, `"a"#3,SET`, keyAt())
	require.True(t, it.seekGE([]byte("a"), base.MakeTrailer(2, base.KindMax)))
	require.Equal(t, `"a"#1,DEL`, keyAt())
	require.True(t, it.seekGE([]byte("aa"), seekTrailer))
	require.Equal(t, `"ab"#5,MERGE`, keyAt())
	require.False(t, it.seekGE([]byte("c"), seekTrailer))

	require.True(t, it.seekLT([]byte("b"), seekTrailer))
	require.Equal(t, `"ab"#5,MERGE`, keyAt())
	require.True(t, it.prev())
	require.Equal(t, `"a"#1,DEL`, keyAt())
	require.True(t, it.prev())
	require.False(t, it.prev())
	require.True(t, it.next(), "Next before the start goes to the first entry")
	require.Equal(t, `"a"#3,SET`, keyAt())
	require.False(t, it.seekLT([]byte("a"), seekTrailer))
	require.NoError(t, it.err)
}

func TestBlockEmpty(t *testing.T) {
	blk := buildBlock(nil, 16)
	require.Equal(t, 0, blk.numRestarts)
	var it blockIter
	it.init(blk, true, errCtx{})
	require.False(t, it.first())
	require.False(t, it.last())
	require.False(t, it.seekGE([]byte("a"), seekTrailer))
	require.False(t, it.seekLT([]byte("a"), seekTrailer))
	require.False(t, it.next())
	require.False(t, it.prev())
	require.NoError(t, it.err)
}

// TestBlockIterRandomWalk drives a block iterator and a model with random
// operations, including direction changes, for several restart intervals.
func TestBlockIterRandomWalk(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d (replay: set seed in TestBlockIterRandomWalk)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, n := range []int{1, 2, 16, 17, 100, 500} {
		for _, ri := range []int{1, 2, 3, 16} {
			t.Run(fmt.Sprintf("n=%d/restart=%d", n, ri), func(t *testing.T) {
				kvs := blockModelKVs(rng, n)
				var it blockIter
				it.init(buildBlock(kvs, ri), true, errCtx{})
				walkModel(t, rng, kvs, blockIterOps{&it}, 2000)
			})
		}
	}
}

// iterOps abstracts the block and table iterators for walkModel.
type iterOps interface {
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	SeekGE(ukey []byte) bool
	SeekLT(ukey []byte) bool
	Key() base.InternalKey
	Value() []byte
	Error() error
}

type blockIterOps struct{ i *blockIter }

func (b blockIterOps) First() bool           { return b.i.first() }
func (b blockIterOps) Last() bool            { return b.i.last() }
func (b blockIterOps) Next() bool            { return b.i.next() }
func (b blockIterOps) Prev() bool            { return b.i.prev() }
func (b blockIterOps) SeekGE(k []byte) bool  { return b.i.seekGE(k, seekTrailer) }
func (b blockIterOps) SeekLT(k []byte) bool  { return b.i.seekLT(k, seekTrailer) }
func (b blockIterOps) Key() base.InternalKey { return b.i.ikey() }
func (b blockIterOps) Value() []byte         { return b.i.val }
func (b blockIterOps) Error() error          { return b.i.err }

// probeKey returns a user key near a random model key: the key itself, just
// after it, a prefix of it, or beyond the ends.
func probeKey(rng *rand.Rand, kvs []kv) []byte {
	if len(kvs) == 0 || rng.IntN(20) == 0 {
		return []byte{byte(rng.IntN(256)), byte(rng.IntN(256))}
	}
	uk := kvs[rng.IntN(len(kvs))].key.UserKey
	switch rng.IntN(4) {
	case 0:
		return append(append([]byte(nil), uk...), 0)
	case 1:
		if len(uk) > 0 {
			return append([]byte(nil), uk[:rng.IntN(len(uk))]...)
		}
	}
	return append([]byte(nil), uk...)
}

// walkModel runs ops random operations against it and a model position over
// kvs (the entries the iterator should show, in order).
func walkModel(t *testing.T, rng *rand.Rand, kvs []kv, it iterOps, ops int) {
	t.Helper()
	n := len(kvs)
	pos := -1 // model position; -1 before the first, n past the last
	seekGE := func(k []byte) int {
		return sort.Search(n, func(i int) bool { return string(kvs[i].key.UserKey) >= string(k) })
	}
	var history []string
	for op := 0; op < ops; op++ {
		var got bool
		var name string
		switch rng.IntN(6) {
		case 0:
			name, got = "First", it.First()
			pos = 0
		case 1:
			name, got = "Last", it.Last()
			pos = n - 1
		case 2:
			name, got = "Next", it.Next()
			if pos < n {
				pos++
			}
		case 3:
			name, got = "Prev", it.Prev()
			if pos >= 0 {
				pos--
			}
		case 4:
			k := probeKey(rng, kvs)
			name, got = fmt.Sprintf("SeekGE(%q)", k), it.SeekGE(k)
			pos = seekGE(k)
		case 5:
			k := probeKey(rng, kvs)
			name, got = fmt.Sprintf("SeekLT(%q)", k), it.SeekLT(k)
			pos = seekGE(k) - 1
		}
		if pos < -1 {
			pos = -1
		}
		if n == 0 {
			pos = -1
		}
		history = append(history, name)
		if len(history) > 8 {
			history = history[1:]
		}
		require.NoError(t, it.Error())
		want := pos >= 0 && pos < n
		require.Equal(t, want, got, "after %v (model pos %d of %d)", history, pos, n)
		if want {
			require.Equal(t, kvs[pos].key.String(), it.Key().String(), "after %v", history)
			require.Equal(t, string(kvs[pos].value), string(it.Value()), "after %v", history)
		}
		if !got {
			if pos >= n {
				pos = n
			} else {
				pos = -1
			}
		}
	}
}

func TestParseBlockRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"short", []byte{1, 0}},
		{"restart count too big", []byte{0, 0, 0, 0, 5, 0, 0, 0}},
		{"entries without restarts", []byte{1, 2, 3, 0, 0, 0, 0}},
		{"first restart not zero", []byte{0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}},
		{"restart past entries", []byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseBlock(tc.data)
			require.Error(t, err)
		})
	}
}
