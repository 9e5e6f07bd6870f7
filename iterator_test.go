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

// seekStats counts where checkIterator's seeks landed, so that a test can
// check they exercised the middle of the key range: a SeekGE that lands
// on a key after the first in range, a SeekLT that returns a key.
type seekStats struct {
	seekGE, geInside, geFirst, geExhausted int
	seekLT, ltInside, ltExhausted          int
}

func (s *seekStats) add(o seekStats) {
	s.seekGE += o.seekGE
	s.geInside += o.geInside
	s.geFirst += o.geFirst
	s.geExhausted += o.geExhausted
	s.seekLT += o.seekLT
	s.ltInside += o.ltInside
	s.ltExhausted += o.ltExhausted
}

func (s seekStats) String() string {
	return fmt.Sprintf("SeekGE %d (past the first key %d, on the first %d, exhausted %d), SeekLT %d (returned a key %d, exhausted %d)",
		s.seekGE, s.geInside, s.geFirst, s.geExhausted, s.seekLT, s.ltInside, s.ltExhausted)
}

// requireInside fails unless some SeekGE landed past the first key in
// range and some SeekLT returned a key.
func (s seekStats) requireInside(t *testing.T) {
	t.Helper()
	t.Logf("seeks: %s", s)
	require.Positive(t, s.geInside, "no SeekGE landed past the first key: the seeks miss the key range (%s)", s)
	require.Positive(t, s.ltInside, "no SeekLT returned a key: the seeks miss the key range (%s)", s)
}

// seekTarget draws a seek key from the keys of the model (all of them, not
// only those within the iterator's bounds) and from between them: a key
// itself, a key with a byte appended (just after it), a key with its last
// byte decremented and 0xff appended (just before it), the bounds, and now
// and then a key before or after every key.
func seekTarget(rng *rand.Rand, all []string, lo, hi string) string {
	if len(all) == 0 || rng.Intn(16) == 0 {
		return [...]string{"", "\x00", "\xff\xff", "zzzz", "a", "k"}[rng.Intn(6)]
	}
	k := all[rng.Intn(len(all))]
	switch rng.Intn(8) {
	case 0, 1, 2:
		return k
	case 3, 4:
		return k + string(rune('\x00'+rng.Intn(2)))
	case 5, 6:
		b := []byte(k)
		b[len(b)-1]--
		return string(append(b, 0xff))
	default:
		if rng.Intn(2) == 0 && lo != "" {
			return lo
		}
		if hi != "" {
			return hi
		}
		return k
	}
}

// checkIterator compares a full forward scan, a full backward scan, seeks
// (seekTarget) and a random walk with direction changes against the model,
// and returns where the seeks landed.
func checkIterator(t *testing.T, rng *rand.Rand, it *Iterator, model map[string]string, lo, hi string) seekStats {
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

	all := modelScan(model, "", "")
	var st seekStats
	for i := 0; i < 20; i++ {
		seek := seekTarget(rng, all, lo, hi)
		pos := sort.SearchStrings(keys, seek)
		var ok bool
		if rng.Intn(2) == 0 {
			ok = it.SeekGE([]byte(seek))
			st.seekGE++
			switch {
			case pos >= len(keys):
				st.geExhausted++
			case pos == 0:
				st.geFirst++
			default:
				st.geInside++
			}
		} else {
			ok = it.SeekLT([]byte(seek))
			pos--
			st.seekLT++
			if pos < 0 {
				st.ltExhausted++
			} else {
				st.ltInside++
			}
		}
		for step := 0; step < 12; step++ {
			if pos < 0 || pos >= len(keys) {
				require.False(t, ok, "seek %q step %d: expected exhausted, at %q", seek, step, it.Key())
				break
			}
			require.True(t, ok, "seek %q step %d: expected %s", seek, step, keys[pos])
			require.Equal(t, keys[pos], string(it.Key()), "seek %q step %d", seek, step)
			require.Equal(t, model[keys[pos]], string(it.Value()))
			if rng.Intn(2) == 0 {
				ok, pos = it.Next(), pos+1
			} else {
				ok, pos = it.Prev(), pos-1
			}
		}
	}
	return st
}

// TestIteratorModel drives puts, deletes, merges, flushes and snapshots
// and checks iterators (with random bounds) and snapshot iterators against
// a model.
func TestIteratorModel(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	db, _ := openMem(t, &Options{Merger: appendMerger{}, MemTableSize: 64 << 10, L0CompactionTrigger: 100, L0StopWritesTrigger: 200})
	model := map[string]string{}
	type snap struct {
		s     *Snapshot
		model map[string]string
	}
	var snaps []snap
	var seeks seekStats
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
			seeks.add(checkIterator(t, rng, it, model, lo, hi))
			require.NoError(t, it.Close())
		case r < 87 && len(snaps) > 0:
			s := snaps[rng.Intn(len(snaps))]
			it := s.s.NewIter(nil)
			seeks.add(checkIterator(t, rng, it, s.model, "", ""))
			require.NoError(t, it.Close())
			for kk, want := range s.model {
				v, err := s.s.Get([]byte(kk))
				require.NoError(t, err)
				require.Equal(t, want, string(v))
			}
		}
	}
	it := db.NewIter(nil)
	seeks.add(checkIterator(t, rng, it, model, "", ""))
	require.NoError(t, it.Close())
	seeks.requireInside(t)
	var n int
	all := db.NewIter(nil)
	for k, v := range all.All() {
		require.Equal(t, model[string(k)], string(v))
		n++
	}
	require.NoError(t, all.Close())
	require.Equal(t, len(model), n)
	for _, s := range snaps {
		require.NoError(t, s.s.Close())
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
