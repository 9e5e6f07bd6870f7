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
	var stop atomic.Bool
	var replies, cached atomic.Int64
	done := make(chan struct{})
	go func() { // compaction and reads race with everything
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			if i%20 == 0 {
				if err := s.db.Compact(nil, nil); err != nil {
					t.Error(err)
					return
				}
			}
			_, _ = s.PFCount(k(fmt.Sprintf("g0:%d", i%keysEach)))
		}
	}()
	type model struct {
		h      *HLL // nil: missing
		string bool // holds a non-sketch value
	}
	runParallel(goroutines, func(g int) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
		models := make([]model, keysEach)
		key := func(i int) []byte { return k(fmt.Sprintf("g%d:%d", g, i)) }
		elems := func() [][]byte {
			n := rng.IntN(6)
			if rng.IntN(20) == 0 {
				n = 600 // past the sparse pairs, into a dense entry
			}
			out := make([][]byte, n)
			for j := range out {
				out[j] = fmt.Appendf(nil, "e%d", rng.IntN(1<<20))
			}
			return out
		}
		for step := 0; step < steps && !t.Failed(); step++ {
			i := rng.IntN(keysEach)
			m := &models[i]
			switch op := rng.IntN(100); {
			case op < 60: // PFAdd with its reply
				es := elems()
				got, err := s.PFAdd(key(i), es...)
				if m.string {
					require.ErrorIs(t, err, ErrWrongType)
					continue
				}
				require.NoError(t, err)
				want := m.h == nil
				if m.h == nil {
					m.h = NewHLL()
				}
				for _, e := range es {
					if m.h.Add(e) {
						want = true
					}
				}
				require.Equal(t, want, got, "goroutine %d step %d: PFAdd(%s) reply", g, step, key(i))
				replies.Add(1)
			case op < 64: // a Deferred group of PFAdds on own keys, then Commit
				d := s.NewDeferred(s.db.NewBatch())
				type want struct {
					i     int
					reply bool
				}
				var wants []want
				var got []bool
				for n := 1 + rng.IntN(8); n > 0; n-- {
					j := rng.IntN(keysEach)
					mj := &models[j]
					if mj.string {
						continue
					}
					es := elems()
					r, created, err := d.PFAdd(key(j), es...)
					require.NoError(t, err)
					require.Equal(t, mj.h == nil, created)
					w := mj.h == nil
					if mj.h == nil {
						mj.h = NewHLL()
					}
					for _, e := range es {
						if mj.h.Add(e) {
							w = true
						}
					}
					wants = append(wants, want{j, w})
					got = append(got, r)
				}
				require.NoError(t, d.Commit())
				for n, w := range wants {
					require.Equal(t, w.reply, got[n], "goroutine %d step %d: Deferred.PFAdd(%s) reply", g, step, key(w.i))
					replies.Add(1)
				}
			case op < 70: // blind add
				if m.string {
					continue
				}
				es := elems()
				require.NoError(t, s.PFAddBlind(key(i), es...))
				if m.h == nil {
					m.h = NewHLL()
				}
				for _, e := range es {
					m.h.Add(e)
				}
			case op < 76: // a Batch of blind adds and a restore
				if m.string {
					continue
				}
				b := s.NewBatch()
				es := elems()
				require.NoError(t, b.PFAdd(key(i), es...))
				if m.h == nil {
					m.h = NewHLL()
				}
				for _, e := range es {
					m.h.Add(e)
				}
				j := rng.IntN(keysEach)
				if models[j].h != nil && !models[j].string && rng.IntN(2) == 0 {
					v := models[j].h.Bytes()
					require.NoError(t, b.Restore(key((j+1)%keysEach), v))
					models[(j+1)%keysEach] = model{h: models[j].h.Clone()}
				}
				require.NoError(t, b.Commit(nil))
			case op < 82: // Restore another key's value
				j := rng.IntN(keysEach)
				if models[j].h == nil || models[j].string {
					continue
				}
				require.NoError(t, s.Restore(key(i), models[j].h.Bytes()))
				*m = model{h: models[j].h.Clone()}
			case op < 86:
				require.NoError(t, s.Delete(key(i)))
				*m = model{}
			case op < 89:
				require.NoError(t, s.Put(key(i), []byte{0, 'x'}))
				*m = model{string: true}
			default: // PFMerge from another key
				j := rng.IntN(keysEach)
				if m.string || models[j].string {
					continue
				}
				require.NoError(t, s.PFMerge(key(i), key(j)))
				if m.h == nil {
					m.h = NewHLL()
				}
				if models[j].h != nil {
					m.h.Merge(models[j].h)
				}
			}
		}
		for i, m := range models {
			got, err := s.Dump(key(i))
			switch {
			case m.string:
				require.ErrorIs(t, err, ErrWrongType)
			case m.h == nil:
				require.Error(t, err)
			default:
				require.NoError(t, err)
				require.Equal(t, m.h.Bytes(), got, "goroutine %d key %d", g, i)
			}
		}
	})
	stop.Store(true)
	<-done
	for i := range s.hllCache {
		cached.Add(int64(len(s.hllCache[i].m)))
	}
	t.Logf("%d PFAdd replies checked; %d entries cached at the end", replies.Load(), cached.Load())
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

// TestBloomCacheExact is TestHLLCacheExact for BFAdd's cached filters:
// BFAdd, BFMAdd and BFInsert (reply-bearing, through the cache), blind
// adds, a Batch's adds, Restore, Delete and Put, with compaction racing;
// every reply is checked against an oracle filter, and every value at the
// end.
func TestBloomCacheExact(t *testing.T) {
	seed := testutil.Seed(t)
	s := openTestStore(t, nil, nil)
	const goroutines, keysEach = 4, 40
	steps := 2000
	if raceEnabled || testing.Short() {
		steps = 400
	}
	var stop atomic.Bool
	var replies atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			if i%10 == 0 {
				if err := s.db.Compact(nil, nil); err != nil {
					t.Error(err)
					return
				}
			}
			_, _ = s.BFCard(k(fmt.Sprintf("g0:%d", i%keysEach)))
		}
	}()
	spec := BloomSpec{ErrorRate: 0.01, Capacity: 50, Expansion: 2}
	small := BloomSpec{ErrorRate: 0.01, Capacity: 20, NonScaling: true}
	runParallel(goroutines, func(g int) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
		models := make([]*ScalableBloom, keysEach) // nil: missing
		strs := make([]bool, keysEach)
		key := func(i int) []byte { return k(fmt.Sprintf("g%d:%d", g, i)) }
		item := func() []byte { return fmt.Appendf(nil, "it%d", rng.IntN(400)) }
		newModel := func(sp BloomSpec) *ScalableBloom {
			b, err := NewScalableBloom(sp)
			require.NoError(t, err)
			return b
		}
		for step := 0; step < steps && !t.Failed(); step++ {
			i := rng.IntN(keysEach)
			switch op := rng.IntN(100); {
			case op < 55: // BFMAdd (BFAdd is BFMAdd of one)
				its := make([][]byte, 1+rng.IntN(4))
				for j := range its {
					its[j] = item()
				}
				got, err := s.BFMAdd(key(i), its...)
				if strs[i] {
					require.ErrorIs(t, err, ErrWrongType)
					continue
				}
				if models[i] == nil {
					models[i] = newModel(DefaultBloomSpec())
				}
				want := []bool{}
				var wantErr error
				for _, it := range its {
					a, err := models[i].addHash(itemHash(it), false)
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
				require.Equal(t, want, got, "goroutine %d step %d: BFMAdd(%s)", g, step, key(i))
				replies.Add(int64(len(got)))
			case op < 62: // BFInsert creating a small non-scaling filter (fills up)
				its := [][]byte{item(), item()}
				o := &BFInsertOptions{Capacity: small.Capacity, ErrorRate: small.ErrorRate, NonScaling: true}
				got, err := s.BFInsert(key(i), o, its...)
				if strs[i] {
					require.ErrorIs(t, err, ErrWrongType)
					continue
				}
				if models[i] == nil {
					models[i] = newModel(small)
				}
				want := []bool{}
				for _, it := range its {
					a, err := models[i].addHash(itemHash(it), false)
					if err != nil {
						break
					}
					want = append(want, a)
				}
				if err != nil {
					require.ErrorIs(t, err, ErrFilterFull)
				}
				require.Equal(t, want, got, "goroutine %d step %d: BFInsert(%s)", g, step, key(i))
			case op < 72: // blind adds
				if strs[i] {
					continue
				}
				it := item()
				require.NoError(t, s.BFAddBlind(key(i), it))
				if models[i] == nil {
					models[i] = newModel(DefaultBloomSpec())
				}
				_, _ = models[i].addHash(itemHash(it), true)
			case op < 78: // a Batch's adds
				if strs[i] {
					continue
				}
				b := s.NewBatch()
				it := item()
				require.NoError(t, b.BFAdd(key(i), it))
				require.NoError(t, b.Commit(nil))
				if models[i] == nil {
					models[i] = newModel(DefaultBloomSpec())
				}
				_, _ = models[i].addHash(itemHash(it), true)
			case op < 84: // Restore another key's filter
				j := rng.IntN(keysEach)
				if models[j] == nil {
					continue
				}
				v, err := models[j].MarshalBinary()
				require.NoError(t, err)
				require.NoError(t, s.Restore(key(i), v))
				models[i], strs[i] = nil, false
				models[i], err = ParseBloom(v)
				require.NoError(t, err)
			case op < 88: // reserve on a missing key
				err := s.BFReserve(key(i), spec.ErrorRate, spec.Capacity, &BFReserveOptions{Expansion: spec.Expansion})
				switch {
				case strs[i]:
					require.ErrorIs(t, err, ErrWrongType)
				case models[i] != nil:
					require.ErrorIs(t, err, ErrItemExists)
				default:
					require.NoError(t, err)
					models[i] = newModel(spec)
				}
			case op < 94:
				require.NoError(t, s.Delete(key(i)))
				models[i], strs[i] = nil, false
			default:
				require.NoError(t, s.Put(key(i), []byte{0, 's'}))
				models[i], strs[i] = nil, true
			}
		}
		for i := range models {
			got, err := s.Dump(key(i))
			switch {
			case strs[i]:
				require.ErrorIs(t, err, ErrWrongType)
			case models[i] == nil:
				require.Error(t, err)
			default:
				require.NoError(t, err)
				want, err := models[i].MarshalBinary()
				require.NoError(t, err)
				require.Equal(t, want, got, "goroutine %d key %d", g, i)
			}
		}
	})
	stop.Store(true)
	<-done
	t.Logf("%d BF replies checked", replies.Load())
}
