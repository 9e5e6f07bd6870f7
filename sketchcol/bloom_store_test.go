package sketchcol

import (
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

// Bloom commands through the Store (RedisBloom's BF.*), as tables run by
// runCmds (store_test.go).

func bfAdd(key, item string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.BFAdd(k(key), k(item)) }
}

func bfMAdd(key string, items ...string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.BFMAdd(k(key), ks(items...)...) }
}

func bfInsert(key string, o *BFInsertOptions, items ...string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.BFInsert(k(key), o, ks(items...)...) }
}

func bfReserve(key string, rate float64, capacity int64, o *BFReserveOptions) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return nil, s.BFReserve(k(key), rate, capacity, o) }
}

func bfExists(key, item string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.BFExists(k(key), k(item)) }
}

// bfInfo returns BF.INFO without Size, which bfInfoSize checks.
func bfInfo(key string) func(*Store) (any, error) {
	return func(s *Store) (any, error) {
		info, err := s.BFInfo(k(key))
		info.Size = 0
		return info, err
	}
}

func TestStoreBF(t *testing.T) {
	s := openTestStore(t, nil, nil)
	full := []error{ErrFilterFull}
	invalid := []error{ErrInvalidArgument}
	runCmds(t, s.Store, []cmd{
		{name: "BF.EXISTS missing", do: bfExists("b", "x"), want: false},
		{name: "BF.CARD missing", do: func(s *Store) (any, error) { return s.BFCard(k("b")) }, want: int64(0)},
		{name: "BF.INFO missing", do: bfInfo("b"), errs: []error{sieve.ErrNotFound}},
		{name: "BF.MEXISTS missing", do: func(s *Store) (any, error) { return s.BFMExists(k("b"), k("x"), k("y")) }, want: []bool{false, false}},
		{name: "BF.ADD creates", do: bfAdd("b", "x"), want: true},
		{name: "BF.ADD again", do: bfAdd("b", "x"), want: false},
		{name: "BF.MADD", do: bfMAdd("b", "x", "y", "y", "z"), want: []bool{false, true, false, true}},
		{name: "BF.CARD", do: func(s *Store) (any, error) { return s.BFCard(k("b")) }, want: int64(3)},
		{name: "BF.MEXISTS", do: func(s *Store) (any, error) { return s.BFMExists(k("b"), k("x"), k("y"), k("q")) }, want: []bool{true, true, false}},
		{name: "BF.INFO defaults", do: bfInfo("b"), want: BFInfo{Capacity: 100, Filters: 1, ItemsInserted: 3, ExpansionRate: 2}},
		{name: "BF.RESERVE existing", do: bfReserve("b", 0.01, 100, nil), errs: []error{ErrItemExists}},
		{name: "BF.RESERVE", do: bfReserve("r", 0.001, 1000, nil)},
		{name: "BF.INFO reserved", do: bfInfo("r"), want: BFInfo{Capacity: 1000, Filters: 1, ExpansionRate: 2}},
		{name: "BF.EXISTS reserved", do: bfExists("r", "x"), want: false},
		{name: "BF.RESERVE EXPANSION 4", do: bfReserve("r4", 0.01, 10, &BFReserveOptions{Expansion: 4})},
		{name: "BF.INFO expansion 4", do: bfInfo("r4"), want: BFInfo{Capacity: 10, Filters: 1, ExpansionRate: 4}},
		{name: "BF.RESERVE rate 0", do: bfReserve("bad", 0, 100, nil), errs: invalid},
		{name: "BF.RESERVE rate 1", do: bfReserve("bad", 1, 100, nil), errs: invalid},
		{name: "BF.RESERVE capacity 0", do: bfReserve("bad", 0.01, 0, nil), errs: invalid},
		{name: "BF.RESERVE expansion too big", do: bfReserve("bad", 0.01, 10, &BFReserveOptions{Expansion: 40000}), errs: invalid},
		{name: "BF.RESERVE NONSCALING EXPANSION", do: bfReserve("bad", 0.01, 10, &BFReserveOptions{Expansion: 2, NonScaling: true}), errs: invalid},
		{name: "bad reserves wrote nothing", do: bfExists("bad", "x"), want: false},
		{name: "BF.RESERVE NONSCALING", do: bfReserve("ns", 0.01, 3, &BFReserveOptions{NonScaling: true})},
		{name: "BF.MADD past capacity", do: bfMAdd("ns", "a", "b", "c", "d", "e"), want: []bool{true, true, true}, errs: full},
		{name: "BF.CARD full", do: func(s *Store) (any, error) { return s.BFCard(k("ns")) }, want: int64(3)},
		{name: "the refused item was not written", do: bfExists("ns", "d"), want: false},
		{name: "BF.ADD full", do: bfAdd("ns", "d"), want: false, errs: full},
		{name: "BF.ADD full, present item", do: bfAdd("ns", "a"), want: false},
		{name: "BF.INFO nonscaling", do: bfInfo("ns"), want: BFInfo{Capacity: 3, Filters: 1, ItemsInserted: 3, ExpansionRate: 0}},
		{name: "BF.INSERT NOCREATE missing", do: bfInsert("i", &BFInsertOptions{NoCreate: true}, "a"), errs: []error{sieve.ErrNotFound}},
		{name: "BF.INSERT NOCREATE wrote nothing", do: bfInfo("i"), errs: []error{sieve.ErrNotFound}},
		{name: "BF.INSERT NOCREATE CAPACITY", do: bfInsert("i", &BFInsertOptions{NoCreate: true, Capacity: 5}, "a"), errs: invalid},
		{name: "BF.INSERT bad rate", do: bfInsert("i", &BFInsertOptions{ErrorRate: 2}, "a"), errs: invalid},
		{name: "BF.INSERT geometry", do: bfInsert("i", &BFInsertOptions{Capacity: 500, ErrorRate: 0.001, Expansion: 3}, "a", "b"), want: []bool{true, true}},
		{name: "BF.INFO inserted", do: bfInfo("i"), want: BFInfo{Capacity: 500, Filters: 1, ItemsInserted: 2, ExpansionRate: 3}},
		{name: "BF.INSERT geometry ignored on existing", do: bfInsert("i", &BFInsertOptions{Capacity: 9999}, "c"), want: []bool{true}},
		{name: "BF.INSERT NOCREATE existing", do: bfInsert("i", &BFInsertOptions{NoCreate: true}, "a", "d"), want: []bool{false, true}},
		{name: "BF.INFO after inserts", do: bfInfo("i"), want: BFInfo{Capacity: 500, Filters: 1, ItemsInserted: 4, ExpansionRate: 3}},
		{name: "BF.INSERT NONSCALING full", do: bfInsert("j", &BFInsertOptions{NonScaling: true, Capacity: 2}, "a", "b", "c"), want: []bool{true, true}, errs: full},
		{name: "BF.INSERT no items creates", do: bfInsert("e", nil), want: []bool{}},
		{name: "BF.INFO created by insert", do: bfInfo("e"), want: BFInfo{Capacity: 100, Filters: 1, ExpansionRate: 2}},
		{name: "BF.INSERT nil options", do: bfInsert("e", nil, "q"), want: []bool{true}},
	})

	// INFO's Size is the sub-filters' bits in bytes: at least what the
	// written pages hold.
	for _, key := range []string{"b", "r", "ns", "i"} {
		info, err := s.BFInfo(k(key))
		require.NoError(t, err)
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		pd, err := parsePagedDump(d)
		require.NoError(t, err)
		written := int64(0)
		for _, p := range pd.pages {
			written += int64(len(p))
		}
		require.GreaterOrEqual(t, info.Size, written, key)
	}

	// Scaling: a filter for 10 items stacks a sub-filter of 20, then 40.
	require.NoError(t, s.BFReserve(k("sc"), 0.01, 10, nil))
	_, err := s.BFMAdd(k("sc"), items("sc", 60)...)
	require.NoError(t, err)
	info, err := s.BFInfo(k("sc"))
	require.NoError(t, err)
	require.Equal(t, int64(3), info.Filters)
	require.Equal(t, int64(10+20+40), info.Capacity)
	require.Greater(t, info.ItemsInserted, int64(55), "at most a few false positives among 60")
}
