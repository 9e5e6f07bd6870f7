package sketchcol

import (
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// The harness of the Store's command tests on an in-memory DB: a table of
// commands run in order on one Store, each checked for its reply and error.
// The tables themselves — Redis's semantics for PFADD/PFCOUNT/PFMERGE,
// RedisBloom's for BF.* and CF.* (replies, errors, defaults, INFO fields) —
// are in hll_store_test.go, bloom_store_test.go and cuckoo_store_test.go.

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
