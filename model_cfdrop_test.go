package sieve

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// modelCF is the model test's extra column family, created, written,
// read and dropped at random; names are reused after a drop.
type modelCF struct {
	h    *ColumnFamily
	db   *DB // the DB h belongs to (a reopen needs a new handle)
	name string
	cur  map[string]string
	// gone lists the names dropped so far.
	gone map[string]bool
	// Counts of what was reached.
	created, recreated, dropped, reads, writes, reopened int
}

func (m *modelCF) requireReached(t *testing.T) {
	t.Helper()
	t.Logf("column family ops: created %d (%d reusing a dropped name), dropped %d, %d reads, %d writes, %d reopened",
		m.created, m.recreated, m.dropped, m.reads, m.writes, m.reopened)
	require.Positive(t, m.dropped)
	require.Positive(t, m.recreated)
	require.Positive(t, m.reopened)
}

// cfOp is one random operation on the extra column family: create it
// (new and empty, also under a dropped name), write to it, check it
// against its model, or drop it and check that its handle fails and
// ColumnFamilies no longer lists it.
func (r *modelRun) cfOp(i int) {
	t, m := r.t, &r.cf
	if m.h == nil {
		m.name = fmt.Sprintf("m%d", r.rng.Intn(2))
		if m.recreated == 0 { // reach the reuse of a dropped name once for sure
			for _, g := range []string{"m0", "m1"} {
				if m.gone[g] {
					m.name = g
					break
				}
			}
		}
		if m.gone[m.name] {
			m.recreated++ // the new family must be empty
		}
		h, err := r.db.OpenColumnFamily(m.name, nil)
		require.NoError(t, err)
		m.h, m.db, m.cur = h, r.db, map[string]string{}
		m.created++
		r.checkCF(i)
		return
	}
	if m.db != r.db {
		h, err := r.db.OpenColumnFamily(m.name, nil)
		require.NoError(t, err)
		m.h, m.db = h, r.db
		m.reopened++
		r.checkCF(i)
	}
	x := r.rng.Intn(10)
	if m.dropped == 0 && m.reads+m.writes >= 12 {
		x = 9 // a drop once for sure (one op in ten by chance alone)
	}
	switch {
	case x < 6:
		for j := r.rng.Intn(20); j >= 0; j-- {
			k := r.key()
			if r.rng.Intn(4) == 0 {
				require.NoError(t, m.h.Delete([]byte(k), nil))
				delete(m.cur, k)
				continue
			}
			v := fmt.Sprintf("cf%d-%d", i, j)
			require.NoError(t, m.h.Put([]byte(k), []byte(v), nil))
			m.cur[k] = v
		}
		m.writes++
	case x < 9:
		r.checkCF(i)
	default:
		require.NoError(t, r.db.DropColumnFamily(m.h))
		_, err := m.h.Get([]byte("k"))
		require.ErrorIs(t, err, ErrColumnFamilyDropped, "op %d (seed %d)", i, r.seed)
		require.ErrorIs(t, m.h.Put([]byte("k"), nil, nil), ErrColumnFamilyDropped)
		require.False(t, slices.Contains(r.db.ColumnFamilies(), m.name), "op %d: dropped family listed (seed %d)", i, r.seed)
		if m.gone == nil {
			m.gone = map[string]bool{}
		}
		m.h, m.gone[m.name] = nil, true
		m.dropped++
	}
}

// checkCF compares the extra family with its model by a scan.
func (r *modelRun) checkCF(i int) {
	t, m := r.t, &r.cf
	require.Contains(t, r.db.ColumnFamilies(), m.name)
	it := m.h.NewIter(nil)
	got := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Close())
	require.Equal(t, m.cur, got, "op %d: family %s (seed %d)", i, m.name, r.seed)
	m.reads++
}
