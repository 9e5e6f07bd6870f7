package sieve

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// modelScan returns the model's keys in [lo, hi), sorted.
func modelScan(model map[string]string, lo, hi string) []string {
	var keys []string
	for k := range model {
		if (lo == "" || k >= lo) && (hi == "" || k < hi) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// checkIterator compares a full forward scan, a full backward scan, seeks
// and a random walk with direction changes against the model.
func checkIterator(t *testing.T, rng *rand.Rand, it *Iterator, model map[string]string, lo, hi string) {
	t.Helper()
	keys := modelScan(model, lo, hi)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		require.Equal(t, model[string(it.Key())], string(it.Value()), "value of %s", it.Key())
	}
	require.NoError(t, it.Error())
	require.Equal(t, keys, got, "forward scan [%q,%q)", lo, hi)
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
		require.Equal(t, model[string(it.Key())], string(it.Value()))
	}
	rev := slices.Clone(keys)
	slices.Reverse(rev)
	if len(rev) == 0 {
		rev = nil
	}
	if len(got) == 0 {
		got = nil
	}
	require.Equal(t, rev, got, "backward scan")

	for i := 0; i < 20; i++ {
		seek := fmt.Sprintf("k%03d", rng.Intn(220))
		pos := sort.SearchStrings(keys, seek)
		var ok bool
		if rng.Intn(2) == 0 {
			ok = it.SeekGE([]byte(seek))
		} else {
			ok = it.SeekLT([]byte(seek))
			pos--
		}
		for step := 0; step < 12; step++ {
			if pos < 0 || pos >= len(keys) {
				require.False(t, ok, "seek %s step %d: expected exhausted, at %q", seek, step, it.Key())
				break
			}
			require.True(t, ok, "seek %s step %d: expected %s", seek, step, keys[pos])
			require.Equal(t, keys[pos], string(it.Key()))
			require.Equal(t, model[keys[pos]], string(it.Value()))
			if rng.Intn(2) == 0 {
				ok, pos = it.Next(), pos+1
			} else {
				ok, pos = it.Prev(), pos-1
			}
		}
	}
}

// TestIteratorModel drives puts, deletes, merges, flushes and snapshots
// and checks iterators (with random bounds) and snapshot iterators against
// a model.
func TestIteratorModel(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	db, _ := openMem(t, &Options{Merger: appendMerger{}, MemTableSize: 64 << 10, L0CompactionTrigger: 100, L0StopWritesTrigger: 200})
	defer db.Close()
	model := map[string]string{}
	type snap struct {
		s     *Snapshot
		model map[string]string
	}
	var snaps []snap
	for i := 0; i < 6000; i++ {
		k := fmt.Sprintf("k%03d", rng.Intn(200))
		switch r := rng.Intn(100); {
		case r < 45:
			v := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", rng.Intn(50)))
			require.NoError(t, db.Put([]byte(k), []byte(v), nil))
			model[k] = v
		case r < 60:
			require.NoError(t, db.Delete([]byte(k), nil))
			delete(model, k)
		case r < 80:
			op := fmt.Sprintf("m%d", i)
			require.NoError(t, db.Merge([]byte(k), []byte(op), nil))
			if v, ok := model[k]; ok && v != "" {
				model[k] = v + "," + op
			} else {
				model[k] = op
			}
		case r < 82:
			require.NoError(t, db.Flush())
		case r < 84:
			if len(snaps) < 4 {
				snaps = append(snaps, snap{db.NewSnapshot(), maps(model)})
			} else {
				j := rng.Intn(len(snaps))
				require.NoError(t, snaps[j].s.Close())
				snaps = append(snaps[:j], snaps[j+1:]...)
			}
		case r < 86:
			lo, hi := fmt.Sprintf("k%03d", rng.Intn(210)), fmt.Sprintf("k%03d", rng.Intn(210))
			if rng.Intn(4) == 0 {
				lo = ""
			}
			if rng.Intn(4) == 0 {
				hi = ""
			}
			if lo != "" && hi != "" && lo > hi {
				lo, hi = hi, lo
			}
			it := db.NewIter(&IterOptions{LowerBound: bytesOrNil(lo), UpperBound: bytesOrNil(hi)})
			checkIterator(t, rng, it, model, lo, hi)
			require.NoError(t, it.Close())
		case r < 87 && len(snaps) > 0:
			s := snaps[rng.Intn(len(snaps))]
			it := s.s.NewIter(nil)
			checkIterator(t, rng, it, s.model, "", "")
			require.NoError(t, it.Close())
			for kk, want := range s.model {
				v, err := s.s.Get([]byte(kk))
				require.NoError(t, err)
				require.Equal(t, want, string(v))
			}
		}
	}
	it := db.NewIter(nil)
	checkIterator(t, rng, it, model, "", "")
	require.NoError(t, it.Close())
	var n int
	all := db.NewIter(nil)
	for k, v := range all.All() {
		require.Equal(t, model[string(k)], string(v))
		n++
	}
	require.NoError(t, all.Close())
	require.Equal(t, len(model), n)
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
