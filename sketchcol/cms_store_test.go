package sketchcol

import (
	"math"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

// Count-Min commands through the Store (RedisBloom's CMS.*), as tables run
// by runCmds (store_test.go).

func cmsIncr(key string, pairs ...any) func(*Store) (any, error) {
	var items [][]byte
	var incrs []int64
	for i := 0; i < len(pairs); i += 2 {
		items = append(items, k(pairs[i].(string)))
		incrs = append(incrs, int64(pairs[i+1].(int)))
	}
	return func(s *Store) (any, error) { return s.CMSIncrBy(k(key), items, incrs) }
}

func cmsQuery(key string, items ...string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.CMSQuery(k(key), ks(items...)...) }
}

func cmsInfo(key string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.CMSInfo(k(key)) }
}

func cmsMerge(dst string, srcs []string, weights []int64) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return nil, s.CMSMerge(k(dst), ks(srcs...), weights) }
}

func cmsInit(key string, w, d int) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return nil, s.CMSInitByDim(k(key), w, d) }
}

func TestStoreCMS(t *testing.T) {
	s := openTestStore(t, nil, nil)
	notFound := []error{ErrCMSKeyNotFound, sieve.ErrNotFound}
	runCmds(t, s.Store, []cmd{
		{name: "CMS.QUERY missing", do: cmsQuery("c", "a"), errs: notFound},
		{name: "CMS.INCRBY missing", do: cmsIncr("c", "a", 1), errs: notFound},
		{name: "CMS.INFO missing", do: cmsInfo("c"), errs: notFound},
		{name: "INITBYDIM width 0", do: cmsInit("c", 0, 5), errs: []error{ErrCMSInvalidWidth, ErrInvalidArgument}},
		{name: "INITBYDIM depth 0", do: cmsInit("c", 5, 0), errs: []error{ErrCMSInvalidDepth}},
		{name: "INITBYDIM too large", do: cmsInit("c", 1<<20, 1<<10), errs: []error{ErrCMSTooLarge, ErrInvalidArgument}},
		{name: "INITBYDIM", do: cmsInit("c", 100, 5)},
		{name: "INITBYDIM again", do: cmsInit("c", 100, 5), errs: []error{ErrCMSKeyExists, ErrItemExists}},
		{name: "INITBYPROB existing", do: func(s *Store) (any, error) { return nil, s.CMSInitByProb(k("c"), 0.01, 0.01) }, errs: []error{ErrCMSKeyExists}},
		{name: "INITBYPROB bad error", do: func(s *Store) (any, error) { return nil, s.CMSInitByProb(k("p"), 1, 0.01) }, errs: []error{ErrCMSInvalidError}},
		{name: "INITBYPROB bad prob", do: func(s *Store) (any, error) { return nil, s.CMSInitByProb(k("p"), 0.01, 0) }, errs: []error{ErrCMSInvalidProb}},
		{name: "INITBYPROB", do: func(s *Store) (any, error) { return nil, s.CMSInitByProb(k("p"), 0.001, 0.01) }},
		{name: "INFO by prob", do: cmsInfo("p"), want: CMSInfo{Width: 2000, Depth: 7}},
		{name: "INCRBY", do: cmsIncr("c", "a", 5, "b", 3, "a", 2), want: []int64{5, 3, 7}},
		{name: "INCRBY zero", do: cmsIncr("c", "z", 0), want: []int64{0}},
		{name: "INCRBY negative", do: cmsIncr("c", "a", -1), errs: []error{ErrCMSNegative}},
		{name: "QUERY", do: cmsQuery("c", "a", "b", "never"), want: []int64{7, 3, 0}},
		{name: "INFO", do: cmsInfo("c"), want: CMSInfo{Width: 100, Depth: 5, Count: 10}},
		{name: "INCRBY saturates", do: cmsIncr("c", "a", math.MaxUint32-8), want: []int64{math.MaxUint32 - 1}},
		{name: "INCRBY overflow", do: cmsIncr("c", "a", 5), want: []int64{math.MaxUint32}, errs: []error{ErrCMSIncrByOverflow}},
		{name: "QUERY saturated", do: cmsQuery("c", "a"), want: []int64{math.MaxUint32}},
		{name: "INFO count", do: cmsInfo("c"), want: CMSInfo{Width: 100, Depth: 5, Count: 10 + math.MaxUint32 - 8 + 5}},
		{name: "INCRBY wrong type", do: func(s *Store) (any, error) {
			if _, err := s.BFAdd(k("bf"), k("x")); err != nil {
				return nil, err
			}
			return s.CMSIncrBy(k("bf"), ks("a"), []int64{1})
		}, errs: []error{ErrWrongType}},
		{name: "QUERY wrong type", do: cmsQuery("bf", "a"), errs: []error{ErrWrongType}},
		{name: "INFO wrong type", do: cmsInfo("bf"), errs: []error{ErrWrongType}},
		{name: "INITBYDIM on a Bloom key", do: cmsInit("bf", 10, 2), errs: []error{ErrCMSKeyExists}},
	})
}

func TestStoreCMSMerge(t *testing.T) {
	s := openTestStore(t, nil, nil)
	runCmds(t, s.Store, []cmd{
		{name: "init a", do: cmsInit("a", 50, 4)},
		{name: "init b", do: cmsInit("b", 50, 4)},
		{name: "init d", do: cmsInit("d", 50, 4)},
		{name: "init other", do: cmsInit("o", 51, 4)},
		{name: "incr a", do: cmsIncr("a", "x", 3, "y", 1)},
		{name: "incr b", do: cmsIncr("b", "x", 2, "z", 10)},
		{name: "merge no sources", do: cmsMerge("d", nil, nil), errs: []error{ErrCMSNumKeys}},
		{name: "merge weights mismatch", do: cmsMerge("d", []string{"a", "b"}, []int64{1}), errs: []error{ErrCMSKeysWeights}},
		{name: "merge into missing", do: cmsMerge("nope", []string{"a"}, nil), errs: []error{ErrCMSKeyNotFound}},
		{name: "merge from missing", do: cmsMerge("d", []string{"a", "nope"}, nil), errs: []error{ErrCMSKeyNotFound}},
		{name: "merge dims", do: cmsMerge("d", []string{"a", "o"}, nil), errs: []error{ErrCMSDimensions}},
		{name: "merge", do: cmsMerge("d", []string{"a", "b"}, nil)},
		{name: "query merged", do: cmsQuery("d", "x", "y", "z"), want: []int64{5, 1, 10}},
		{name: "info merged", do: cmsInfo("d"), want: CMSInfo{Width: 50, Depth: 4, Count: 16}},
		{name: "merge weights", do: cmsMerge("d", []string{"a", "b"}, []int64{2, 3})},
		{name: "query weighted", do: cmsQuery("d", "x", "y", "z"), want: []int64{12, 2, 30}},
		{name: "merge dst is a source", do: cmsMerge("d", []string{"d", "a"}, []int64{1, -1})},
		{name: "query dst-a", do: cmsQuery("d", "x", "y", "z"), want: []int64{9, 1, 30}},
		{name: "merge negative overflow", do: cmsMerge("d", []string{"a", "b"}, []int64{1, -1}), errs: []error{ErrCMSMergeOverflow}},
		{name: "unchanged after refused merge", do: cmsQuery("d", "x", "y", "z"), want: []int64{9, 1, 30}},
		{name: "init e", do: cmsInit("e", 50, 4)},
		{name: "incr e", do: cmsIncr("e", "z", 10)},
		{name: "merge to the limit", do: cmsMerge("d", []string{"e"}, []int64{math.MaxUint32 / 10})},
		{name: "query at the limit", do: cmsQuery("d", "z"), want: []int64{math.MaxUint32 / 10 * 10}},
		{name: "merge past the limit", do: cmsMerge("d", []string{"e"}, []int64{math.MaxUint32/10 + 1}), errs: []error{ErrCMSMergeOverflow}},
		{name: "merge int64 overflow", do: cmsMerge("d", []string{"e"}, []int64{math.MaxInt64}), errs: []error{ErrCMSMergeOverflow}},
		{name: "unchanged", do: cmsQuery("d", "z"), want: []int64{math.MaxUint32 / 10 * 10}},
	})
}

// TestStoreCMSBlind: blind increments equal replied ones, create a missing
// key with the default geometry, and are dropped on a key of another kind.
func TestStoreCMSBlind(t *testing.T) {
	s := openTestStore(t, nil, nil)
	require.NoError(t, s.CMSInitByDim(k("r"), 64, 3))
	require.NoError(t, s.CMSInitByDim(k("b"), 64, 3))
	for i := range 50 {
		items := ks("a", "b", string(rune('c'+i%7)))
		incrs := []int64{1, int64(i), 2}
		_, err := s.CMSIncrBy(k("r"), items, incrs)
		require.NoError(t, err)
		require.NoError(t, s.CMSIncrByBlind(k("b"), items, incrs))
	}
	r, err := s.Dump(k("r"))
	require.NoError(t, err)
	b, err := s.Dump(k("b"))
	require.NoError(t, err)
	require.Equal(t, r, b)
	require.NoError(t, s.CMSIncrByBlind(k("new"), ks("x"), []int64{4}))
	info, err := s.CMSInfo(k("new"))
	require.NoError(t, err)
	require.Equal(t, CMSInfo{Width: 2000, Depth: 7, Count: 4}, info)
	require.NoError(t, s.PFAddBlind(k("h"), k("x")))
	require.NoError(t, s.CMSIncrByBlind(k("h"), ks("x"), []int64{4}))
	kind, err := s.Dump(k("h"))
	require.NoError(t, err)
	require.Equal(t, byte(kindHLLValue), kind[0])
	require.ErrorIs(t, s.CMSIncrByBlind(k("h"), ks("x"), []int64{-4}), ErrCMSNegative)
}
