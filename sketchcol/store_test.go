package sketchcol

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// Command semantics through the Store on an in-memory DB: Redis's for
// PFADD/PFCOUNT/PFMERGE, RedisBloom's for BF.* and CF.* (replies, errors,
// defaults, INFO fields), as tables of commands run in order on one
// Store.

// countingMerger is the sketch merger counting its FullMerge calls, so a
// test can tell a read served from a stored value from one that merged.
type countingMerger struct {
	Merger
	fullMerges atomic.Int64
}

func (m *countingMerger) FullMerge(key, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	m.fullMerges.Add(1)
	return m.Merger.FullMerge(key, base, hasBase, ops)
}

// testStore is a Store on a fresh in-memory DB.
type testStore struct {
	*Store
	db     *sieve.DB
	fs     *vfs.MemFS
	merger *countingMerger
}

func openTestStore(t testing.TB, dbOpts *sieve.Options, o *StoreOptions) *testStore {
	t.Helper()
	var opts sieve.Options
	if dbOpts != nil {
		opts = *dbOpts
	}
	fs, _ := opts.FS.(*vfs.MemFS)
	if fs == nil {
		fs = vfs.NewMem()
		opts.FS = fs
	}
	db, err := sieve.Open("/db", &opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var so StoreOptions
	if o != nil {
		so = *o
	}
	m := &countingMerger{}
	so.merger = m
	s, err := OpenWithOptions(db, &so)
	require.NoError(t, err)
	return &testStore{Store: s, db: db, fs: fs, merger: m}
}

// cmd is one command of a table: what it does, and its expected reply or
// error (checked with errors.Is; several must all match).
type cmd struct {
	name string
	do   func(s *Store) (any, error)
	want any
	errs []error
}

func k(s string) []byte { return []byte(s) }

func ks(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func runCmds(t *testing.T, s *Store, cmds []cmd) {
	t.Helper()
	for i, c := range cmds {
		got, err := c.do(s)
		if len(c.errs) > 0 {
			for _, e := range c.errs {
				require.ErrorIs(t, err, e, "step %d: %s", i, c.name)
			}
		} else {
			require.NoError(t, err, "step %d: %s", i, c.name)
		}
		if c.want != nil {
			require.Equal(t, c.want, got, "step %d: %s", i, c.name)
		}
	}
}

func pfAdd(key string, elems ...string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.PFAdd(k(key), ks(elems...)...) }
}

func pfCount(keys ...string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.PFCount(ks(keys...)...) }
}

func pfMerge(dst string, srcs ...string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return nil, s.PFMerge(k(dst), ks(srcs...)...) }
}

func TestStorePF(t *testing.T) {
	s := openTestStore(t, nil, nil)
	emptyHLL := NewHLL().Bytes()
	runCmds(t, s.Store, []cmd{
		{name: "PFCOUNT missing", do: pfCount("h"), want: int64(0)},
		{name: "PFADD no elements creates", do: pfAdd("h"), want: true},
		{name: "PFADD no elements on existing", do: pfAdd("h"), want: false},
		{name: "PFCOUNT empty", do: pfCount("h"), want: int64(0)},
		{name: "PFADD a b c", do: pfAdd("h", "a", "b", "c"), want: true},
		{name: "PFADD a again", do: pfAdd("h", "a"), want: false},
		{name: "PFADD a b c again", do: pfAdd("h", "c", "b", "a"), want: false},
		{name: "PFCOUNT", do: pfCount("h"), want: int64(3)},
		{name: "PFADD h2", do: pfAdd("h2", "c", "d"), want: true},
		{name: "PFCOUNT union", do: pfCount("h", "h2"), want: int64(4)},
		{name: "PFCOUNT union with missing", do: pfCount("h", "nope"), want: int64(3)},
		{name: "PFCOUNT no keys", do: pfCount(), errs: []error{ErrInvalidArgument}},
		{name: "PFMERGE into new", do: pfMerge("m", "h", "h2")},
		{name: "PFCOUNT merged", do: pfCount("m"), want: int64(4)},
		{name: "PFMERGE dst is a source", do: pfMerge("m", "nope")},
		{name: "PFCOUNT merged again", do: pfCount("m"), want: int64(4)},
		{name: "PFMERGE nothing creates empty", do: pfMerge("e")},
		{name: "DUMP empty", do: func(s *Store) (any, error) { return s.Dump(k("e")) }, want: emptyHLL},
		{name: "DUMP missing", do: func(s *Store) (any, error) { return s.Dump(k("nope")) }, errs: []error{sieve.ErrNotFound}},
	})
	// Blind adds answer nothing and count the same.
	for i := range 100 {
		require.NoError(t, s.PFAddBlind(k("b"), fmt.Appendf(nil, "x%d", i)))
	}
	n, err := s.PFCount(k("b"))
	require.NoError(t, err)
	h := NewHLL()
	for i := range 100 {
		h.Add(fmt.Appendf(nil, "x%d", i))
	}
	require.Equal(t, h.Count(), n)
	d, err := s.Dump(k("b"))
	require.NoError(t, err)
	require.Equal(t, h.Bytes(), d)
}

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

	// INFO's Size is the stored value's length.
	for _, key := range []string{"b", "r", "ns", "i"} {
		info, err := s.BFInfo(k(key))
		require.NoError(t, err)
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		require.Equal(t, int64(len(d)), info.Size, key)
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

func cfAdd(key, item string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.CFAdd(k(key), k(item)) }
}

func cfAddNX(key, item string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.CFAddNX(k(key), k(item)) }
}

func cfDel(key, item string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.CFDel(k(key), k(item)) }
}

func cfExists(key, item string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.CFExists(k(key), k(item)) }
}

func cfCount(key, item string) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return s.CFCount(k(key), k(item)) }
}

func cfReserve(key string, capacity int64, o *CFReserveOptions) func(*Store) (any, error) {
	return func(s *Store) (any, error) { return nil, s.CFReserve(k(key), capacity, o) }
}

func cfInfo(key string) func(*Store) (any, error) {
	return func(s *Store) (any, error) {
		info, err := s.CFInfo(k(key))
		info.Size = 0
		return info, err
	}
}

func TestStoreCF(t *testing.T) {
	s := openTestStore(t, nil, nil)
	notFound := []error{sieve.ErrNotFound}
	invalid := []error{ErrInvalidArgument}
	runCmds(t, s.Store, []cmd{
		{name: "CF.EXISTS missing", do: cfExists("c", "x"), want: false},
		{name: "CF.COUNT missing", do: cfCount("c", "x"), want: int64(0)},
		{name: "CF.INFO missing", do: cfInfo("c"), errs: notFound},
		{name: "CF.DEL missing", do: cfDel("c", "x"), want: false, errs: notFound},
		{name: "CF.ADD creates", do: cfAdd("c", "x"), want: true},
		{name: "CF.ADD duplicate", do: cfAdd("c", "x"), want: true},
		{name: "CF.COUNT 2", do: cfCount("c", "x"), want: int64(2)},
		{name: "CF.ADDNX present", do: cfAddNX("c", "x"), want: false},
		{name: "CF.COUNT still 2", do: cfCount("c", "x"), want: int64(2)},
		{name: "CF.ADDNX absent", do: cfAddNX("c", "y"), want: true},
		{name: "CF.EXISTS y", do: cfExists("c", "y"), want: true},
		{name: "CF.DEL x", do: cfDel("c", "x"), want: true},
		{name: "CF.COUNT 1", do: cfCount("c", "x"), want: int64(1)},
		{name: "CF.EXISTS after one delete", do: cfExists("c", "x"), want: true},
		{name: "CF.DEL x again", do: cfDel("c", "x"), want: true},
		{name: "CF.EXISTS after deletes", do: cfExists("c", "x"), want: false},
		{name: "CF.DEL absent", do: cfDel("c", "x"), want: false},
		{name: "CF.EXISTS y survives", do: cfExists("c", "y"), want: true},
		{name: "CF.INFO defaults", do: cfInfo("c"), want: CFInfo{NumBuckets: 512, NumFilters: 1, NumItemsInserted: 1, NumItemsDeleted: 2, BucketSize: 2, ExpansionRate: 1, MaxIteration: 20}},
		{name: "CF.RESERVE existing", do: cfReserve("c", 100, nil), errs: []error{ErrItemExists}},
		{name: "CF.RESERVE options", do: cfReserve("r", 1000, &CFReserveOptions{BucketSize: 4, MaxIterations: 50, Expansion: 3})},
		{name: "CF.INFO reserved", do: cfInfo("r"), want: CFInfo{NumBuckets: 256, NumFilters: 1, BucketSize: 4, ExpansionRate: 4, MaxIteration: 50}},
		{name: "CF.RESERVE capacity < 2 × bucket", do: cfReserve("bad", 3, nil), errs: invalid},
		{name: "CF.RESERVE bucket 256", do: cfReserve("bad", 1000, &CFReserveOptions{BucketSize: 256}), errs: invalid},
		{name: "CF.RESERVE expansion too big", do: cfReserve("bad", 1000, &CFReserveOptions{Expansion: 40000}), errs: invalid},
		{name: "CF.RESERVE NonScaling with Expansion", do: cfReserve("bad", 1000, &CFReserveOptions{Expansion: 2, NonScaling: true}), errs: invalid},
		{name: "bad reserves wrote nothing", do: cfInfo("bad"), errs: notFound},
		{name: "CF.RESERVE EXPANSION 0", do: cfReserve("ns", 4, &CFReserveOptions{BucketSize: 1, NonScaling: true})},
		{name: "CF.INFO expansion 0", do: cfInfo("ns"), want: CFInfo{NumBuckets: 4, NumFilters: 1, BucketSize: 1, ExpansionRate: 0, MaxIteration: 20}},
		{name: "CF.ADDNX creates", do: cfAddNX("n", "x"), want: true},
		{name: "CF.INFO created by ADDNX", do: cfInfo("n"), want: CFInfo{NumBuckets: 512, NumFilters: 1, NumItemsInserted: 1, BucketSize: 2, ExpansionRate: 1, MaxIteration: 20}},
	})

	// A non-scaling filter fills up; the add that finds no room fails and
	// writes nothing, and every item added before still exists.
	var added []string
	for i := 0; ; i++ {
		item := fmt.Sprint("f", i)
		ok, err := s.CFAdd(k("ns"), k(item))
		if err != nil {
			require.ErrorIs(t, err, ErrFilterFull)
			require.False(t, ok)
			break
		}
		require.True(t, ok)
		added = append(added, item)
		require.Less(t, i, 10, "4 one-slot buckets hold at most 4 items")
	}
	require.NotEmpty(t, added)
	info, err := s.CFInfo(k("ns"))
	require.NoError(t, err)
	require.Equal(t, int64(len(added)), info.NumItemsInserted)
	require.Zero(t, info.ItemsDropped)
	for _, it := range added {
		ok, err := s.CFExists(k("ns"), k(it))
		require.NoError(t, err)
		require.True(t, ok, it)
	}

	// A scaling filter grows; INFO's Size is the stored value's length.
	require.NoError(t, s.CFReserve(k("g"), 8, &CFReserveOptions{BucketSize: 2, Expansion: 2}))
	for _, it := range items("g", 100) {
		ok, err := s.CFAdd(k("g"), it)
		require.NoError(t, err)
		require.True(t, ok)
	}
	for _, key := range []string{"c", "g"} {
		info, err := s.CFInfo(k(key))
		require.NoError(t, err)
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		require.Equal(t, int64(len(d)), info.Size)
	}
	info, err = s.CFInfo(k("g"))
	require.NoError(t, err)
	require.Greater(t, info.NumFilters, int64(1))
	require.Equal(t, int64(100), info.NumItemsInserted)
	for _, it := range items("g", 100) {
		n, err := s.CFCount(k("g"), it)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, int64(1), "no false negative")
	}
}
