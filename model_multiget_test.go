package sieve

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// multiGetStats counts what the model test's MultiGets reached.
type multiGetStats struct {
	calls, keys, found, notFound, dups, onSnap int
}

func (s *multiGetStats) requireReached(t *testing.T) {
	t.Helper()
	t.Logf("multiget: %+v", *s)
	require.Positive(t, s.calls)
	require.Positive(t, s.found)
	require.Positive(t, s.notFound)
	require.Positive(t, s.dups)
	require.Positive(t, s.onSnap)
}

// multiGet reads up to 40 random keys (some repeated) with MultiGet
// through a snapshot — one held by the model or a fresh one — and checks
// every answer against Get on the same snapshot and against the model.
func (r *modelRun) multiGet(i int) {
	t, seed := r.t, r.seed
	t.Helper()
	var s *Snapshot
	var model map[string]string
	for held, sm := range r.m.snaps {
		if r.rng.Intn(2) == 0 {
			s, model = held, sm
			r.mg.onSnap++
		}
		break
	}
	if s == nil {
		s, model = r.db.NewSnapshot(), r.m.cur
		defer s.Close()
	}
	keys := make([][]byte, r.rng.Intn(40))
	seen := map[string]bool{}
	for j := range keys {
		if j > 0 && r.rng.Intn(8) == 0 {
			keys[j] = keys[r.rng.Intn(j)]
		} else {
			keys[j] = []byte(r.key())
		}
		if seen[string(keys[j])] {
			r.mg.dups++
		}
		seen[string(keys[j])] = true
	}
	vals, errs := s.MultiGet(keys)
	require.Len(t, vals, len(keys))
	require.Len(t, errs, len(keys))
	r.mg.calls++
	r.mg.keys += len(keys)
	for j, k := range keys {
		v, err := s.Get(k)
		require.Equal(t, err, errs[j], "op %d key %s: MultiGet and Get disagree (seed %d)", i, k, seed)
		require.Equal(t, string(v), string(vals[j]), "op %d key %s: MultiGet and Get disagree (seed %d)", i, k, seed)
		if want, ok := model[string(k)]; ok {
			require.NoError(t, errs[j], "op %d key %s (seed %d)", i, k, seed)
			require.Equal(t, want, string(vals[j]), "op %d key %s (seed %d)", i, k, seed)
			r.mg.found++
		} else {
			require.ErrorIs(t, errs[j], ErrNotFound, "op %d key %s (seed %d)", i, k, seed)
			r.mg.notFound++
		}
	}
	// The values are the caller's: scribbling on one changes no other
	// answer, a repeated key's included.
	for _, v := range vals {
		for b := range v {
			v[b] = '!'
		}
	}
	vals2, _ := s.MultiGet(keys)
	for j, k := range keys {
		if want, ok := model[string(k)]; ok {
			require.Equal(t, want, string(vals2[j]), "op %d key %s after scribbling (seed %d)", i, k, seed)
		}
	}
}
