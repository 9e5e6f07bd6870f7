package sieve

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// modelPrefixLen is the prefix function of the randomized model: the
// first six bytes ("key012" of "key0123"), ten keys per prefix.
func modelPrefixLen(k []byte) int { return 6 }

// prefixModelStats counts what the model's prefix seeks reached.
type prefixModelStats struct {
	seeks, found, empty, prevs, negatives int64
}

func (s *prefixModelStats) requireReached(t *testing.T) {
	t.Logf("prefix seeks: %d (%d with keys, %d empty, %d Prev checks), %d tables skipped", s.seeks, s.found, s.empty, s.prevs, s.negatives)
	require.Positive(t, s.found, "no prefix seek found keys")
	require.Positive(t, s.empty, "no prefix seek came back empty")
	require.Positive(t, s.prevs, "no Prev after a prefix seek")
	require.Positive(t, s.negatives, "no prefix seek skipped a table by its filter")
}

// modelPrefixKeys returns the model's keys of prefix p within [lo, hi)
// ("" = unbounded), sorted.
func modelPrefixKeys(m map[string]string, p, lo, hi string) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, p) && (lo == "" || k >= lo) && (hi == "" || k < hi) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// prefixSeek runs SeekPrefixGE on a random key (present or not, in a
// present or absent prefix, sometimes under bounds or through a
// snapshot), walks Next to the end of the prefix and Prev back, and
// checks both against a filtered scan of the model.
func (r *modelRun) prefixSeek(i int) {
	t, rng := r.t, r.rng
	k := r.key()
	if rng.Intn(3) == 0 {
		k = fmt.Sprintf("key%d", 150+rng.Intn(850)) + k[6:] // a prefix no key has
	}
	var lo, hi string
	if rng.Intn(4) == 0 {
		lo, hi = r.keyRange()
	}
	model, it := r.m.cur, r.db.NewIter(boundsOpts(lo, hi))
	if s := r.anySnapshot(); s != nil && rng.Intn(4) == 0 {
		require.NoError(t, it.Close())
		model, it = r.m.snaps[s], s.NewIter(boundsOpts(lo, hi))
	}
	defer func() { require.NoError(t, it.Close()) }()
	all := modelPrefixKeys(model, k[:6], lo, hi)
	from := sort.SearchStrings(all, k)
	want := nonNil(all[from:])
	before := r.db.metrics.prefixTotals()
	var got []string
	for ok := it.SeekPrefixGE([]byte(k)); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		require.Equal(t, model[string(it.Key())], string(it.Value()), "op %d SeekPrefixGE(%s) value of %s (seed %d)", i, k, it.Key(), r.seed)
	}
	require.NoError(t, it.Error())
	require.Equal(t, want, nonNil(got), "op %d SeekPrefixGE(%s) in [%q, %q) (seed %d)", i, k, lo, hi, r.seed)
	r.prefix.seeks++
	r.prefix.negatives += r.db.metrics.prefixTotals().Negatives - before.Negatives
	if len(want) == 0 {
		r.prefix.empty++
		return
	}
	r.prefix.found++
	r.prefixPrev(i, it, k, all, from)
}

// prefixPrev checks Prev within the prefix: from a fresh SeekPrefixGE(k)
// at all[from], Prev walks back to the prefix's first key and stops.
func (r *modelRun) prefixPrev(i int, it *Iterator, k string, all []string, from int) {
	t := r.t
	require.True(t, it.SeekPrefixGE([]byte(k)))
	require.Equal(t, all[from], string(it.Key()))
	for j := from - 1; j >= 0; j-- {
		require.True(t, it.Prev(), "op %d Prev to %s after SeekPrefixGE(%s) (seed %d)", i, all[j], k, r.seed)
		require.Equal(t, all[j], string(it.Key()), "op %d (seed %d)", i, r.seed)
	}
	require.False(t, it.Prev(), "op %d Prev left the prefix of %s (seed %d)", i, k, r.seed)
	require.NoError(t, it.Error())
	r.prefix.prevs++
	// A SeekGE ends the confinement: the whole keyspace is back.
	if it.SeekGE([]byte(all[0])) {
		require.Equal(t, all[0], string(it.Key()))
	}
}

func boundsOpts(lo, hi string) *IterOptions {
	if lo == "" && hi == "" {
		return nil
	}
	return &IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// anySnapshot returns one of the model's snapshots, or nil.
func (r *modelRun) anySnapshot() *Snapshot {
	for s := range r.m.snaps {
		return s
	}
	return nil
}
