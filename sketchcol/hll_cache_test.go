package sketchcol

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestHLLCacheExact: PFAdd's cached registers never give a wrong reply.
// Each goroutine owns some keys and runs on them, in sequence, a random
// mix of every write path — PFAdd (reply-bearing, through the cache),
// groups of Deferred.PFAdd committed together,
// PFAddBlind, a Batch's PFAdd and Restore, Restore, Put of a non-sketch,
// Delete, PFMerge — keeping an oracle HLL per key; every PFAdd reply is
// checked against the oracle. Meanwhile the keys of all goroutines share
// the lock stripes and cache budgets (so entries are bumped and evicted
// under each other), and another goroutine compacts and reads. At the
// end every key's value is the oracle's, byte for byte. Run it under
// -race too.
func TestHLLCacheExact(t *testing.T) {
	seed := testutil.Seed(t)
	s := openTestStore(t, nil, nil)
	const goroutines, keysEach = 6, 120
	steps := 3000
	if raceEnabled || testing.Short() {
		steps = 600
	}
	var replies, cached atomic.Int64
	// compaction and reads race with everything
	// (and lock-free prefetches of the cache's hint slots)
	stop := raceCompaction(t, s, 20, func(i int) {
		_, _ = s.PFCount(k(fmt.Sprintf("g0:%d", i%keysEach)))
		s.PrefetchKeys([][]byte{k(fmt.Sprintf("g1:%d", i%keysEach)), k(fmt.Sprintf("g2:%d", i%keysEach))})
	})
	runParallel(goroutines, func(g int) {
		w := &hllWorker{t: t, s: s, g: g, rng: rand.New(rand.NewPCG(uint64(seed), uint64(g))),
			models: make([]hllOracle, keysEach), replies: &replies}
		for step := 0; step < steps && !t.Failed(); step++ {
			w.step(step)
		}
		w.checkValues()
	})
	stop()
	for i := range s.hllCache {
		cached.Add(int64(len(s.hllCache[i].m)))
	}
	hinted := checkHints(t, s.Store)
	t.Logf("%d PFAdd replies checked; %d entries cached at the end, %d of them in the hint table", replies.Load(), cached.Load(), hinted)
	if hinted == 0 {
		t.Fatal("no entry is in the hint table: the hint path was not exercised")
	}
}

// checkHints checks that every entry in s's hint table is cached, in its
// stripe's map under its hash, and in the slot of that hash (dropped
// entries leave the table), and returns how many there are. REQUIRES:
// nothing running on s.
func checkHints(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	for i := range s.hint {
		e := s.hint[i].Load()
		if e == nil {
			continue
		}
		n++
		h := e.hinted.Load()
		switch {
		case h != e.h || s.hint.slot(h) != &s.hint[i]:
			t.Fatalf("hint slot %d holds an entry hinted under %x, hash %x", i, h, e.h)
		case !e.cached:
			t.Fatalf("hint slot %d holds a dropped entry", i)
		case s.hllCache[h%lockStripes].m[h] != e:
			t.Fatalf("hint slot %d holds an entry its stripe's map does not", i)
		}
	}
	return n
}

// raceCompaction runs a goroutine that compacts s every every-th turn and
// calls read(turn) on each, until the returned stop is called.
func raceCompaction(t *testing.T, s *testStore, every int, read func(i int)) (stop func()) {
	var stopped atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stopped.Load(); i++ {
			if i%every == 0 {
				if err := s.db.Compact(nil, nil); err != nil {
					t.Error(err)
					return
				}
			}
			read(i)
		}
	}()
	return func() {
		stopped.Store(true)
		<-done
	}
}

// hllOracle is the oracle of one key of TestHLLCacheExact.
type hllOracle struct {
	h      *HLL // nil: missing
	string bool // holds a non-sketch value
}

// add adds es to m (creating it) and returns PFAdd's expected reply.
func (m *hllOracle) add(es [][]byte) bool {
	want := m.h == nil
	if m.h == nil {
		m.h = NewHLL()
	}
	for _, e := range es {
		if m.h.Add(e) {
			want = true
		}
	}
	return want
}

// hllWorker is one goroutine of TestHLLCacheExact with its keys' oracles.
type hllWorker struct {
	t       *testing.T
	s       *testStore
	g       int
	rng     *rand.Rand
	models  []hllOracle
	replies *atomic.Int64
}

func (w *hllWorker) key(i int) []byte { return k(fmt.Sprintf("g%d:%d", w.g, i)) }

func (w *hllWorker) elems() [][]byte {
	n := w.rng.IntN(6)
	if w.rng.IntN(20) == 0 {
		n = 600 // past the sparse pairs, into a dense entry
	}
	out := make([][]byte, n)
	for j := range out {
		out[j] = fmt.Appendf(nil, "e%d", w.rng.IntN(1<<20))
	}
	return out
}

// step draws a key and a write path and runs it.
func (w *hllWorker) step(step int) {
	t, s := w.t, w.s
	i := w.rng.IntN(len(w.models))
	m := &w.models[i]
	switch op := w.rng.IntN(100); {
	case op < 60:
		w.pfAdd(step, i)
	case op < 64:
		w.deferredGroup(step)
	case op < 70: // blind add
		if m.string {
			return
		}
		es := w.elems()
		require.NoError(t, s.PFAddBlind(w.key(i), es...))
		m.add(es)
	case op < 76:
		w.batch(i)
	case op < 82: // Restore another key's value
		j := w.rng.IntN(len(w.models))
		if w.models[j].h == nil || w.models[j].string {
			return
		}
		require.NoError(t, s.Restore(w.key(i), w.models[j].h.Bytes()))
		*m = hllOracle{h: w.models[j].h.Clone()}
	case op < 86:
		require.NoError(t, s.Delete(w.key(i)))
		*m = hllOracle{}
	case op < 89:
		require.NoError(t, s.Put(w.key(i), []byte{0, 'x'}))
		*m = hllOracle{string: true}
	default:
		w.merge(i)
	}
}

// pfAdd: PFAdd with its reply.
func (w *hllWorker) pfAdd(step, i int) {
	m := &w.models[i]
	es := w.elems()
	got, err := w.s.PFAdd(w.key(i), es...)
	if m.string {
		require.ErrorIs(w.t, err, ErrWrongType)
		return
	}
	require.NoError(w.t, err)
	want := m.add(es)
	require.Equal(w.t, want, got, "goroutine %d step %d: PFAdd(%s) reply", w.g, step, w.key(i))
	w.replies.Add(1)
}

// deferredGroup: a Deferred group of PFAdds on own keys, then Commit.
func (w *hllWorker) deferredGroup(step int) {
	t := w.t
	d := w.s.NewDeferred(w.s.db.NewBatch())
	type want struct {
		i     int
		reply bool
	}
	var wants []want
	var got []bool
	for n := 1 + w.rng.IntN(8); n > 0; n-- {
		j := w.rng.IntN(len(w.models))
		mj := &w.models[j]
		if mj.string {
			continue
		}
		es := w.elems()
		r, created, err := d.PFAdd(w.key(j), es...)
		require.NoError(t, err)
		require.Equal(t, mj.h == nil, created)
		wants = append(wants, want{j, mj.add(es)})
		got = append(got, r)
	}
	require.NoError(t, d.Commit())
	for n, wt := range wants {
		require.Equal(t, wt.reply, got[n], "goroutine %d step %d: Deferred.PFAdd(%s) reply", w.g, step, w.key(wt.i))
		w.replies.Add(1)
	}
}

// batch: a Batch of blind adds and a restore.
func (w *hllWorker) batch(i int) {
	t := w.t
	m := &w.models[i]
	if m.string {
		return
	}
	keysEach := len(w.models)
	b := w.s.NewBatch()
	es := w.elems()
	require.NoError(t, b.PFAdd(w.key(i), es...))
	m.add(es)
	j := w.rng.IntN(keysEach)
	if w.models[j].h != nil && !w.models[j].string && w.rng.IntN(2) == 0 {
		v := w.models[j].h.Bytes()
		require.NoError(t, b.Restore(w.key((j+1)%keysEach), v))
		w.models[(j+1)%keysEach] = hllOracle{h: w.models[j].h.Clone()}
	}
	require.NoError(t, b.Commit(nil))
}

// merge: PFMerge from another key.
func (w *hllWorker) merge(i int) {
	m := &w.models[i]
	j := w.rng.IntN(len(w.models))
	if m.string || w.models[j].string {
		return
	}
	require.NoError(w.t, w.s.PFMerge(w.key(i), w.key(j)))
	if m.h == nil {
		m.h = NewHLL()
	}
	if w.models[j].h != nil {
		m.h.Merge(w.models[j].h)
	}
}

// checkValues: every key's value is its oracle's, byte for byte.
func (w *hllWorker) checkValues() {
	t := w.t
	for i, m := range w.models {
		got, err := w.s.Dump(w.key(i))
		switch {
		case m.string:
			require.ErrorIs(t, err, ErrWrongType)
		case m.h == nil:
			require.Error(t, err)
		default:
			require.NoError(t, err)
			require.Equal(t, m.h.Bytes(), got, "goroutine %d key %d", w.g, i)
		}
	}
}

// TestHLLCacheOffAfterSieve: a Batch whose sieve.Batch is handed out may
// be applied unseen, so the cache turns off and replies stay exact.
func TestHLLCacheOffAfterSieve(t *testing.T) {
	s := openTestStore(t, nil, nil)
	key := k("h")
	ok, err := s.PFAdd(key, k("a"))
	require.NoError(t, err)
	require.True(t, ok)
	b := s.NewBatch()
	require.NoError(t, b.PFAdd(key, k("b")))
	require.NoError(t, s.db.Apply(b.Sieve(), nil)) // around Commit
	ok, err = s.PFAdd(key, k("b"))
	require.NoError(t, err)
	require.False(t, ok, "b was added by the batch applied around Commit")
	ok, err = s.PFAdd(key, k("c"))
	require.NoError(t, err)
	require.True(t, ok)
}

// TestBloomCacheExact: concurrent paged Bloom filters (which the cache
// does not hold; a key's pages are read per command): BFAdd, BFMAdd and
// BFInsert, blind adds, a Batch's adds, Restore, Delete and Put, with
// compaction racing; every reply is checked against an oracle filter
// (PagedBloom), and every Dump at the end.
func TestBloomCacheExact(t *testing.T) {
	seed := testutil.Seed(t)
	s := openTestStore(t, nil, nil)
	const goroutines, keysEach = 4, 40
	steps := 2000
	if raceEnabled || testing.Short() {
		steps = 400
	}
	var replies atomic.Int64
	stop := raceCompaction(t, s, 10, func(i int) { _, _ = s.BFCard(k(fmt.Sprintf("g0:%d", i%keysEach))) })
	runParallel(goroutines, func(g int) {
		w := &bloomWorker{t: t, s: s, g: g, rng: rand.New(rand.NewPCG(uint64(seed), uint64(g))),
			models: make([]*PagedBloom, keysEach), strs: make([]bool, keysEach), replies: &replies}
		for step := 0; step < steps && !t.Failed(); step++ {
			w.step(step)
		}
		w.checkValues()
	})
	stop()
	t.Logf("%d BF replies checked; %d entries in the hint table", replies.Load(), checkHints(t, s.Store))
}

var (
	bloomCacheSpec  = BloomSpec{ErrorRate: 0.01, Capacity: 50, Expansion: 2}
	bloomCacheSmall = BloomSpec{ErrorRate: 0.01, Capacity: 20, NonScaling: true}
)

// bloomWorker is one goroutine of TestBloomCacheExact with its keys'
// oracle filters.
type bloomWorker struct {
	t       *testing.T
	s       *testStore
	g       int
	rng     *rand.Rand
	models  []*PagedBloom // nil: missing
	strs    []bool        // holds a non-sketch value
	replies *atomic.Int64
}

func (w *bloomWorker) key(i int) []byte { return k(fmt.Sprintf("g%d:%d", w.g, i)) }
func (w *bloomWorker) item() []byte     { return fmt.Appendf(nil, "it%d", w.rng.IntN(400)) }

func (w *bloomWorker) newModel(sp BloomSpec) *PagedBloom {
	b, err := NewPagedBloom(sp)
	require.NoError(w.t, err)
	return b
}

// blindModel adds it to key i's oracle as a blind add, creating it.
func (w *bloomWorker) blindModel(i int, it []byte) {
	if w.models[i] == nil {
		w.models[i] = w.newModel(DefaultBloomSpec())
	}
	_, _ = w.models[i].add(it, true)
}

// step draws a key and a write path and runs it.
func (w *bloomWorker) step(step int) {
	t, s := w.t, w.s
	i := w.rng.IntN(len(w.models))
	switch op := w.rng.IntN(100); {
	case op < 55:
		w.mAdd(step, i)
	case op < 62:
		w.insertSmall(step, i)
	case op < 72: // blind adds
		if w.strs[i] {
			return
		}
		it := w.item()
		require.NoError(t, s.BFAddBlind(w.key(i), it))
		w.blindModel(i, it)
	case op < 78: // a Batch's adds
		if w.strs[i] {
			return
		}
		b := s.NewBatch()
		it := w.item()
		require.NoError(t, b.BFAdd(w.key(i), it))
		require.NoError(t, b.Commit(nil))
		w.blindModel(i, it)
	case op < 84:
		w.restoreFrom(i)
	case op < 88:
		w.reserve(i)
	case op < 94:
		require.NoError(t, s.Delete(w.key(i)))
		w.models[i], w.strs[i] = nil, false
	default:
		require.NoError(t, s.Put(w.key(i), []byte{0, 's'}))
		w.models[i], w.strs[i] = nil, true
	}
}

// mAdd: BFMAdd (BFAdd is BFMAdd of one).
func (w *bloomWorker) mAdd(step, i int) {
	t := w.t
	its := make([][]byte, 1+w.rng.IntN(4))
	for j := range its {
		its[j] = w.item()
	}
	got, err := w.s.BFMAdd(w.key(i), its...)
	if w.strs[i] {
		require.ErrorIs(t, err, ErrWrongType)
		return
	}
	if w.models[i] == nil {
		w.models[i] = w.newModel(DefaultBloomSpec())
	}
	want := []bool{}
	var wantErr error
	for _, it := range its {
		a, err := w.models[i].add(it, false)
		if err != nil {
			wantErr = err
			break
		}
		want = append(want, a)
	}
	if wantErr != nil {
		require.ErrorIs(t, err, ErrFilterFull)
	} else {
		require.NoError(t, err)
	}
	require.Equal(t, want, got, "goroutine %d step %d: BFMAdd(%s)", w.g, step, w.key(i))
	w.replies.Add(int64(len(got)))
}

// insertSmall: BFInsert creating a small non-scaling filter (fills up).
func (w *bloomWorker) insertSmall(step, i int) {
	t := w.t
	small := bloomCacheSmall
	its := [][]byte{w.item(), w.item()}
	o := &BFInsertOptions{Capacity: small.Capacity, ErrorRate: small.ErrorRate, NonScaling: true}
	got, err := w.s.BFInsert(w.key(i), o, its...)
	if w.strs[i] {
		require.ErrorIs(t, err, ErrWrongType)
		return
	}
	if w.models[i] == nil {
		w.models[i] = w.newModel(small)
	}
	want := []bool{}
	for _, it := range its {
		a, err := w.models[i].add(it, false)
		if err != nil {
			break
		}
		want = append(want, a)
	}
	if err != nil {
		require.ErrorIs(t, err, ErrFilterFull)
	}
	require.Equal(t, want, got, "goroutine %d step %d: BFInsert(%s)", w.g, step, w.key(i))
}

// restoreFrom: Restore another key's filter.
func (w *bloomWorker) restoreFrom(i int) {
	t := w.t
	j := w.rng.IntN(len(w.models))
	if w.models[j] == nil {
		return
	}
	v := w.models[j].appendValue(nil)
	require.NoError(t, w.s.Restore(w.key(i), v))
	d, err := parsePagedDump(v)
	require.NoError(t, err)
	w.models[i], w.strs[i] = memPagedOf(d), false
}

// reserve: reserve on a missing key.
func (w *bloomWorker) reserve(i int) {
	t, spec := w.t, bloomCacheSpec
	err := w.s.BFReserve(w.key(i), spec.ErrorRate, spec.Capacity, &BFReserveOptions{Expansion: spec.Expansion})
	switch {
	case w.strs[i]:
		require.ErrorIs(t, err, ErrWrongType)
	case w.models[i] != nil:
		require.ErrorIs(t, err, ErrItemExists)
	default:
		require.NoError(t, err)
		w.models[i] = w.newModel(spec)
	}
}

// checkValues: every key's value is its oracle's.
func (w *bloomWorker) checkValues() {
	t := w.t
	for i := range w.models {
		got, err := w.s.Dump(w.key(i))
		switch {
		case w.strs[i]:
			require.ErrorIs(t, err, ErrWrongType)
		case w.models[i] == nil:
			require.Error(t, err)
		default:
			require.NoError(t, err)
			require.Equal(t, w.models[i].appendValue(nil), got, "goroutine %d key %d", w.g, i)
		}
	}
}
