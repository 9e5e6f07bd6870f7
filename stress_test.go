package sieve

// A concurrent stress test with an expected-state oracle (RocksDB's
// db_stress idea): many goroutines run random operations on one DB through
// its public API — puts, deletes, merges under three mergers, batches
// across column families, Gets, bounded iterators in both directions,
// snapshots held and read, flushes, compactions of random ranges, column
// family creation — with memtables and tables small enough that flushes
// and compactions run all the time. Rounds end with a Close and a reopen.
//
// The oracle. Writes to one key are serialized by a per-key test lock
// (batches take their keys' locks in order), so each key has a history of
// states, one per write, and at most one write in flight. A read that
// starts when the key's last acknowledged state is history[lo] and ends
// when its newest started state is history[hi] may legally return any of
// history[lo..hi] — the db_stress "pending value" rule. Iterators and
// snapshots take lo and hi for every key around their creation, and a
// snapshot must also return the same value each time it reads a key. At
// the end of a round, and after each reopen, the DB equals the oracle's
// last states exactly.
//
// Replay: SIEVE_SEED=N replays each goroutine's sequence of
// operations (the interleaving of goroutines is the scheduler's, so a
// failure replays with high probability, not certainty).
// SIEVE_STRESS_LONG=1 (or SIEVE_LONG=1) runs the long version:
// 32 goroutines, 8 rounds of 30 s ("make stress").

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// stressConfig sizes a run.
type stressConfig struct {
	writers, readers int
	rounds           int
	roundTime        time.Duration
	keys             int // per column family
	maxDynCFs        int
}

func stressConfigFor(t *testing.T) stressConfig {
	c := stressConfig{writers: 6, readers: 3, rounds: 3, roundTime: 1500 * time.Millisecond, keys: 48, maxDynCFs: 6}
	if os.Getenv("SIEVE_STRESS_LONG") != "" || relLong() {
		c = stressConfig{writers: 24, readers: 8, rounds: 8, roundTime: 30 * time.Second, keys: 200, maxDynCFs: 12}
	} else if testing.Short() {
		c.rounds, c.roundTime = 2, time.Second
	}
	return c
}

// The column families of the stress test. Families 0-2 have mergers;
// families created during the run (dyn*) have none and take puts and
// deletes only.
const (
	stressDefault = iota // counterMerger: decimal sums
	stressAppend         // appendMerger: comma-joined, order-sensitive
	stressLWW            // lwwMerger: FullMerge returns an operand itself
	stressFixedCFs
)

type stressVal struct {
	exists bool
	v      string
}

func (v stressVal) String() string {
	if !v.exists {
		return "<absent>"
	}
	return strconv.Quote(v.v)
}

// stressKey is one key's lock and history.
type stressKey struct {
	write sync.Mutex // serializes the key's writers (test-side)
	// Guarded by stressOracle.mu.
	hist  []stressVal
	acked int // index in hist of the last acknowledged state
}

type stressOracle struct {
	mu   sync.Mutex
	keys [][]*stressKey // [cf][key]
}

func newStressOracle(ncf, nkeys int) *stressOracle {
	o := &stressOracle{}
	for range ncf {
		o.addCF(nkeys)
	}
	return o
}

// addCF adds a column family's keys. REQUIRES: o.mu held or no
// concurrency.
func (o *stressOracle) addCF(nkeys int) {
	ks := make([]*stressKey, nkeys)
	for i := range ks {
		ks[i] = &stressKey{hist: []stressVal{{}}}
	}
	o.keys = append(o.keys, ks)
}

func (o *stressOracle) key(cf, k int) *stressKey {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.keys[cf][k]
}

// window returns the legal range [lo, hi] of key's states; call lo before
// the read starts and hi after it ends.
func (o *stressOracle) lo(cf, k int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.keys[cf][k].acked
}

func (o *stressOracle) hi(cf, k int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.keys[cf][k].hist) - 1
}

// windows returns lo (or hi) for every key of cf.
func (o *stressOracle) windows(cf int, hi bool) []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	ks := o.keys[cf]
	out := make([]int, len(ks))
	for i, k := range ks {
		if hi {
			out[i] = len(k.hist) - 1
		} else {
			out[i] = k.acked
		}
	}
	return out
}

// legal reports whether got is one of key's states lo..hi.
func (o *stressOracle) legal(cf, k, lo, hi int, got stressVal) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.keys[cf][k].hist[lo : hi+1] {
		if s == got {
			return true
		}
	}
	return false
}

func (o *stressOracle) describe(cf, k, lo, hi int) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []string
	for _, s := range o.keys[cf][k].hist[lo : hi+1] {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " | ")
}

func (o *stressOracle) last(cf, k int) stressVal {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[cf][k].hist
	return h[len(h)-1]
}

// begin records the state a write is about to produce. REQUIRES: the
// key's write lock.
func (o *stressOracle) begin(cf, k int, next stressVal) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ks := o.keys[cf][k]
	ks.hist = append(ks.hist, next)
}

// commit marks the key's newest state acknowledged.
func (o *stressOracle) commit(cf, k int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ks := o.keys[cf][k]
	ks.acked = len(ks.hist) - 1
}

// trim forgets all but each key's last state (between rounds, quiescent).
func (o *stressOracle) trim() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ks := range o.keys {
		for _, k := range ks {
			if k.acked != len(k.hist)-1 {
				panic("stress: trim with a write in flight")
			}
			k.hist = []stressVal{k.hist[len(k.hist)-1]}
			k.acked = 0
		}
	}
}

func stressKeyName(k int) []byte { return fmt.Appendf(nil, "key%04d", k) }

func stressKeyIndex(key []byte) (int, bool) {
	if !bytes.HasPrefix(key, []byte("key")) {
		return 0, false
	}
	n, err := strconv.Atoi(string(key[3:]))
	return n, err == nil
}

// applyModel returns the state after a write of kind to a key in state s.
func applyModel(cf int, s stressVal, kind byte, arg string) stressVal {
	switch kind {
	case 'p':
		return stressVal{true, arg}
	case 'd':
		return stressVal{}
	}
	switch cf {
	case stressDefault:
		var base int64
		if s.exists {
			base, _ = strconv.ParseInt(s.v, 10, 64)
		}
		d, _ := strconv.ParseInt(arg, 10, 64)
		return stressVal{true, strconv.FormatInt(base+d, 10)}
	case stressAppend:
		out := ""
		if s.exists {
			out = s.v
		}
		if out != "" {
			out += ","
		}
		return stressVal{true, out + arg}
	case stressLWW:
		return stressVal{true, arg}
	}
	panic("merge in a family without a merger")
}

// stressRun is one stress test's shared state.
type stressRun struct {
	t    *testing.T
	cfg  stressConfig
	seed uint64
	fs   vfs.FS
	opts *Options
	db   *DB
	// cfs are the open handles, by oracle index (0 = default, nil handle).
	cfsMu   sync.RWMutex
	cfs     []*ColumnFamily
	cfNames []string
	oracle  *stressOracle
	stop    atomic.Bool
	// In every odd round, quietMaint pauses the maintainer for the last
	// 3/8 of the round, and quiet the writers for the last quarter: the
	// writers leave a memtable that no Flush or Compact empties, then the
	// readers' seeks alone merge it and ask for a seek-triggered flush,
	// whose rotation races the readers, the background flushes and
	// compactions, and the round's end (Close).
	quiet, quietMaint atomic.Bool

	errMu  sync.Mutex
	errs   []string
	failed atomic.Bool

	ops, reads, iters, snaps, cfCreated, scribbles atomic.Int64
	prefixReads                                    atomic.Int64 // stress_prefix_test.go
	ingests                                        atomic.Int64 // stress_ingest_test.go
	multiGets, cfDropped                           atomic.Int64
	drops                                          stressDrops
	checkpoints, ckptsVerified                     atomic.Int64
	ckMu                                           sync.Mutex
	pendingCkpts                                   []stressCheckpoint
	rangeDels                                      atomic.Int64
	flushes, compactions, reopens                  int64
	seekCompactions, seekFlushes                   int64
	getRestarts                                    int64 // optimistic Gets restarted pinned (getCF)
	fill                                           stressFill
}

func (r *stressRun) violation(format string, args ...any) {
	r.failed.Store(true)
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
	r.stop.Store(true)
}

func (r *stressRun) ncf() int {
	r.cfsMu.RLock()
	defer r.cfsMu.RUnlock()
	return len(r.cfs)
}

func (r *stressRun) handle(cf int) *ColumnFamily {
	r.cfsMu.RLock()
	defer r.cfsMu.RUnlock()
	return r.cfs[cf]
}

func stressCFOptions(name string) *ColumnFamilyOptions {
	switch name {
	case "append":
		return &ColumnFamilyOptions{Merger: appendMerger{}}
	case "lww":
		return &ColumnFamilyOptions{Merger: lwwMerger{}}
	}
	return nil
}

// open (re)opens the DB and every family the run knows.
func (r *stressRun) open() {
	db, err := Open("db", r.opts)
	require.NoError(r.t, err)
	r.db = db
	cfs := []*ColumnFamily{nil}
	for i, name := range r.cfNames[1:] {
		if r.drops.isDropped(i + 1) {
			cfs = append(cfs, r.cfs[i+1]) // stale, never used
			continue
		}
		cf, err := db.OpenColumnFamily(name, stressCFOptions(name))
		require.NoError(r.t, err)
		cfs = append(cfs, cf)
	}
	r.cfsMu.Lock()
	r.cfs = cfs
	r.cfsMu.Unlock()
}

func (r *stressRun) get(cf int, key []byte) ([]byte, error) {
	if h := r.handle(cf); h != nil {
		return h.Get(key)
	}
	return r.db.Get(key)
}

func (r *stressRun) newIter(cf int, o *IterOptions, snap *Snapshot) *Iterator {
	h := r.handle(cf)
	switch {
	case snap != nil && h != nil:
		return snap.NewIterCF(h, o)
	case snap != nil:
		return snap.NewIter(o)
	case h != nil:
		return h.NewIter(o)
	}
	return r.db.NewIter(o)
}

func (r *stressRun) snapGet(snap *Snapshot, cf int, key []byte) ([]byte, error) {
	if h := r.handle(cf); h != nil {
		return snap.GetCF(h, key)
	}
	return snap.Get(key)
}

func toVal(v []byte, err error) (stressVal, error) {
	if errors.Is(err, ErrNotFound) {
		return stressVal{}, nil
	}
	if err != nil {
		return stressVal{}, err
	}
	return stressVal{true, string(v)}, nil
}

// stressWrite is one entry of a write.
type stressWrite struct {
	cf, k int
	kind  byte // 'p', 'd', 'm'
	arg   string
}

// writer runs random writes until stopped.
func (r *stressRun) writer(id int, rng *rand.Rand) {
	n := 0
	pad := strings.Repeat("x", 200)
	for !r.stop.Load() {
		if r.quiet.Load() {
			time.Sleep(time.Millisecond)
			continue
		}
		n++
		if r.maybeIngest(id, n, rng) || r.maybeWriteRange(rng) {
			continue
		}
		ncf := r.ncf()
		entries := 1
		if rng.IntN(4) == 0 {
			entries = 2 + rng.IntN(4) // a batch, often across families
		}
		ws := make([]stressWrite, entries)
		for i := range ws {
			cf := rng.IntN(ncf)
			if cf >= stressFixedCFs && rng.IntN(2) == 0 {
				cf = rng.IntN(stressFixedCFs) // keep the merge families busy
			}
			w := stressWrite{cf: cf, k: r.randomKey(rng)}
			tag := fmt.Sprintf("w%d.%d", id, n)
			switch p := rng.IntN(10); {
			case cf < stressFixedCFs && p < 6:
				w.kind = 'm'
			case p < 8:
				w.kind = 'p'
			default:
				w.kind = 'd'
			}
			switch {
			case w.kind == 'd':
			case cf == stressDefault:
				w.arg = strconv.Itoa(1 + rng.IntN(9))
				if w.kind == 'p' {
					w.arg = strconv.Itoa(rng.IntN(1000))
				}
			case cf == stressAppend && w.kind == 'm':
				w.arg = tag
			default:
				w.arg = tag + pad[:rng.IntN(len(pad))]
			}
			ws[i] = w
		}
		r.write(ws, rng)
		r.ops.Add(1)
	}
}

// write applies ws (one batch when more than one) under the keys' locks.
func (r *stressRun) write(ws []stressWrite, rng *rand.Rand) {
	cfs := writeCFs(ws)
	defer r.drops.leave(cfs...)
	if !r.drops.enter(cfs...) {
		return // a family was dropped
	}
	order, unlock := r.lockKeys(ws)
	defer unlock()
	final := map[stressCK]stressVal{}
	for _, c := range order {
		final[c] = r.oracle.last(c.cf, c.k)
	}
	for _, w := range ws {
		c := stressCK{w.cf, w.k}
		final[c] = applyModel(w.cf, final[c], w.kind, w.arg)
	}
	for _, c := range order {
		r.oracle.begin(c.cf, c.k, final[c])
	}
	wo := NoSync
	if rng.IntN(50) == 0 {
		wo = Sync
	}
	var err error
	if len(ws) == 1 {
		err = r.writeOne(ws[0], wo)
	} else {
		err = r.writeBatch(ws, wo)
	}
	if err != nil {
		r.violation("write %v: %v", ws, err)
		return // the in-flight states stay pending; the run stops
	}
	for _, c := range order {
		r.oracle.commit(c.cf, c.k)
	}
}

// stressCK is a key of a family.
type stressCK struct{ cf, k int }

// lockKeys takes the write locks of the keys ws writes, in order (family,
// then key), and returns those keys and the function that unlocks them.
func (r *stressRun) lockKeys(ws []stressWrite) ([]stressCK, func()) {
	seen := map[stressCK]bool{}
	var order []stressCK
	for _, w := range ws {
		c := stressCK{w.cf, w.k}
		if !seen[c] {
			order = append(order, c)
		}
		seen[c] = true
	}
	slices.SortFunc(order, func(a, b stressCK) int {
		if a.cf != b.cf {
			return a.cf - b.cf
		}
		return a.k - b.k
	})
	for _, c := range order {
		r.oracle.key(c.cf, c.k).write.Lock()
	}
	return order, func() {
		for _, c := range order {
			r.oracle.key(c.cf, c.k).write.Unlock()
		}
	}
}

// writeOne applies w alone: a Put, Delete or Merge on its family.
func (r *stressRun) writeOne(w stressWrite, wo *WriteOptions) error {
	key := stressKeyName(w.k)
	h := r.handle(w.cf)
	switch {
	case h == nil && w.kind == 'p':
		return r.db.Put(key, []byte(w.arg), wo)
	case h == nil && w.kind == 'd':
		return r.db.Delete(key, wo)
	case h == nil:
		return r.db.Merge(key, []byte(w.arg), wo)
	case w.kind == 'p':
		return h.Put(key, []byte(w.arg), wo)
	case w.kind == 'd':
		return h.Delete(key, wo)
	default:
		return h.Merge(key, []byte(w.arg), wo)
	}
}

// writeBatch applies ws as one batch.
func (r *stressRun) writeBatch(ws []stressWrite, wo *WriteOptions) error {
	b := r.db.NewBatch()
	for _, w := range ws {
		key := stressKeyName(w.k)
		h := r.handle(w.cf)
		var err error
		switch {
		case h == nil && w.kind == 'p':
			err = b.Put(key, []byte(w.arg))
		case h == nil && w.kind == 'd':
			err = b.Delete(key)
		case h == nil:
			err = b.Merge(key, []byte(w.arg))
		case w.kind == 'p':
			err = b.PutCF(h, key, []byte(w.arg))
		case w.kind == 'd':
			err = b.DeleteCF(h, key)
		default:
			err = b.MergeCF(h, key, []byte(w.arg))
		}
		if err != nil {
			return err
		}
	}
	return r.db.Apply(b, wo)
}

// checkRead checks one read of (cf, k) against the window [lo, hi].
func (r *stressRun) checkRead(what string, cf, k, lo, hi int, got stressVal) {
	r.reads.Add(1)
	if !r.oracle.legal(cf, k, lo, hi, got) {
		r.violation("%s: family %s key%04d = %v; legal: %s (seed %d)", what, r.cfNames[cf], k, got, r.oracle.describe(cf, k, lo, hi), r.seed)
	}
}

// reader runs random Gets, iterators and snapshot reads until stopped.
func (r *stressRun) reader(id int, rng *rand.Rand) {
	var snaps []*stressHeldSnap
	defer func() {
		for _, s := range snaps {
			s.s.Close()
		}
	}()
	for !r.stop.Load() {
		ncf := r.ncf()
		cf := rng.IntN(ncf)
		switch p := rng.IntN(20); {
		case p < 10:
			if !r.readGet(cf, rng) {
				return
			}
		case p < 11:
			if !r.readMultiGet(cf, rng) {
				return
			}
		case p < 15: // iterator, either direction, random bounds
			if !r.drops.enter(cf) {
				r.drops.leave(cf)
				break
			}
			if r.prefixRead(cf, rng) {
				r.drops.leave(cf)
				break
			}
			lo := r.oracle.windows(cf, false)
			it := r.newIter(cf, r.randomBounds(rng), nil)
			hi := r.oracle.windows(cf, true)
			r.checkIter("iterator", it, cf, lo, hi, rng, nil)
			r.drops.leave(cf)
			r.iters.Add(1)
		case p < 17: // take a snapshot
			if len(snaps) >= 3 {
				break
			}
			snaps = append(snaps, r.takeSnap(ncf, rng))
			r.snaps.Add(1)
		default: // read through a held snapshot, releasing expired ones
			var ok bool
			if snaps, ok = r.readSnap(snaps, rng); !ok {
				return
			}
		}
	}
}

// stressHeldSnap is a snapshot a reader holds, with the oracle's windows
// of every key when it was taken.
type stressHeldSnap struct {
	s        *Snapshot
	lo, hi   [][]int // [cf][key], families known at creation
	seen     map[[2]int]stressVal
	deadline time.Time
}

// readGet checks a Get of a random key of cf (and sometimes scribbles on
// the value returned); false after a violation that ends the reader.
func (r *stressRun) readGet(cf int, rng *rand.Rand) bool {
	defer r.drops.leave(cf)
	if !r.drops.enter(cf) {
		return true
	}
	k := r.randomKey(rng)
	lo := r.oracle.lo(cf, k)
	v, err := r.get(cf, stressKeyName(k))
	hi := r.oracle.hi(cf, k)
	got, err := toVal(v, err)
	if err != nil {
		r.violation("Get: %v", err)
		return false
	}
	r.checkRead("Get", cf, k, lo, hi, got)
	if got.exists && len(v) > 0 && rng.IntN(2) == 0 {
		// The value is the caller's: scribbling on it must not change
		// what the DB holds.
		for i := range v {
			v[i] = '#'
		}
		r.scribbles.Add(1)
	}
	return true
}

// takeSnap takes a snapshot, to be held for up to 300ms, between the
// oracle's windows of its ncf families.
func (r *stressRun) takeSnap(ncf int, rng *rand.Rand) *stressHeldSnap {
	hs := &stressHeldSnap{seen: map[[2]int]stressVal{}, deadline: time.Now().Add(time.Duration(rng.IntN(300)) * time.Millisecond)}
	for c := range ncf {
		hs.lo = append(hs.lo, r.oracle.windows(c, false))
	}
	hs.s = r.db.NewSnapshot()
	for c := range ncf {
		hs.hi = append(hs.hi, r.oracle.windows(c, true))
	}
	return hs
}

// readSnap reads a random key or iterates through a random held snapshot,
// or releases it if it expired; it returns the snapshots still held, and
// false after a violation that ends the reader.
func (r *stressRun) readSnap(snaps []*stressHeldSnap, rng *rand.Rand) ([]*stressHeldSnap, bool) {
	if len(snaps) == 0 {
		return snaps, true
	}
	i := rng.IntN(len(snaps))
	hs := snaps[i]
	if time.Now().After(hs.deadline) {
		hs.s.Close()
		return slices.Delete(snaps, i, i+1), true
	}
	cf := rng.IntN(len(hs.lo))
	defer r.drops.leave(cf)
	if !r.drops.enter(cf) {
		return snaps, true
	}
	if rng.IntN(2) == 0 {
		k := rng.IntN(r.cfg.keys)
		got, err := toVal(r.snapGet(hs.s, cf, stressKeyName(k)))
		if err != nil {
			r.violation("snapshot Get: %v", err)
			return snaps, false
		}
		r.checkRead("snapshot Get", cf, k, hs.lo[cf][k], hs.hi[cf][k], got)
		r.checkStable(hs.seen, cf, k, got)
	} else {
		it := r.newIter(cf, r.randomBounds(rng), hs.s)
		r.checkIter("snapshot iterator", it, cf, hs.lo[cf], hs.hi[cf], rng, hs.seen)
	}
	return snaps, true
}

// stressHotKeys of each family take half the operations: long runs of
// merge operands on one key, flushed and compacted while being read, are
// what the races between reads and flushes need.
const stressHotKeys = 4

func (r *stressRun) randomKey(rng *rand.Rand) int {
	if rng.IntN(2) == 0 {
		return rng.IntN(stressHotKeys)
	}
	return rng.IntN(r.cfg.keys)
}

// checkStable checks that a snapshot returns what it returned before.
func (r *stressRun) checkStable(seen map[[2]int]stressVal, cf, k int, got stressVal) {
	if prev, ok := seen[[2]int{cf, k}]; ok && prev != got {
		r.violation("snapshot read family %s key%04d = %v, earlier %v (seed %d)", r.cfNames[cf], k, got, prev, r.seed)
	}
	seen[[2]int{cf, k}] = got
}

func (r *stressRun) randomBounds(rng *rand.Rand) *IterOptions {
	if rng.IntN(3) == 0 {
		return nil
	}
	a, b := rng.IntN(r.cfg.keys+1), rng.IntN(r.cfg.keys+1)
	if a > b {
		a, b = b, a
	}
	o := &IterOptions{}
	if rng.IntN(4) > 0 {
		o.LowerBound = stressKeyName(a)
	}
	if rng.IntN(4) > 0 {
		o.UpperBound = stressKeyName(b)
	}
	return o
}

// checkIter scans it in a random direction (sometimes from a seek) and
// checks every key in its bounds: present keys must have a legal value,
// absent ones a legal absence, and keys come in order.
func (r *stressRun) checkIter(what string, it *Iterator, cf int, lo, hi []int, rng *rand.Rand, seen map[[2]int]stressVal) {
	defer it.Close()
	lower, upper := 0, r.cfg.keys
	if it.lower != nil {
		lower, _ = stressKeyIndex(it.lower)
	}
	if it.upper != nil {
		upper, _ = stressKeyIndex(it.upper)
	}
	from, to := lower, upper // the keys the scan covers: [from, to)
	reverse := rng.IntN(2) == 0
	var ok bool
	switch seek := rng.IntN(3) == 0 && upper > lower; {
	case seek && reverse:
		to = lower + rng.IntN(upper-lower+1)
		ok = it.SeekLT(stressKeyName(to))
	case seek:
		from = lower + rng.IntN(upper-lower)
		ok = it.SeekGE(stressKeyName(from))
	case reverse:
		ok = it.Last()
	default:
		ok = it.First()
	}
	got := map[int]string{}
	prev := -1
	for ; ok; ok = step(it, reverse) {
		k, valid := stressKeyIndex(it.Key())
		if !valid || k < from || k >= to {
			r.violation("%s: key %q outside [%d, %d) (seed %d)", what, it.Key(), from, to, r.seed)
			return
		}
		if prev >= 0 && (!reverse && k <= prev || reverse && k >= prev) {
			r.violation("%s: key%04d after key%04d (reverse=%v)", what, k, prev, reverse)
			return
		}
		prev = k
		got[k] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		r.violation("%s: %v", what, err)
		return
	}
	for k := from; k < to; k++ {
		v, present := got[k]
		s := stressVal{present, v}
		r.checkRead(what, cf, k, lo[k], hi[k], s)
		if seen != nil {
			r.checkStable(seen, cf, k, s)
		}
	}
}

func step(it *Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// maintainer flushes, compacts random ranges and creates column families.
func (r *stressRun) maintainer(rng *rand.Rand) {
	for n := 0; !r.stop.Load(); n++ {
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		if r.quietMaint.Load() {
			continue // its flushes and compactions would empty the memtable
		}
		ncf := r.ncf()
		switch p := maintainerPick(n, rng); {
		case p < 4:
			if err := r.db.Flush(); err != nil {
				r.violation("Flush: %v", err)
			}
		case p < 8:
			cf := rng.IntN(ncf)
			a, b := rng.IntN(r.cfg.keys), rng.IntN(r.cfg.keys)
			if a > b {
				a, b = b, a
			}
			var start, end []byte
			if rng.IntN(4) > 0 {
				start, end = stressKeyName(a), stressKeyName(b)
			}
			live := r.drops.enter(cf)
			var err error
			switch h := r.handle(cf); {
			case !live: // dropped
			case h != nil:
				err = h.Compact(start, end)
			default:
				err = r.db.Compact(start, end)
			}
			r.drops.leave(cf)
			if err != nil {
				r.violation("Compact: %v", err)
			}
		case p < 9:
			r.maybeDropCF(rng)
		case p == 10:
			r.takeCheckpoint()
		default:
			r.cfsMu.RLock()
			n := len(r.cfNames)
			r.cfsMu.RUnlock()
			if n-stressFixedCFs >= r.cfg.maxDynCFs {
				break
			}
			name := fmt.Sprintf("dyn%d", n-stressFixedCFs)
			h, err := r.db.OpenColumnFamily(name, nil)
			if err != nil {
				r.violation("OpenColumnFamily: %v", err)
				break
			}
			r.oracle.mu.Lock()
			r.oracle.addCF(r.cfg.keys)
			r.oracle.mu.Unlock()
			r.cfsMu.Lock()
			r.cfNames = append(r.cfNames, name)
			r.cfs = append(r.cfs, h)
			r.cfsMu.Unlock()
			r.cfCreated.Add(1)
		}
	}
}

// verifyExact checks that the DB equals the oracle's last states, by Gets
// and by full scans both ways.
func (r *stressRun) verifyExact(when string) {
	for cf := range r.ncf() {
		if r.drops.isDropped(cf) {
			continue
		}
		want := map[int]string{}
		for k := range r.cfg.keys {
			s := r.oracle.last(cf, k)
			got, err := toVal(r.get(cf, stressKeyName(k)))
			require.NoError(r.t, err)
			if got != s {
				r.violation("%s: Get family %s key%04d = %v, want %v (seed %d)", when, r.cfNames[cf], k, got, s, r.seed)
			}
			if s.exists {
				want[k] = s.v
			}
		}
		for _, reverse := range []bool{false, true} {
			it := r.newIter(cf, nil, nil)
			got := map[int]string{}
			ok := it.First()
			if reverse {
				ok = it.Last()
			}
			for ; ok; ok = step(it, reverse) {
				k, _ := stressKeyIndex(it.Key())
				got[k] = string(it.Value())
			}
			require.NoError(r.t, it.Close())
			if fmt.Sprint(got) != fmt.Sprint(want) {
				r.violation("%s: scan (reverse=%v) of family %s differs from the oracle (seed %d)", when, reverse, r.cfNames[cf], r.seed)
			}
		}
	}
	require.NoError(r.t, r.db.CheckInvariants(true))
}

func TestStress(t *testing.T) {
	defer stressFillSetup()()
	cfg := stressConfigFor(t)
	seed := uint64(testutil.Seed(t))
	fs := vfs.NewMem()
	r := &stressRun{t: t, cfg: cfg, seed: seed, fs: fs,
		opts: &Options{FS: fs, Merger: counterMerger{}, MemTableSize: 64 << 10, TargetFileSize: 16 << 10,
			BlockSize: 1 << 10, L0CompactionTrigger: 2, LBaseMaxBytes: 128 << 10, MaxSuccessiveMerges: 3,
			BlockCacheSize: 256 << 10, Prefix: stressPrefixLen, PrefixName: "stress6"},
		cfNames: []string{"default", "append", "lww"},
		oracle:  newStressOracle(stressFixedCFs, cfg.keys),
	}
	r.open()
	defer func() {
		if r.db != nil {
			r.db.Close()
		}
	}()
	for round := range cfg.rounds {
		r.stop.Store(false)
		var wg sync.WaitGroup
		for i := range cfg.writers {
			rng := rand.New(rand.NewPCG(seed, uint64(round*1000+i)))
			wg.Go(func() { r.writer(i, rng) })
		}
		for i := range cfg.readers {
			rng := rand.New(rand.NewPCG(seed, uint64(round*1000+500+i)))
			wg.Go(func() { r.reader(i, rng) })
		}
		mrng := rand.New(rand.NewPCG(seed, uint64(round*1000+999)))
		wg.Go(func() { r.maintainer(mrng) })
		deadline := time.Now().Add(cfg.roundTime)
		quietMaintAt, quietAt := deadline.Add(-cfg.roundTime*3/8), deadline.Add(-cfg.roundTime/4)
		for time.Now().Before(deadline) && !r.failed.Load() {
			if round%2 == 1 {
				r.quietMaint.Store(time.Now().After(quietMaintAt))
				r.quiet.Store(time.Now().After(quietAt))
			}
			time.Sleep(10 * time.Millisecond)
		}
		r.stop.Store(true)
		r.quiet.Store(false)
		r.quietMaint.Store(false)
		waited := make(chan struct{})
		go func() { wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(2*time.Minute + cfg.roundTime):
			buf := make([]byte, 4<<20)
			t.Fatalf("round %d: goroutines did not stop within 2 minutes: a deadlock (seed %d)\n%s", round, seed, buf[:runtime.Stack(buf, true)])
		}
		if r.failed.Load() {
			break
		}
		r.verifyCheckpoints()
		r.verifyExact(fmt.Sprintf("round %d end", round))
		m := r.db.Metrics()
		r.flushes += m.Flush.Count
		r.compactions += m.Compaction.Count
		r.seekCompactions += m.Compaction.SeekTriggered
		r.seekFlushes += m.Flush.SeekTriggered
		r.getRestarts += r.db.metrics.getRestarts.Load()
		r.fill.add(m)
		require.NoError(t, r.db.Close())
		r.db = nil
		// Rounds alternate memtable merge collapsing (which writes what
		// a read of the operands computed back as a value) on and off.
		r.opts.MaxSuccessiveMerges = []int{-1, 8, 3}[round%3]
		r.open()
		r.reopens++
		r.verifyExact(fmt.Sprintf("round %d reopen", round))
		r.oracle.trim()
	}
	r.report(seed)
}

// report logs what a run did, fails the test on its violations, and
// checks that it reached every operation it names.
func (r *stressRun) report(seed uint64) {
	t, cfg := r.t, r.cfg
	t.Logf("stress: %d writers + %d readers + 1 maintainer, %d rounds: %d writes, %d reads checked (%d iterators, %d snapshots, %d values scribbled on, %d multigets), "+
		"%d flushes, %d compactions, %d families created, %d dropped, %d checkpoints verified, %d reopens, %d violations",
		cfg.writers, cfg.readers, cfg.rounds, r.ops.Load(), r.reads.Load(), r.iters.Load(), r.snaps.Load(), r.scribbles.Load(), r.multiGets.Load(),
		r.flushes, r.compactions, r.cfCreated.Load(), r.cfDropped.Load(), r.ckptsVerified.Load(), r.reopens, len(r.errs))
	for _, e := range r.errs {
		t.Error(e)
	}
	if r.failed.Load() {
		t.Fatalf("stress failed; replay with SIEVE_SEED=%d go test -run '^TestStress$' .", seed)
	}
	// The test must reach what it names.
	require.Positive(t, r.flushes, "no flush ran")
	require.Positive(t, r.compactions, "no compaction ran")
	require.Positive(t, r.snaps.Load(), "no snapshot taken")
	require.Positive(t, r.multiGets.Load(), "no MultiGet ran")
	require.Positive(t, r.cfDropped.Load(), "no column family dropped")
	require.Positive(t, r.ckptsVerified.Load(), "no checkpoint verified")
	require.Positive(t, r.reopens)
	t.Logf("stress: %d SeekPrefixGE reads checked, %d Ingests, %d DeleteRanges, %d seek-triggered compactions, %d seek-triggered flushes, %d Gets restarted on a retired read state",
		r.prefixReads.Load(), r.ingests.Load(), r.rangeDels.Load(), r.seekCompactions, r.seekFlushes, r.getRestarts)
	require.Positive(t, r.prefixReads.Load(), "no SeekPrefixGE read")
	require.Positive(t, r.ingests.Load(), "no Ingest")
	require.Positive(t, r.rangeDels.Load(), "no DeleteRange ran")
	if cfg.rounds >= 4 {
		// Four quiet phases (the short runs have one, and may end it
		// below a quarter of MemTableSize).
		require.Positive(t, r.seekFlushes, "no seek-triggered flush in the quiet phases")
	}
	r.fill.report(t)
}
