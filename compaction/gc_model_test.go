package compaction

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// resolveAt returns what a reader at seq r sees for one user key whose
// versions (newest first) are given: the value, whether one exists, and the
// merger's error if resolving the operand stack fails.
func resolveAt(ukey []byte, versions []entry, r uint64, m Merger) (value string, found bool, err error) {
	var ops [][]byte // newest first
	finish := func(b []byte, hasBase bool) (string, bool, error) {
		if len(ops) == 0 {
			return string(b), hasBase, nil
		}
		oldest := make([][]byte, len(ops))
		for i, op := range ops {
			oldest[len(ops)-1-i] = op
		}
		v, err := m.FullMerge(ukey, b, hasBase, oldest)
		return string(v), err == nil, err
	}
	for _, v := range versions {
		if v.key.SeqNum() > r {
			continue
		}
		switch v.key.Kind() {
		case base.KindSet:
			return finish(v.value, true)
		case base.KindDelete:
			return finish(nil, false)
		case base.KindMerge:
			ops = append(ops, v.value)
		}
	}
	return finish(nil, false)
}

// byUserKey groups sorted entries by user key.
func byUserKey(es []entry) map[string][]entry {
	out := map[string][]entry{}
	for _, e := range es {
		out[string(e.key.UserKey)] = append(out[string(e.key.UserKey)], e)
	}
	return out
}

type gcScenario struct {
	input     []entry  // the compaction's input, sorted
	below     []entry  // older data in levels below the output, sorted
	snapshots []uint64 // sorted
	maxSeq    uint64
	badKeys   map[string]bool // keys with an operand the counter merger rejects
}

func randomValue(rng *rand.Rand, mergerName string, seq uint64, sc *gcScenario, ukey string) []byte {
	if mergerName == "counter" {
		if rng.Intn(40) == 0 {
			sc.badKeys[ukey] = true
			return []byte("x")
		}
		return []byte(strconv.Itoa(rng.Intn(10)))
	}
	return []byte(fmt.Sprintf("<%d>", seq))
}

// randomScenario writes a random history of nOps writes over a few keys;
// for some keys the oldest writes live below the output level.
func randomScenario(rng *rand.Rand, mergerName string, withSnapshots bool) *gcScenario {
	sc := &gcScenario{badKeys: map[string]bool{}}
	nKeys := 1 + rng.Intn(6)
	nOps := rng.Intn(80)
	cut := uint64(rng.Intn(nOps + 1))
	belowKeys := map[string]bool{}
	for k := 0; k < nKeys; k++ {
		if rng.Intn(2) == 0 {
			belowKeys[fmt.Sprintf("k%d", k)] = true
		}
	}
	weights := []base.Kind{base.KindSet, base.KindDelete, base.KindMerge, base.KindMerge, base.KindMerge}
	for seq := uint64(1); seq <= uint64(nOps); seq++ {
		ukey := fmt.Sprintf("k%d", rng.Intn(nKeys))
		kind := weights[rng.Intn(len(weights))]
		e := entry{key: base.MakeInternalKey([]byte(ukey), seq, kind)}
		if kind != base.KindDelete {
			e.value = randomValue(rng, mergerName, seq, sc, ukey)
		}
		if seq <= cut && belowKeys[ukey] {
			sc.below = append(sc.below, e)
		} else {
			sc.input = append(sc.input, e)
		}
		sc.maxSeq = seq
	}
	if withSnapshots {
		for n := rng.Intn(5); n > 0; n-- {
			sc.snapshots = append(sc.snapshots, uint64(rng.Intn(nOps+2)))
		}
		sort.Slice(sc.snapshots, func(i, j int) bool { return sc.snapshots[i] < sc.snapshots[j] })
	}
	sortEntries(sc.input)
	sortEntries(sc.below)
	return sc
}

func stripeOf(snapshots []uint64, seq uint64) int {
	return sort.Search(len(snapshots), func(j int) bool { return snapshots[j] >= seq })
}

// TestGCModel checks the compaction iterator against a brute-force model:
// for every open snapshot and for the latest state, every key reads the
// same (merged with the merger) before and after compaction. It also
// checks that the output is well formed and that the garbage is actually
// collected.
func TestGCModel(t *testing.T) {
	for _, mergerName := range []string{"none", "append", "append-refuse-odd", "counter"} {
		for _, withSnapshots := range []bool{false, true} {
			t.Run(fmt.Sprintf("merger=%s/snapshots=%v", mergerName, withSnapshots), func(t *testing.T) {
				rng := rand.New(rand.NewSource(testutil.Seed(t)))
				for trial := 0; trial < trials(1000); trial++ {
					sc := randomScenario(rng, mergerName, withSnapshots)
					checkGC(t, trial, sc, mergerName)
				}
			})
		}
	}
}

func checkGC(t *testing.T, trial int, sc *gcScenario, mergerName string) {
	m, err := mergerByName(mergerName)
	require.NoError(t, err)
	below := byUserKey(sc.below)
	elide := func(ukey []byte) bool { return len(below[string(ukey)]) == 0 }
	it := NewIter(newSliceIter(sc.input), GCOptions{Snapshots: sc.snapshots, ElideTombstone: elide, Merger: m})
	out := collect(t, it)
	require.NoError(t, it.Close())
	desc := func() string {
		return fmt.Sprintf("trial %d, snapshots %v\ninput: %s\nbelow: %s\noutput: %s", trial, sc.snapshots,
			formatByUserKey(sc.input), formatByUserKey(sc.below), formatByUserKey(out))
	}
	st := it.Stats()
	if st.EntriesIn != int64(len(sc.input)) || st.EntriesOut != int64(len(out)) {
		t.Fatalf("stats %+v for %d entries in, %d out\n%s", st, len(sc.input), len(out), desc())
	}
	for i := 1; i < len(out); i++ {
		if base.CompareInternal(out[i-1].key, out[i].key) >= 0 {
			t.Fatalf("output out of order\n%s", desc())
		}
	}

	// Reads resolve with a merger; without one, operands were carried
	// through, so any merger gives the same answers before and after.
	rm := m
	if rm == nil {
		rm = appendMerger{}
	}
	readers := append(append([]uint64(nil), sc.snapshots...), sc.maxSeq)
	before, after := byUserKey(sc.input), byUserKey(out)
	for ukey, in := range before {
		hist := func(es []entry) []entry { return append(append([]entry(nil), es...), below[ukey]...) }
		for _, r := range readers {
			v1, ok1, err1 := resolveAt([]byte(ukey), hist(in), r, rm)
			v2, ok2, err2 := resolveAt([]byte(ukey), hist(after[ukey]), r, rm)
			if (err1 != nil) != (err2 != nil) || ok1 != ok2 || v1 != v2 {
				t.Fatalf("key %s at seq %d: before (%q, %v, %v), after (%q, %v, %v)\n%s",
					ukey, r, v1, ok1, err1, v2, ok2, err2, desc())
			}
		}
	}
	for ukey := range after {
		if _, ok := before[ukey]; !ok {
			t.Fatalf("key %s appeared from nowhere\n%s", ukey, desc())
		}
	}
	checkCollected(t, sc, mergerName, before, after, elide, desc)
}

// checkCollected checks that the garbage is gone: at most one entry per
// snapshot stripe once merged, no tombstone that hides nothing.
func checkCollected(t *testing.T, sc *gcScenario, mergerName string, before, after map[string][]entry,
	elide func([]byte) bool, desc func() string) {
	for ukey, out := range after {
		if n := len(out); n > 0 && out[n-1].key.Kind() == base.KindDelete && elide([]byte(ukey)) {
			t.Fatalf("key %s: a tombstone that hides nothing survived\n%s", ukey, desc())
		}
		stripes := map[int]bool{}
		for _, e := range before[ukey] {
			stripes[stripeOf(sc.snapshots, e.key.SeqNum())] = true
		}
		switch {
		case mergerName == "none":
			// Per stripe: operands, then at most one Set or Delete.
			perStripe := map[int]int{}
			for _, e := range out {
				s := stripeOf(sc.snapshots, e.key.SeqNum())
				if e.key.Kind() != base.KindMerge {
					perStripe[s]++
					if perStripe[s] > 1 {
						t.Fatalf("key %s: two Sets/Deletes in one stripe\n%s", ukey, desc())
					}
				}
			}
		case mergerName == "append-refuse-odd" || sc.badKeys[ukey]:
		default:
			if len(out) > len(stripes) {
				t.Fatalf("key %s: %d entries for %d stripes\n%s", ukey, len(out), len(stripes), desc())
			}
			if len(sc.snapshots) == 0 && elide([]byte(ukey)) && len(out) == 1 && out[0].key.Kind() != base.KindSet {
				t.Fatalf("key %s: not fully merged\n%s", ukey, desc())
			}
		}
	}
}

// TestGCInputErrors: the input's error stops the iterator and is
// reported; an input out of order is corruption.
func TestGCInputErrors(t *testing.T) {
	es, err := parseEntries([]string{"a.SET.3:x", "b.SET.2:y", "c.SET.1:z"})
	require.NoError(t, err)
	s := newSliceIter(es)
	s.failAt = 3
	it := NewIter(s, GCOptions{})
	require.True(t, it.First())
	require.False(t, it.Next())
	require.ErrorIs(t, it.Error(), errInjected)
	require.ErrorIs(t, it.Close(), errInjected)

	for _, bad := range [][]string{
		{"b.SET.3:x", "a.SET.2:y"},
		{"a.SET.3:x", "a.SET.3:y"},
		{"a.SET.3:x", "a.SET.4:y"},
	} {
		es, err := parseEntries(bad)
		require.NoError(t, err)
		it := NewIter(newSliceIter(es), GCOptions{})
		for ok := it.First(); ok; ok = it.Next() {
		}
		require.ErrorIs(t, it.Error(), base.ErrCorruption, "%v", bad)
		require.ErrorIs(t, it.Close(), base.ErrCorruption)
	}

	it = NewIter(newSliceIter([]entry{{key: base.InternalKey{UserKey: []byte("a"), Trailer: base.MakeTrailer(1, 7)}}}), GCOptions{})
	require.False(t, it.First())
	require.ErrorIs(t, it.Error(), base.ErrCorruption)
}

// scribbleIter hands out copies of its input's keys and values and
// scribbles over the previous ones when it moves, as a block iterator
// reusing its buffers would.
type scribbleIter struct {
	base.InternalIterator
	key base.InternalKey
	val []byte
}

func (s *scribbleIter) settle(ok bool) bool {
	for i := range s.key.UserKey {
		s.key.UserKey[i] = '!'
	}
	for i := range s.val {
		s.val[i] = '!'
	}
	if ok {
		s.key = s.InternalIterator.Key().Clone()
		s.val = append([]byte(nil), s.InternalIterator.Value()...)
	}
	return ok
}

func (s *scribbleIter) First() bool           { return s.settle(s.InternalIterator.First()) }
func (s *scribbleIter) Next() bool            { return s.settle(s.InternalIterator.Next()) }
func (s *scribbleIter) Key() base.InternalKey { return s.key }
func (s *scribbleIter) Value() []byte         { return s.val }

// TestGCOutputStable: Key and Value stay valid until Next and do not
// alias the input, whose buffers change as it moves.
func TestGCOutputStable(t *testing.T) {
	es, err := parseEntries([]string{"a.SET.3:x", "a.SET.2:y", "b.MERGE.5:p", "b.MERGE.4:q", "b.MERGE.3:r", "c.DEL.1", "d.SET.1:z"})
	require.NoError(t, err)
	sortEntries(es)
	it := NewIter(&scribbleIter{InternalIterator: newSliceIter(es)}, GCOptions{Merger: appendMerger{}, Snapshots: []uint64{4}})
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, formatEntry(it.Key(), it.Value()))
	}
	require.NoError(t, it.Close())
	require.Equal(t, "a.SET.3:x b.MERGE.5:p b.MERGE.4:rq c.DEL.1 d.SET.1:z", strings.Join(got, " "))
}
