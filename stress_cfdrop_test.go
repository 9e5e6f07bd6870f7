package sieve

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// stressDrops coordinates the maintainer's DropColumnFamily of dynamic
// families with the operations on them: an operation holds its families'
// read locks (enter/leave), a drop the write lock of its family, so a drop
// never fails an operation the oracle expects to succeed, while operations
// on the other families (and flushes and compactions of the dropped one,
// in the background) run through it.
type stressDrops struct {
	mu      sync.Mutex
	locks   []*sync.RWMutex // by oracle index, grown on demand
	dropped []bool
}

func (d *stressDrops) lock(cf int) *sync.RWMutex {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.locks) <= cf {
		d.locks = append(d.locks, new(sync.RWMutex))
		d.dropped = append(d.dropped, false)
	}
	return d.locks[cf]
}

func (d *stressDrops) isDropped(cf int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return cf < len(d.dropped) && d.dropped[cf]
}

// enter read-locks the families cfs (in order, without repeats) and
// reports whether all are live; the caller calls leave(cfs) either way.
func (d *stressDrops) enter(cfs ...int) bool {
	ok := true
	for _, cf := range cfs {
		d.lock(cf).RLock()
		ok = ok && !d.isDropped(cf)
	}
	return ok
}

func (d *stressDrops) leave(cfs ...int) {
	for _, cf := range cfs {
		d.lock(cf).RUnlock()
	}
}

// writeCFs returns the families ws writes, ascending and distinct.
func writeCFs(ws []stressWrite) []int {
	var cfs []int
	for _, w := range ws {
		cfs = append(cfs, w.cf)
	}
	slices.Sort(cfs)
	return slices.Compact(cfs)
}

// maybeDropCF drops a random live dynamic family (at most half of them
// over a run), waiting for the operations on it to finish.
func (r *stressRun) maybeDropCF(rng *rand.Rand) {
	n := r.ncf()
	if n <= stressFixedCFs {
		return
	}
	cf := stressFixedCFs + rng.IntN(n-stressFixedCFs)
	if r.drops.isDropped(cf) || int(r.cfDropped.Load())*2 >= r.cfg.maxDynCFs {
		return
	}
	l := r.drops.lock(cf)
	l.Lock()
	defer l.Unlock()
	if err := r.db.DropColumnFamily(r.handle(cf)); err != nil {
		r.violation("DropColumnFamily %s: %v", r.cfNames[cf], err)
		return
	}
	r.drops.mu.Lock()
	r.drops.dropped[cf] = true
	r.drops.mu.Unlock()
	r.cfDropped.Add(1)
	if slices.Contains(r.db.ColumnFamilies(), r.cfNames[cf]) {
		r.violation("ColumnFamilies lists dropped %s", r.cfNames[cf])
	}
}

// maintainerPick is the maintainer's n-th choice (0-10, see maintainer):
// random, except that early in every round it creates a family (9), then
// drops one (8), then checkpoints (10), so that each round runs all three
// however slow the machine is.
func maintainerPick(n int, rng *rand.Rand) int {
	switch n {
	case 1:
		return 9
	case 3:
		return 8
	case 5:
		return 10
	}
	return rng.IntN(11)
}
