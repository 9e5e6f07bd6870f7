package sketchcol

import (
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

// Top-K commands through the Store (RedisBloom's TOPK.*), as tables run by
// runCmds (store_test.go).

func topkAdd(key string, items ...string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.TopKAdd(k(key), ks(items...)...) }
}

func topkList(key string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.TopKListWithCount(k(key)) }
}

func topkReserve(key string, kk, w, d int, decay float64) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return nil, s.TopKReserve(k(key), kk, w, d, decay) }
}

func topkItems(pairs ...any) []TopKItem {
	var out []TopKItem
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, TopKItem{Item: k(pairs[i].(string)), Count: int64(pairs[i+1].(int))})
	}
	return out
}

func TestStoreTopK(t *testing.T) {
	s := openTestStore(t, nil, nil)
	nf := []error{ErrTopKKeyNotFound, sieve.ErrNotFound}
	inv := []error{ErrInvalidArgument}
	runCmds(t, s.Store, []cmd{
		{name: "ADD missing", do: topkAdd("t", "a"), errs: nf},
		{name: "QUERY missing", do: func(s *Store) (any, error) { return s.TopKQuery(k("t"), k("a")) }, errs: nf},
		{name: "LIST missing", do: topkList("t"), errs: nf},
		{name: "INFO missing", do: func(s *Store) (any, error) { return s.TopKInfo(k("t")) }, errs: nf},
		{name: "RESERVE k 0", do: topkReserve("t", 0, 0, 0, 0), errs: []error{ErrTopKInvalidK}},
		{name: "RESERVE width 0", do: topkReserve("t", 2, 0, 5, 0.9), errs: []error{ErrTopKInvalidWidth}},
		{name: "RESERVE depth 0", do: topkReserve("t", 2, 5, 0, 0.9), errs: []error{ErrTopKInvalidDepth}},
		{name: "RESERVE decay 0", do: topkReserve("t", 2, 5, 5, 0), errs: []error{ErrTopKInvalidDecay}},
		{name: "RESERVE decay > 1", do: topkReserve("t", 2, 5, 5, 1.5), errs: []error{ErrTopKInvalidDecay}},
		{name: "RESERVE too large", do: topkReserve("t", 2, 1<<20, 1<<10, 0.9), errs: inv},
		{name: "RESERVE defaults", do: topkReserve("d", 3, 0, 0, 0)},
		{name: "INFO defaults", do: func(s *Store) (any, error) { return s.TopKInfo(k("d")) }, want: TopKInfo{K: 3, Width: 8, Depth: 7, Decay: 0.9}},
		{name: "RESERVE", do: topkReserve("t", 2, 1000, 3, 0.9)},
		{name: "RESERVE again", do: topkReserve("t", 2, 1000, 3, 0.9), errs: []error{ErrTopKKeyExists, ErrItemExists}},
		{name: "LIST empty", do: topkList("t"), want: []TopKItem(nil)},
		{name: "ADD a", do: topkAdd("t", "a"), want: [][]byte{nil}},
		{name: "ADD b", do: topkAdd("t", "b"), want: [][]byte{nil}},
		// Equal counts: RedisBloom's heapifyDown moved b below a, so c expels a.
		{name: "ADD c expels", do: topkAdd("t", "c"), want: [][]byte{k("a")}},
		{name: "LIST", do: topkList("t"), want: topkItems("b", 1, "c", 1)},
		{name: "INCRBY", do: func(s *Store) (any, error) {
			return s.TopKIncrBy(k("t"), ks("a", "b"), []int64{5, 2})
		}, want: [][]byte{k("b"), k("c")}},
		{name: "LIST by count", do: topkList("t"), want: topkItems("a", 6, "b", 3)},
		{name: "LIST items", do: func(s *Store) (any, error) { return s.TopKList(k("t")) }, want: ks("a", "b")},
		{name: "QUERY", do: func(s *Store) (any, error) { return s.TopKQuery(k("t"), k("a"), k("c"), k("zz")) }, want: []bool{true, false, false}},
		{name: "INCRBY too big", do: func(s *Store) (any, error) { return s.TopKIncrBy(k("t"), ks("a"), []int64{100001}) }, errs: []error{ErrTopKInvalidIncr}},
		{name: "INCRBY negative", do: func(s *Store) (any, error) { return s.TopKIncrBy(k("t"), ks("a"), []int64{-1}) }, errs: inv},
		{name: "INCRBY mismatch", do: func(s *Store) (any, error) { return s.TopKIncrBy(k("t"), ks("a", "b"), []int64{1}) }, errs: inv},
		{name: "INCRBY max", do: func(s *Store) (any, error) { return s.TopKIncrBy(k("t"), ks("q"), []int64{100000}) }, want: [][]byte{k("b")}},
		{name: "LIST unchanged by refused", do: topkList("t"), want: topkItems("q", 100000, "a", 6)},
		{name: "wrong type", do: func(s *Store) (any, error) {
			require.NoError(t, s.CMSInitByDim(k("cms"), 4, 2))
			return s.TopKAdd(k("cms"), k("a"))
		}, errs: []error{ErrWrongType}},
		{name: "RESERVE on CMS key", do: topkReserve("cms", 2, 0, 0, 0), errs: []error{ErrTopKKeyExists}},
		{name: "CMS on Top-K key", do: cmsQuery("t", "a"), errs: []error{ErrWrongType}},
		{name: "LIST wrong type", do: topkList("cms"), errs: []error{ErrWrongType}},
	})
}

// TestStoreTopKBlind: blind adds give the bytes of replied ones, and a
// missing key gets DefaultTopKSpec.
func TestStoreTopKBlind(t *testing.T) {
	s := openTestStore(t, nil, nil)
	require.NoError(t, s.TopKReserve(k("r"), 5, 20, 3, 0.9))
	require.NoError(t, s.TopKReserve(k("b"), 5, 20, 3, 0.9))
	for i := range 300 {
		it := ks(string(rune('a'+i%17)), string(rune('a'+i%5)))
		_, err := s.TopKAdd(k("r"), it...)
		require.NoError(t, err)
		require.NoError(t, s.TopKAddBlind(k("b"), it...))
	}
	r, err := s.Dump(k("r"))
	require.NoError(t, err)
	b, err := s.Dump(k("b"))
	require.NoError(t, err)
	require.Equal(t, r, b)
	require.NoError(t, s.TopKAddBlind(k("new"), k("x")))
	info, err := s.TopKInfo(k("new"))
	require.NoError(t, err)
	require.Equal(t, TopKInfo{K: 10, Width: 8, Depth: 7, Decay: 0.9}, info)
}

// cmsTopKCommands are the Count-Min and Top-K commands on key that read
// it, run for their error; creating ones are checked apart.
func cmsTopKCommands(key []byte) map[string]func(s *Store) error {
	x := ks("x")
	return map[string]func(s *Store) error{
		"CMSIncrBy":         func(s *Store) error { _, err := s.CMSIncrBy(key, x, []int64{1}); return err },
		"CMSQuery":          func(s *Store) error { _, err := s.CMSQuery(key, x...); return err },
		"CMSInfo":           func(s *Store) error { _, err := s.CMSInfo(key); return err },
		"CMSMerge dst":      func(s *Store) error { return s.CMSMerge(key, ks("cms"), nil) },
		"CMSMerge src":      func(s *Store) error { return s.CMSMerge(k("cms"), [][]byte{key}, nil) },
		"TopKAdd":           func(s *Store) error { _, err := s.TopKAdd(key, x...); return err },
		"TopKIncrBy":        func(s *Store) error { _, err := s.TopKIncrBy(key, x, []int64{2}); return err },
		"TopKQuery":         func(s *Store) error { _, err := s.TopKQuery(key, x...); return err },
		"TopKList":          func(s *Store) error { _, err := s.TopKList(key); return err },
		"TopKListWithCount": func(s *Store) error { _, err := s.TopKListWithCount(key); return err },
		"TopKInfo":          func(s *Store) error { _, err := s.TopKInfo(key); return err },
	}
}

// TestStoreCMSTopKWrongType: CMS.* and TOPK.* on keys of every other kind
// and on a plain string fail with ErrWrongType (the creating commands with
// RedisBloom's "key already exists") and change nothing; the older kinds'
// commands refuse Count-Min and Top-K keys; blind writes of another kind
// are dropped.
func TestStoreCMSTopKWrongType(t *testing.T) {
	s := openTestStore(t, nil, nil)
	x := k("x")
	_, err := s.PFAdd(k("hll"), x)
	require.NoError(t, err)
	_, err = s.BFAdd(k("bloom"), x)
	require.NoError(t, err)
	require.NoError(t, s.CMSInitByDim(k("cms"), 10, 2))
	require.NoError(t, s.TopKReserve(k("topk"), 3, 0, 0, 0))
	require.NoError(t, s.ColumnFamily().Put(k("plain"), []byte("just a string"), sieve.Sync))
	for _, key := range ks("hll", "bloom", "cms", "topk", "plain") {
		before, err := s.ColumnFamily().Get(key)
		require.NoError(t, err)
		for name, c := range cmsTopKCommands(key) {
			own := (string(key) == "cms" && name[:3] == "CMS") || (string(key) == "topk" && name[:4] == "TopK")
			if own {
				continue
			}
			err := c(s.Store)
			require.ErrorIs(t, err, ErrWrongType, "%s on %s", name, key)
			if string(key) == "plain" {
				require.ErrorIs(t, err, ErrCorruption, "%s on %s", name, key)
			}
		}
		if string(key) != "plain" {
			require.ErrorIs(t, s.CMSInitByDim(key, 5, 5), ErrCMSKeyExists)
			require.ErrorIs(t, s.TopKReserve(key, 5, 0, 0, 0), ErrTopKKeyExists)
			if string(key) != "cms" {
				require.NoError(t, s.CMSIncrByBlind(key, ks("y"), []int64{3}))
			}
			if string(key) != "topk" {
				require.NoError(t, s.TopKAddBlind(key, k("y")))
			}
		}
		after, err := s.ColumnFamily().Get(key)
		require.NoError(t, err)
		require.Equal(t, before, after, "%s changed", key)
	}
	for _, key := range ks("cms", "topk") {
		for kind, cmds := range storeCommands(key) {
			for name, c := range cmds {
				require.ErrorIs(t, c(s.Store), ErrWrongType, "%s (%s) on %s", name, kind, key)
			}
		}
	}
}
