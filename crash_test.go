package sieve

import (
	"fmt"
	"math/rand"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// crashOptions are the options of the crash workload and of every reopen
// of its crash clones: small memtables and an eager L0 trigger with small
// tables, so that flushes and background compactions (several levels
// deep) run all the time.
func crashOptions(fs vfs.FS) *Options {
	o := relOptions(fs)
	o.MemTableSize = 64 << 10
	o.L0CompactionTrigger, o.L0StopWritesTrigger = 2, 24
	o.LBaseMaxBytes, o.TargetFileSize = 64<<10, 8<<10
	return o
}

// crashPoint is a crash clone taken at a durability event, with what had
// been acknowledged by then.
type crashPoint struct {
	fs         *vfs.MemFS
	event      string
	lo         int // ops[:lo] were acknowledged as durable and must survive
	hi         int // no op at index >= hi had begun: none can survive
	mode       vfs.UnsyncedMode
	cloneIndex int
}

// crashTally counts the crash points by what they recovered to
// (relHistory.crashClass, or "recovery failed").
type crashTally struct {
	points, distinct               int
	lost, nonPrefix, wrong, failed int
	merger                         int // merge operands without the merger name recorded
}

func (c *crashTally) add(class string) {
	switch class {
	case "prefix":
	case "lost":
		c.lost++
	case "non-prefix":
		c.nonPrefix++
	case "wrong value":
		c.wrong++
	case "merger":
		c.merger++
	default:
		c.failed++
	}
}

func (c *crashTally) bad() int { return c.lost + c.nonPrefix + c.wrong + c.failed + c.merger }

// TestCrashRecovery runs a random workload on two column families under
// appendMerger — puts, deletes, merges and batches across both families,
// some with Sync, flushes and manual compactions of random ranges — over
// small memtables and an eager L0 trigger, so that WAL rotations, flushes
// and background compactions run throughout. It takes a crash clone of the
// file system at every durability event (sync, directory sync, rename,
// remove, create, truncate, and every write to a WAL or manifest), from
// the workload's goroutine and from the flush and compaction goroutines,
// with a damage mode for the unsynced data that cycles through all five.
//
// Every distinct clone is opened read-only (scan of both families,
// CheckInvariants(true)) and then read-write (recovery's write side:
// sealing the newest WAL, a new manifest, obsolete-file deletion, the
// flush of what the WALs held, compactions), which must hold the same,
// take a Sync write, and hold it all again after Close and another
// read-write open (reopenReadWrite). The recovered state must equal the
// history replayed up to some point between the writes acknowledged as
// durable (Sync, or before a successful Flush or Compact) and the writes
// begun: a prefix, never a hole or half a batch, and with the merger name
// recorded where merge operands are. A state that is not is classified
// (relHistory.crashClass): an acknowledged write lost, a value no prefix
// gives, or a non-prefix state (every key as some prefix in range has it,
// but no one prefix has them all). SIEVE_CRASH_OPS is the number of
// writes (default 3,000; 1,000 with -short or -race; make crash-long runs
// 30,000).
func TestCrashRecovery(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	nOps := 3000
	if testing.Short() || relRaceEnabled {
		nOps = 1000
	}
	nOps = envInt("SIEVE_CRASH_OPS", nOps)

	fs := vfs.NewMem()
	run := newCrashRun(fs, seed)
	go run.checkPoints()
	fs.SetDurabilityHook(run.hook)
	db, err := Open("/db", crashOptions(fs))
	require.NoError(t, err)
	cf, err := db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}})
	require.NoError(t, err)

	w := &crashWorkload{run: run, rng: rng, db: db, cf: cf}
	for i := 0; run.numOps() < nOps; i++ {
		w.step(t, i)
	}
	if w.duringManual == 0 {
		// A short run can draw no manual compaction (p ≈ 0.7% at 1,000
		// ops) or only ones of ranges with nothing to compact: end with a
		// full one, so crash points inside a manual compaction are always
		// reached.
		w.compactRange(t, nil, nil, w.rng.Intn(2) == 0)
	}
	m := db.Metrics()
	fs.SetDurabilityHook(nil)
	require.NoError(t, db.Close())
	run.stop()
	run.report(t, w, m, nOps)
}

// crashRun is what TestCrashRecovery's durability hook shares with the
// goroutine that checks the crash points.
//
// The hook runs on the workload's goroutine and on the flush and
// compaction goroutines: mu guards what it shares (hist, lo, hi, events).
// The durable bound is read before the clone and the in-flight bound after
// it, so that both hold for the cloned state.
type crashRun struct {
	fs    *vfs.MemFS
	seed  int64
	modes []vfs.UnsyncedMode

	mu             sync.Mutex
	hist           *relHistory
	lo, hi, events int

	// Clones are checked on another goroutine as they come; the channel's
	// bound keeps only a few in memory (the hook waits).
	points chan crashPoint
	// sendMu lets close(points) wait for a hook call that loaded the hook
	// before it was removed.
	sendMu  sync.RWMutex
	stopped bool

	// Written by checkPoints, read after checked.Wait.
	tally    crashTally
	failures []string
	checked  sync.WaitGroup
}

func newCrashRun(fs *vfs.MemFS, seed int64) *crashRun {
	r := &crashRun{
		fs:     fs,
		seed:   seed,
		modes:  []vfs.UnsyncedMode{vfs.DropUnsynced, vfs.KeepUnsyncedPrefix, vfs.KeepUnsyncedSectors, vfs.ZeroUnsynced, vfs.GarbageUnsynced},
		hist:   newRelHistory(nil),
		points: make(chan crashPoint, 8),
	}
	r.checked.Add(1)
	return r
}

// numOps is the number of writes recorded in the history.
func (r *crashRun) numOps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.hist.ops)
}

// hook is the durability hook: it takes a crash clone at the event, with
// the bounds that hold for it, and sends it to checkPoints.
func (r *crashRun) hook(op vfs.Op, name string) {
	if op == vfs.OpWrite && fileKind(name) == "table" {
		return // a table counts once synced and named by the manifest: events themselves
	}
	r.mu.Lock()
	r.events++
	ev, durable := r.events, r.lo
	r.mu.Unlock()
	mode := r.modes[ev%len(r.modes)]
	clone := r.fs.CrashClone(vfs.CrashOptions{Unsynced: mode, KeepUnsyncedFraction: 0.5, Seed: uint64(r.seed) + uint64(ev)})
	r.mu.Lock()
	begun := r.hi
	r.mu.Unlock()
	r.sendMu.RLock()
	defer r.sendMu.RUnlock()
	if !r.stopped {
		r.points <- crashPoint{fs: clone, event: fmt.Sprintf("%s %s", op, path.Base(name)),
			lo: durable, hi: begun, mode: mode, cloneIndex: ev}
	}
}

// stop closes the crash points' channel once no hook call can send on it,
// and waits for checkPoints to have checked them all.
func (r *crashRun) stop() {
	r.sendMu.Lock()
	r.stopped = true
	close(r.points)
	r.sendMu.Unlock()
	r.checked.Wait()
}

// checkPoints recovers every distinct crash point (read-only, then
// read-write twice), classifies it and tallies the classes.
func (r *crashRun) checkPoints() {
	defer r.checked.Done()
	cache := map[uint64]recovered{}
	for p := range r.points {
		r.tally.points++
		rec := r.recover(p, cache)
		r.mu.Lock()
		h := &relHistory{ops: r.hist.ops[:p.hi], hashes: r.hist.hashes[:p.hi+1]}
		r.mu.Unlock()
		class, msg := classifyCrashPoint(h, rec, p)
		p.fs = nil
		r.tally.add(class)
		if class != "prefix" && len(r.failures) < 10 {
			r.failures = append(r.failures, fmt.Sprintf("crash point %d (%s, %s), bounds [%d, %d]: %s: %s",
				p.cloneIndex, p.event, p.mode, p.lo, p.hi, class, msg))
		}
	}
}

// recover opens p's clone read-only and then read-write, unless a clone of
// the same files was recovered already.
func (r *crashRun) recover(p crashPoint, cache map[uint64]recovered) recovered {
	fh := fsHash(p.fs)
	if rec, ok := cache[fh]; ok {
		return rec
	}
	r.tally.distinct++
	rec := readRecovered(p.fs)
	if rec.err == nil {
		rec.err = reopenReadWrite(p.fs, rec.state, crashOptions)
	}
	// The cache keeps no state (thousands of them would not fit in
	// memory); a failure reads it again.
	cache[fh] = recovered{hash: rec.hash, mergers: rec.mergers, err: rec.err}
	return rec
}

// classifyCrashPoint is the class of what p recovered to (see
// crashTally.add), with a message unless it is a prefix.
func classifyCrashPoint(h *relHistory, rec recovered, p crashPoint) (class, msg string) {
	class, msg = "prefix", checkRecovered(h, rec, p.lo, p.hi)
	switch {
	case msg == "":
	case rec.err != nil:
		class = "recovery failed"
	case h.matchHash(rec.hash, p.lo, p.hi) >= 0:
		class = "merger"
	default:
		if rec.state[0] == nil {
			rec.state = readRecovered(p.fs).state
		}
		class, msg = h.crashClass(rec.state, p.lo, p.hi)
	}
	return class, msg
}

// report logs the workload and the crash points, and fails on every crash
// point that recovered wrong.
func (r *crashRun) report(t *testing.T, w *crashWorkload, m *Metrics, nOps int) {
	t.Helper()
	background := m.Compaction.Count - w.duringManual
	t.Logf("%d ops (%d with Sync, %d batches, %d merge operands), %d flushes and %d manual compactions asked for; engine: %d flushes, %d compactions (at least %d in the background), %d moves",
		len(r.hist.ops), w.syncs, w.batches, w.merges, w.flushes, w.compactions, m.Flush.Count, m.Compaction.Count, background, m.Compaction.Moves)
	t.Logf("%d crash points, %d distinct states, each opened read-only, then read-write twice; acknowledged writes lost %d, non-prefix states %d, wrong values %d, merge operands without the merger name %d, recoveries failed %d (seed %d)",
		r.tally.points, r.tally.distinct, r.tally.lost, r.tally.nonPrefix, r.tally.wrong, r.tally.merger, r.tally.failed, r.seed)
	for _, f := range r.failures {
		t.Error(f)
	}
	require.Zero(t, r.tally.bad(), "crash points that recovered wrong (seed %d)", r.seed)
	if nOps >= 2000 { // a short run may see its L0 emptied by manual compactions every time
		require.Positive(t, background, "no background compaction ran")
	}
	require.Positive(t, w.duringManual, "no manual compaction compacted anything")
	requireRangeDels(t, w, m)
}

// crashWorkload is TestCrashRecovery's random workload and its counts.
type crashWorkload struct {
	run                                          *crashRun
	rng                                          *rand.Rand
	db                                           *DB
	cf                                           *ColumnFamily
	flushes, compactions, merges, batches, syncs int
	rangeDels                                    int
	// Compactions that ran while a manual one was under way (it and
	// perhaps background ones): the others ran in the background.
	duringManual int64
}

func (w *crashWorkload) key() string { return fmt.Sprintf("key%03d", w.rng.Intn(200)) }

// allDurable marks every write so far acknowledged as durable.
func (w *crashWorkload) allDurable() {
	w.run.mu.Lock()
	w.run.lo = len(w.run.hist.ops)
	w.run.mu.Unlock()
}

// step is the workload's i-th step: a flush, a manual compaction, or a
// write (one entry or a batch).
func (w *crashWorkload) step(t *testing.T, i int) {
	t.Helper()
	switch r := w.rng.Intn(1000); {
	case r < 6:
		w.flushes++
		require.NoError(t, w.db.Flush())
		w.allDurable()
		return
	case r < 11:
		w.compact(t)
		return
	}
	op := w.randomOp(i)
	w.run.mu.Lock()
	w.run.hist.add(op)
	w.run.hi = len(w.run.hist.ops)
	w.run.mu.Unlock()
	require.NoError(t, applyCrashOp(w.db, w.cf, op))
	if op.sync {
		w.syncs++
		w.allDurable()
	}
}

// compact runs a manual compaction of a random range of one family
// (Compact flushes first).
func (w *crashWorkload) compact(t *testing.T) {
	t.Helper()
	a, b := w.key(), w.key()
	if a > b {
		a, b = b, a
	}
	var start, end []byte
	if w.rng.Intn(4) > 0 {
		start, end = []byte(a), []byte(b)
	}
	w.compactRange(t, start, end, w.rng.Intn(2) == 0)
}

// compactRange runs a manual compaction of [start, end) of the default
// family or of cf.
func (w *crashWorkload) compactRange(t *testing.T, start, end []byte, defaultFamily bool) {
	t.Helper()
	w.compactions++
	before := w.db.Metrics().Compaction.Count
	if defaultFamily {
		require.NoError(t, w.db.Compact(start, end))
	} else {
		require.NoError(t, w.cf.Compact(start, end))
	}
	w.duringManual += w.db.Metrics().Compaction.Count - before
	w.allDurable()
}

// randomOp is the i-th step's write: puts, deletes and merges on either
// family, alone or in a batch, some with Sync.
func (w *crashWorkload) randomOp(i int) relOp {
	op := relOp{sync: w.rng.Intn(8) == 0}
	n := 1
	if w.rng.Intn(5) == 0 {
		n = 2 + w.rng.Intn(5)
		w.batches++
	}
	for j := 0; j < n; j++ {
		c := 0
		if w.rng.Intn(3) == 0 {
			c = 1
		}
		k := w.key()
		switch x := w.rng.Intn(20); {
		case x == 19 && w.rng.Intn(2) == 0:
			w.rangeDels++
			op.entries = append(op.entries, crashRangeDel(w.rng, c, k))
		case x < 3:
			op.entries = append(op.entries, del(c, k))
		case x < 8:
			w.merges++
			op.entries = append(op.entries, merge(c, k, fmt.Sprintf("m%d.%d", i, j)))
		default:
			op.entries = append(op.entries, set(c, k, fmt.Sprintf("op%d-%d-%s", i, j, strings.Repeat("v", w.rng.Intn(400)))))
		}
	}
	return op
}

// applyCrashOp applies op: one Put, Delete or Merge on its family, or a
// batch.
func applyCrashOp(db *DB, cf *ColumnFamily, op relOp) error {
	if len(op.entries) > 1 {
		return applyBatch(db, cf, op)
	}
	wo := NoSync
	if op.sync {
		wo = Sync
	}
	e := op.entries[0]
	k, v := []byte(e.key), []byte(e.value)
	if e.kind == base.KindRangeDelete {
		return applyRangeDel(db, cf, e, wo)
	}
	type writer interface {
		Put(k, v []byte, o *WriteOptions) error
		Delete(k []byte, o *WriteOptions) error
		Merge(k, v []byte, o *WriteOptions) error
	}
	var w writer = db
	if e.cf == 1 {
		w = cf
	}
	switch e.kind {
	case base.KindSet:
		return w.Put(k, v, wo)
	case base.KindDelete:
		return w.Delete(k, wo)
	default:
		return w.Merge(k, v, wo)
	}
}

// TestCrashClassifier feeds the crash test's classifier and tally states
// of every class, so that each counter is known to count: a prefix, a
// state missing an acknowledged write, a value no prefix gives, and states
// that are not prefixes although every acknowledged write is there (a hole
// in the unacknowledged writes, half a batch).
func TestCrashClassifier(t *testing.T) {
	ops := []relOp{
		{entries: []relEntry{set(0, "a", "1")}, sync: true},
		{entries: []relEntry{set(0, "b", "2"), merge(1, "c", "x")}},
		{entries: []relEntry{set(0, "d", "4")}},
		{entries: []relEntry{del(0, "a")}},
	}
	h := newRelHistory(ops)
	st := func(def, cf1 map[string]string) relState { return relState{def, cf1} }
	var tally crashTally
	for _, c := range []struct {
		s     relState
		class string
	}{
		{st(map[string]string{"a": "1"}, map[string]string{}), "prefix"},
		{st(map[string]string{"a": "1", "b": "2", "d": "4"}, map[string]string{"c": "x"}), "prefix"},
		{st(map[string]string{"b": "2", "d": "4"}, map[string]string{"c": "x"}), "prefix"},
		{st(map[string]string{}, map[string]string{}), "lost"},                                 // the empty prefix, before the Sync
		{st(map[string]string{"d": "4"}, map[string]string{}), "non-prefix"},                   // op 2 missing, 3 and 4 there
		{st(map[string]string{"a": "1", "b": "2"}, map[string]string{}), "non-prefix"},         // half of batch 2
		{st(map[string]string{"a": "1", "d": "4"}, map[string]string{"c": "x"}), "non-prefix"}, // batch 2 torn
		{st(map[string]string{"a": "2"}, map[string]string{}), "wrong value"},
		{st(map[string]string{"a": "1"}, map[string]string{"c": "xx"}), "wrong value"}, // an operand twice
	} {
		class, msg := h.crashClass(c.s, 1, len(ops))
		require.Equal(t, c.class, class, "%v: %s", c.s, msg)
		tally.add(class)
	}
	require.Equal(t, crashTally{lost: 1, nonPrefix: 3, wrong: 2}, tally)
	// A synced write lost while later, unsynced ones survive: a key holds
	// what it held only before the acknowledged prefix.
	h2 := newRelHistory([]relOp{
		{entries: []relEntry{set(0, "a", "1")}},
		{entries: []relEntry{set(0, "a", "2")}, sync: true},
		{entries: []relEntry{set(0, "b", "3")}},
	})
	class, _ := h2.crashClass(st(map[string]string{"a": "1", "b": "3"}, map[string]string{}), 2, 3)
	require.Equal(t, "lost", class)
}

// TestReopenReadWriteSelfCheck: reopenReadWrite fails on a database that
// does not hold what it is told the read-only open found.
func TestReopenReadWriteSelfCheck(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", relOptions(fs))
	require.NoError(t, err)
	require.NoError(t, db.Put([]byte("a"), []byte("1"), Sync))
	require.NoError(t, db.Merge([]byte("m"), []byte("x"), Sync))
	require.NoError(t, db.Close())
	want := relState{{"a": "1", "m": "x"}, {}}
	wrong := relState{{"a": "1", "m": "x,x"}, {}}
	require.Error(t, reopenReadWrite(fs.CrashClone(vfs.CrashOptions{}), wrong, nil))
	require.NoError(t, reopenReadWrite(fs, want, nil))
	// The marker is there now: a second check with the same want fails.
	require.Error(t, reopenReadWrite(fs, want, nil))
}

// TestCrossFamilyBatchCrash: a batch spanning families is all or nothing
// after a crash at any durability event.
func TestCrossFamilyBatchCrash(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs, MemTableSize: 64 << 10})
	require.NoError(t, err)
	a, err := db.OpenColumnFamily("a", nil)
	require.NoError(t, err)
	b, err := db.OpenColumnFamily("b", nil)
	require.NoError(t, err)
	var (
		mu     sync.Mutex
		clones []*vfs.MemFS
	)
	// The hook also runs on flush goroutines.
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		mu.Lock()
		defer mu.Unlock()
		clones = append(clones, fs.CrashClone(vfs.CrashOptions{Unsynced: vfs.KeepUnsyncedSectors, KeepUnsyncedFraction: 0.5, Seed: uint64(len(clones))}))
	})
	for i := 0; i < 300; i++ {
		batch := db.NewBatch()
		v := []byte(strconv.Itoa(i) + string(make([]byte, 300)))
		require.NoError(t, batch.PutCF(a, []byte("x"), v))
		require.NoError(t, batch.PutCF(b, []byte("x"), v))
		require.NoError(t, batch.Put([]byte("x"), v))
		o := NoSync
		if i%10 == 0 {
			o = Sync
		}
		require.NoError(t, db.Apply(batch, o))
	}
	fs.SetDurabilityHook(nil)
	require.NoError(t, db.Close())
	require.NotEmpty(t, clones)
	for i, c := range clones {
		db, err := Open("/db", &Options{FS: c})
		require.NoError(t, err, "clone %d", i)
		a, err := db.OpenColumnFamily("a", nil)
		if err != nil {
			// The family's creation itself was not durable yet.
			require.NoError(t, db.Close())
			continue
		}
		b, err := db.OpenColumnFamily("b", nil)
		require.NoError(t, err)
		v0, e0 := db.Get([]byte("x"))
		va, ea := a.Get([]byte("x"))
		vb, eb := b.Get([]byte("x"))
		require.Equal(t, e0 == nil, ea == nil, "clone %d", i)
		require.Equal(t, e0 == nil, eb == nil, "clone %d", i)
		require.Equal(t, v0, va, "clone %d", i)
		require.Equal(t, v0, vb, "clone %d", i)
		require.NoError(t, db.Close())
	}
}
