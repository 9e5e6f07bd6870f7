package sketchcol

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

// HyperLogLog commands through the Store (Redis's PFADD, PFCOUNT,
// PFMERGE), as tables run by runCmds (store_test.go).

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
