package sketchcol

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/sketchcol/internal/cuckoo"
	"github.com/stretchr/testify/require"
)

// Concurrent commands with replies on one key (run it under -race): the
// Store's per-key lock makes the replies those of some serial order.

// runParallel runs fn(g) on g = 0..n-1 concurrently and waits.
func runParallel(n int, fn func(g int)) {
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(g)
		}()
	}
	wg.Wait()
}

// TestStoreConcurrentBFAdd: goroutines add the same items in different
// orders, with blind adds of other items mixed in; every item is reported
// newly added exactly once. (The filter is sized so that a false positive
// among these items is improbable, ~1e-4: a false positive would
// legitimately give an item no "added" at all.)
func TestStoreConcurrentBFAdd(t *testing.T) {
	seed := testutil.Seed(t)
	s := openTestStore(t, nil, nil)
	const goroutines = 6
	n := 400
	if raceEnabled {
		n = 150
	}
	key := k("bf")
	require.NoError(t, s.BFReserve(key, 1e-7, 4*int64(n), nil))
	all := items("shared", n)
	added := make([][]int, goroutines) // added[g]: indices g saw added
	runParallel(goroutines, func(g int) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
		for _, i := range rng.Perm(n) {
			ok, err := s.BFAdd(key, all[i])
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				added[g] = append(added[g], i)
			}
			if i%8 == 0 {
				if err := s.BFAddBlind(key, fmt.Appendf(nil, "blind:%d:%d", g, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	times := make([]int, n)
	for _, idx := range added {
		for _, i := range idx {
			times[i]++
		}
	}
	for i, c := range times {
		require.Equal(t, 1, c, "item %d reported added %d times", i, c)
	}
	ok, err := s.BFMExists(key, all...)
	require.NoError(t, err)
	require.NotContains(t, ok, false)
}

// TestStoreConcurrentPFAdd: goroutines add one element per PFAdd, with
// blind adds mixed in. Whatever the order, every register the reply
// commands set is raised by some command whose reply said so: for each
// register, an element that puts the final value there was answered
// true (the first to reach that value in the serial order).
func TestStoreConcurrentPFAdd(t *testing.T) {
	seed := testutil.Seed(t)
	s := openTestStore(t, nil, nil)
	const goroutines = 6
	n := 600
	if raceEnabled {
		n = 200
	}
	key := k("hll")
	all := items("pf", n)
	answered := make([][]bool, goroutines)
	runParallel(goroutines, func(g int) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
		answered[g] = make([]bool, n)
		for _, i := range rng.Perm(n) {
			ok, err := s.PFAdd(key, all[i])
			if err != nil {
				t.Error(err)
				return
			}
			answered[g][i] = ok
		}
	})
	want := NewHLL()
	for _, e := range all {
		want.Add(e)
	}
	got, err := s.Dump(key)
	require.NoError(t, err)
	require.Equal(t, want.Bytes(), got)
	// raisedBy[register] = whether some true reply came from an element
	// that puts the final value there.
	raisedBy := map[int]bool{}
	trues := 0
	for g := range answered {
		for i, ok := range answered[g] {
			if !ok {
				continue
			}
			trues++
			idx, rank := hllPosition(all[i])
			if rank == want.Register(idx) {
				raisedBy[idx] = true
			}
		}
	}
	for i := range hllRegisters {
		if want.Register(i) > 0 {
			require.True(t, raisedBy[i], "register %d reached %d with no PFAdd reporting it", i, want.Register(i))
		}
	}
	// At most one true per element... and the first PFAdd of the key is
	// always true.
	require.LessOrEqual(t, trues, n)
	require.Positive(t, trues)
}

// TestStoreConcurrentCuckoo: concurrent CF.ADDNX of the same items add
// each once; concurrent CF.DELs of an item added k times succeed k times.
func TestStoreConcurrentCuckoo(t *testing.T) {
	seed := testutil.Seed(t)
	s := openTestStore(t, nil, nil)
	const goroutines = 6
	n := 200
	if raceEnabled {
		n = 80
	}
	key := k("cf")
	const capacity = 1 << 12
	require.NoError(t, s.CFReserve(key, capacity, nil))
	all := distinctFingerprints(items("cf", n), capacity, DefaultCuckooSpec().BucketSize)
	n = len(all)
	added := make([][]int, goroutines)
	runParallel(goroutines, func(g int) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
		for _, i := range rng.Perm(n) {
			ok, err := s.CFAddNX(key, all[i])
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				added[g] = append(added[g], i)
			}
		}
	})
	times := make([]int, n)
	for _, idx := range added {
		for _, i := range idx {
			times[i]++
		}
	}
	for i, c := range times {
		require.Equal(t, 1, c, "item %d added %d times by CF.ADDNX", i, c)
	}

	const copies = 5
	for range copies {
		_, err := s.CFAdd(key, k("dup"))
		require.NoError(t, err)
	}
	deleted := make([]int, goroutines)
	runParallel(goroutines, func(g int) {
		for range 3 {
			ok, err := s.CFDel(key, k("dup"))
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				deleted[g]++
			}
		}
	})
	total := 0
	for _, d := range deleted {
		total += d
	}
	require.Equal(t, copies, total, "one successful CF.DEL per copy")
	c, err := s.CFCount(key, k("dup"))
	require.NoError(t, err)
	require.Zero(t, c)
	info, err := s.CFInfo(key)
	require.NoError(t, err)
	require.Equal(t, int64(n), info.NumItemsInserted)
}

// distinctFingerprints drops the items whose fingerprint another item
// shares in one of its buckets (of a filter of that capacity): CF.ADDNX of
// such an item finds the other's fingerprint and legitimately answers 0,
// which would blur the "exactly once" check.
func distinctFingerprints(its [][]byte, capacity int64, bucketSize int) [][]byte {
	t := cuckoo.New(cuckooLog2Buckets(capacity, bucketSize), bucketSize)
	type place struct {
		fp     byte
		i1, i2 uint64
	}
	places := make([]place, len(its))
	for i, it := range its {
		h := itemHash(it)
		fp := cuckoo.Fingerprint(h)
		i1, i2 := t.Buckets1And2(h, fp)
		places[i] = place{fp, i1, i2}
	}
	var out [][]byte
	for i, p := range places {
		clash := false
		for j, q := range places {
			if i != j && p.fp == q.fp && (p.i1 == q.i1 || p.i1 == q.i2 || p.i2 == q.i1 || p.i2 == q.i2) {
				clash = true
			}
		}
		if !clash {
			out = append(out, its[i])
		}
	}
	return out
}
