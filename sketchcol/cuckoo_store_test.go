package sketchcol

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

// Cuckoo commands through the Store (RedisBloom's CF.*), as tables run
// by runCmds (store_test.go).

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

// TestStoreCF runs the CF.* commands as a table, then fills a
// non-scaling filter and grows a scaling one.
func TestStoreCF(t *testing.T) {
	s := openTestStore(t, nil, nil)
	runCmds(t, s.Store, append(cfAddDelCmds(), cfReserveCmds()...))
	checkCFNonScalingFull(t, s.Store)
	checkCFScalingGrows(t, s.Store)
}

// cfAddDelCmds: CF.ADD, ADDNX, DEL, EXISTS and COUNT on missing and
// present items.
func cfAddDelCmds() []cmd {
	notFound := []error{sieve.ErrNotFound}
	return []cmd{
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
	}
}

// cfReserveCmds: CF.RESERVE and its options, good and bad, and CF.INFO.
func cfReserveCmds() []cmd {
	notFound := []error{sieve.ErrNotFound}
	invalid := []error{ErrInvalidArgument}
	return []cmd{
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
	}
}

// checkCFNonScalingFull: a non-scaling filter fills up; the add that finds
// no room fails and writes nothing, and every item added before still
// exists.
func checkCFNonScalingFull(t *testing.T, s *Store) {
	t.Helper()
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
}

// checkCFScalingGrows: a scaling filter grows; INFO's Size is the stored
// value's length.
func checkCFScalingGrows(t *testing.T, s *Store) {
	t.Helper()
	require.NoError(t, s.CFReserve(k("g"), 8, &CFReserveOptions{BucketSize: 2, Expansion: 2}))
	for _, it := range items("g", 100) {
		ok, err := s.CFAdd(k("g"), it)
		require.NoError(t, err)
		require.True(t, ok)
	}
	for _, key := range []string{"c", "g"} {
		info, err := s.CFInfo(k(key))
		require.NoError(t, err)
		require.GreaterOrEqual(t, info.Size, 40+16*info.NumFilters+info.NumBuckets*info.BucketSize, "RedisBloom's accounting")
	}
	info, err := s.CFInfo(k("g"))
	require.NoError(t, err)
	require.Greater(t, info.NumFilters, int64(1))
	require.Equal(t, int64(100), info.NumItemsInserted)
	for _, it := range items("g", 100) {
		n, err := s.CFCount(k("g"), it)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, int64(1), "no false negative")
	}
}
