package sieve

import (
	"errors"
	"fmt"
	"math/rand"
	"path"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestErrorInjection runs a workload (puts, deletes, merges, batches with
// Sync and NoSync in two column families, reads, flushes, compactions,
// close and reopen) on a vfs.ErrorFS, first counting its file-system
// operations, then once per operation index with that operation failing:
// once (transient), from then on (persistent), and with the disk full at a
// byte offset (ENOSPC). Each run checks that
//
//   - no panic, and every error a call returns wraps the injected one
//     (errors.Is(err, vfs.ErrInjected));
//   - an injected failure is reported: to the caller of the operation that
//     hit it, or by the database turning read-only (later writes return an
//     error wrapping it), unless the failed operation was harmless
//     housekeeping, told by the operation, the kind of file and the
//     function that made it (harmlessRules): removing an obsolete file and
//     syncing the directory after such removals, listing the directory for
//     Open's obsolete-file scan, closing a file opened only for reading;
//   - after a failed WAL or manifest write or sync, that file is never
//     written or synced again (no fsync retry), and after a failed WAL
//     write or sync no write is acknowledged (the DB is read-only);
//   - reads return the right value or an error, never a wrong value;
//   - after the run, a crash clone of the underlying MemFS recovers to a
//     prefix of the history holding every write acknowledged as durable
//     (Sync, or followed by a successful Flush, Compact or Close), and so
//     does a plain reopen without the fault, which also passes
//     CheckInvariants(true) and takes writes again; one crash clone in
//     four (in two with SIEVE_LONG=1) is also reopened read-write twice
//     and must hold what the read-only open found.
//
// The default run tries a sample of the operation indices; SIEVE_LONG=1
// tries every index in each mode.
func TestErrorInjection(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))

	count := newErrRun(vfs.ErrorOptions{}, seed)
	count.run()
	require.Empty(t, count.problems, "the workload without faults")
	require.Zero(t, count.efs.Injected())
	nOps, written := int64(len(count.seen())), count.efs.Written()
	t.Logf("workload: %d steps, %d file-system operations counted, %d bytes written", len(count.steps), nOps, written)

	budget := 150
	switch {
	case relRaceEnabled:
		budget = 40
	case testing.Short():
		budget = 80
	}
	c := &errCampaign{seed: seed, results: map[string]*errTally{}, harmless: map[string]int{}}
	for _, n := range errIndices(count, rng, budget) {
		c.try("transient", vfs.ErrorOptions{Nth: n})
		c.try("persistent", vfs.ErrorOptions{Nth: n, Persistent: true})
	}
	spaceRuns := budget / 4
	if relLong() {
		spaceRuns = 400
	}
	for i := 0; i < spaceRuns; i++ {
		limit := 1 + rng.Int63n(written)
		if i < 10 {
			limit = written * int64(i) / 10 // include tiny limits (full at open)
			limit = max(limit, 1)
		}
		c.try("ENOSPC", vfs.ErrorOptions{SpaceLimit: limit})
	}
	c.report(t)
}

// errIndices are the operation indices of count's run to fail: all of
// them in long mode, else a sample of budget that includes the first and
// last 10 and every kind of operation.
func errIndices(count *errRun, rng *rand.Rand, budget int) []int64 {
	nOps := int64(len(count.seen()))
	if relLong() || int64(budget) >= nOps {
		out := make([]int64, nOps)
		for i := range out {
			out[i] = int64(i + 1)
		}
		return out
	}
	pick := map[int64]bool{}
	for i := int64(1); i <= min(10, nOps); i++ {
		pick[i], pick[nOps+1-i] = true, true
	}
	byKind := map[string]bool{}
	for i, o := range count.seen() {
		if k := o.op.String() + "/" + fileKind(o.name); !byKind[k] {
			byKind[k] = true
			pick[int64(i+1)] = true
		}
	}
	for len(pick) < budget {
		pick[1+rng.Int63n(nOps)] = true
	}
	out := make([]int64, 0, len(pick))
	for i := range pick {
		out = append(out, i)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// errTally counts the runs of one fault mode by outcome.
type errTally struct{ runs, injected, reported, readOnly, harmless, problems int }

// errCampaign is TestErrorInjection's runs with a fault and their tallies.
type errCampaign struct {
	seed     int64
	results  map[string]*errTally // by mode
	failures []string
	harmless map[string]int // by harmlessRule
	clones   int
	rwOpens  int
}

// try runs the workload with the fault o and tallies its outcome under
// mode.
func (c *errCampaign) try(mode string, o vfs.ErrorOptions) {
	r := newErrRun(o, c.seed)
	r.run()
	c.clones += r.clones
	c.rwOpens += r.rwOpens
	tl := c.results[mode]
	if tl == nil {
		tl = &errTally{}
		c.results[mode] = tl
	}
	tl.runs++
	if r.efs.Injected() > 0 {
		tl.injected++
		switch r.outcome {
		case "reported":
			tl.reported++
		case "read-only":
			tl.readOnly++
		case "harmless":
			tl.harmless++
		}
	}
	if r.outcome == "harmless" && r.harmlessRule != "" {
		c.harmless[r.harmlessRule]++
	}
	if len(r.problems) > 0 {
		tl.problems++
		c.failures = append(c.failures, fmt.Sprintf("%s (failed op: %s): %s", mode, r.failedOp(), strings.Join(r.problems, "; ")))
	}
}

// report logs the tallies and fails on the runs that had problems (the
// first 20 of them listed).
func (c *errCampaign) report(t *testing.T) {
	t.Helper()
	for _, mode := range []string{"transient", "persistent", "ENOSPC"} {
		tl := c.results[mode]
		t.Logf("%-10s runs %4d, fault hit %4d: reported to the caller %4d, DB read-only %4d, harmless housekeeping %3d; runs with problems %d",
			mode, tl.runs, tl.injected, tl.reported, tl.readOnly, tl.harmless, tl.problems)
	}
	t.Logf("crash clones recovered read-only: %d; %d of them (1 in %d) also reopened read-write twice", c.clones, c.rwOpens, errRWEvery())
	for _, h := range sortedKeys(c.harmless) {
		t.Logf("  unreported, harmless: %-100s x%d", h, c.harmless[h])
	}
	for i, f := range c.failures {
		if i == 20 {
			t.Errorf("... and %d more", len(c.failures)-20)
			break
		}
		t.Errorf("%s", f)
	}
	require.Empty(t, c.failures, "seed %d", c.seed)
}

// opRec is one counted file-system operation.
type opRec struct {
	op    vfs.Op
	name  string
	label string
	// site is, for the operation the fault hits first (the Nth), the
	// functions that called the file system, innermost first (callSite).
	site []string
}

func (o opRec) String() string {
	return fmt.Sprintf("%s %s during %q", o.op, path.Base(o.name), o.label)
}

// errRun is one run of the error-injection workload.
type errRun struct {
	seed int64
	rng  *rand.Rand
	mem  *vfs.MemFS
	efs  *vfs.ErrorFS
	opts vfs.ErrorOptions
	db   *DB
	cf   *ColumnFamily

	label  atomic.Value // string
	recMu  sync.Mutex
	record []opRec // every counted operation, in order

	// ops is the history: acknowledged writes, then possibly one write
	// that failed (it may have reached the WAL; nothing is acknowledged
	// after it because the DB turns read-only).
	ops        []relOp
	acked      int // ops[:acked] were acknowledged
	durable    int // ops[:durable] must survive a crash
	writeFault bool
	steps      []string

	injectedAt   int   // the step during which the fault was first hit, or -1
	dbStart      int   // the first step of the open DB instance
	openStarts   []int // operation counts when each Open began
	reported     bool
	outcome      string // "reported", "read-only" or "harmless" when the fault was hit
	problems     []string
	harmlessRule string // why an unreported fault is harmless
	clones       int    // crash clones recovered
	rwOpens      int    // crash clones also reopened read-write
}

// newErrRun prepares a run whose fault is described by o: Nth and
// Persistent (the operation index, counted here so that the failing
// operation is known exactly even when goroutines race), or SpaceLimit.
func newErrRun(o vfs.ErrorOptions, seed int64) *errRun {
	r := &errRun{seed: seed, rng: rand.New(rand.NewSource(seed)), mem: vfs.NewMem(), opts: o, injectedAt: -1}
	r.label.Store("")
	target, persistent := o.Nth, o.Persistent
	if target > 0 {
		// The ErrorFS fails every operation Match selects from the first
		// on; Match selects the target (and, if persistent, all after).
		o.Nth, o.Persistent = 1, true
	}
	o.Match = func(op vfs.Op, name string) bool {
		// Table readers are closed by the table cache on other
		// goroutines, in no fixed order: not counted.
		if op == vfs.OpClose && fileKind(name) == "table" {
			return false
		}
		r.recMu.Lock()
		defer r.recMu.Unlock()
		rec := opRec{op: op, name: name, label: r.label.Load().(string)}
		n := int64(len(r.record)) + 1
		if n == target {
			rec.site = callSite()
		}
		r.record = append(r.record, rec)
		return target > 0 && (n == target || persistent && n > target)
	}
	r.efs = vfs.NewErrorFS(r.mem, o)
	return r
}

func (r *errRun) seen() []opRec {
	r.recMu.Lock()
	defer r.recMu.Unlock()
	return append([]opRec(nil), r.record...)
}

// failed returns the operation the fault hit first.
func (r *errRun) failed() (opRec, bool) {
	rec := r.seen()
	if r.opts.Nth > 0 && int(r.opts.Nth) <= len(rec) {
		return rec[r.opts.Nth-1], true
	}
	return opRec{}, false
}

// failedSite names the functions that made the failed operation.
func (r *errRun) failedSite() string {
	if o, ok := r.failed(); ok && len(o.site) > 0 {
		return strings.Join(o.site, " < ")
	}
	return "?"
}

func (r *errRun) failedOp() string {
	if o, ok := r.failed(); ok {
		return o.String()
	}
	if r.opts.SpaceLimit > 0 {
		return fmt.Sprintf("the write past %d bytes", r.opts.SpaceLimit)
	}
	return "none"
}

func (r *errRun) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// step runs fn as a workload step. An error must wrap the injected fault.
func (r *errRun) step(label string, fn func() error) error {
	r.label.Store(label)
	r.steps = append(r.steps, label)
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
				r.problem("%s: panic: %v", label, p)
			}
		}()
		return fn()
	}()
	if r.injectedAt < 0 && r.efs.Injected() > 0 {
		r.injectedAt = len(r.steps) - 1
	}
	if err != nil {
		r.reported = true
		if !errors.Is(err, vfs.ErrInjected) {
			r.problem("%s: error does not wrap the injected fault: %v", label, err)
		}
	}
	return err
}

// randomWrite makes one write of a random shape.
func (r *errRun) randomWrite(label string) {
	key := func() string { return fmt.Sprintf("k%02d", r.rng.Intn(40)) }
	val := func() string { return fmt.Sprintf("v%d-%s", r.rng.Intn(1000), strings.Repeat("x", r.rng.Intn(300))) }
	var op relOp
	op.sync = r.rng.Intn(3) == 0
	n := 1
	if r.rng.Intn(3) == 0 {
		n = 2 + r.rng.Intn(4)
	}
	for i := 0; i < n; i++ {
		cf := 0
		if n > 1 && r.rng.Intn(2) == 0 {
			cf = 1
		}
		switch r.rng.Intn(6) {
		case 0:
			op.entries = append(op.entries, del(cf, key()))
		case 1:
			op.entries = append(op.entries, merge(cf, key(), fmt.Sprintf("m%d", r.rng.Intn(100))))
		default:
			op.entries = append(op.entries, set(cf, key(), val()))
		}
	}
	r.write(label, op)
}

func (r *errRun) write(label string, op relOp) {
	if r.db == nil {
		return
	}
	if r.writeFault {
		// The DB must refuse every write after a failed one.
		if err := r.step(label+" (after a failed write)", func() error { return r.apply(op) }); err == nil {
			r.problem("%s: write acknowledged after an earlier write failed", label)
		}
		return
	}
	r.ops = append(r.ops, op)
	if err := r.step(label, func() error { return r.apply(op) }); err != nil {
		r.writeFault = true // op stays as the history's possible last write
		return
	}
	if f, ok := r.failed(); ok && r.injectedAt >= r.dbStart && r.injectedAt < len(r.steps)-1 && mustBeFatal(f) {
		r.problem("%s: write acknowledged after the failed %s", label, f)
	}
	r.acked = len(r.ops)
	if op.sync {
		r.durable = r.acked
	}
}

// mustBeFatal reports whether a failure of o must leave the database
// refusing every later write: a failed write or sync of the WAL, which
// fails the write that made it, under the commit pipeline. (A manifest
// write or sync fails in a flush or compaction that may run alongside a
// write; the database turns read-only a moment later, and what must hold
// is that the manifest is never written or synced again: noRetry.)
func mustBeFatal(o opRec) bool {
	return fileKind(o.name) == "WAL" && (o.op == vfs.OpWrite || o.op == vfs.OpSync)
}

// noRetry checks that a log (WAL or manifest) whose write or sync failed
// is never written or synced again: after a failed fsync the state of its
// data is unknown, and a retry that succeeds proves nothing.
func (r *errRun) noRetry() {
	f, ok := r.failed()
	if k := fileKind(f.name); !ok || (k != "WAL" && k != "MANIFEST") || (f.op != vfs.OpWrite && f.op != vfs.OpSync) {
		return
	}
	rec := r.seen()
	// A later Open is another process: it reads the log back and syncs
	// what it read, which is recovery, not a retry.
	end := len(rec)
	for _, s := range r.openStarts {
		if s >= int(r.opts.Nth) {
			end = s
			break
		}
	}
	for _, o := range rec[r.opts.Nth:end] {
		if o.name == f.name && (o.op == vfs.OpWrite || o.op == vfs.OpSync) {
			r.problem("%s after the failed %s", o, f)
			return
		}
	}
}

func (r *errRun) apply(op relOp) error {
	if len(op.entries) == 1 && op.entries[0].cf == 0 {
		e := op.entries[0]
		wo := NoSync
		if op.sync {
			wo = Sync
		}
		k, v := []byte(e.key), []byte(e.value)
		switch e.kind {
		case 1:
			return r.db.Put(k, v, wo)
		case 0:
			return r.db.Delete(k, wo)
		default:
			return r.db.Merge(k, v, wo)
		}
	}
	return applyBatch(r.db, r.cf, op)
}

// action runs a Flush or Compact step; success makes every acknowledged
// write durable.
func (r *errRun) action(label string, fn func() error) {
	if r.db == nil {
		return
	}
	if r.step(label, fn) == nil {
		r.durable = r.acked
	}
}

// read checks a few keys against the acknowledged writes: the right value
// or an error, never a wrong one.
func (r *errRun) read(label string) {
	if r.db == nil {
		return
	}
	model := newRelState()
	for _, op := range r.ops[:r.acked] {
		model.apply(op)
	}
	for i := 0; i < 6; i++ {
		k := fmt.Sprintf("k%02d", r.rng.Intn(40))
		cf := i % 2
		var v []byte
		r.step(fmt.Sprintf("%s %s", label, k), func() (err error) {
			if cf == 0 {
				v, err = r.db.Get([]byte(k))
			} else {
				v, err = r.cf.Get([]byte(k))
			}
			if errors.Is(err, ErrNotFound) {
				if _, ok := model[cf][k]; ok {
					r.problem("%s: cf%d key %s not found, want %q", label, cf, k, trunc(model[cf][k]))
				}
				return nil
			}
			if err == nil && string(v) != model[cf][k] {
				r.problem("%s: cf%d key %s = %q, want %q", label, cf, k, trunc(string(v)), trunc(model[cf][k]))
			}
			return err
		})
	}
}

// open opens the database on the faulty FS; a failed Open is retried
// once (a transient fault is gone by then), as a user would.
func (r *errRun) open(label string) {
	for try := 0; try < 2 && r.db == nil; try++ {
		r.openStarts = append(r.openStarts, len(r.seen()))
		r.step(label, func() error {
			db, err := Open("/db", relOptions(r.efs))
			if err != nil {
				return err
			}
			r.db = db
			db.cfs.mu.RLock()
			_, ok := db.cfs.byName[relCF]
			db.cfs.mu.RUnlock()
			if ok || label != "open (create)" {
				// (A failed creation is retried here.)
				if r.cf, err = db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}}); err != nil {
					db.Close()
					r.db = nil
				}
			}
			return err
		})
	}
	r.dbStart = len(r.steps)
	if r.db == nil {
		return
	}
	// Continue from what the database recovered.
	got, _, err := scanDB(r.db)
	if err != nil {
		if !errors.Is(err, vfs.ErrInjected) {
			r.problem("%s: scan: %v", label, err)
		}
		r.reported = true
		r.db.Close()
		r.db = nil
		return
	}
	h := newRelHistory(r.ops)
	n := h.match(got, r.durable, len(r.ops))
	if n < 0 {
		r.problem("%s: %s", label, h.explain(got, r.durable, len(r.ops)))
		r.db.Close()
		r.db = nil
		return
	}
	// What was recovered counts as acknowledged; it is durable only as
	// far as it was before (a Sync write or flush makes the rest so).
	r.ops = r.ops[:n]
	r.acked, r.writeFault = n, false
}

// reopen closes the database (a successful Close keeps every acknowledged
// write) and opens it again.
func (r *errRun) reopen() {
	if r.db != nil {
		r.readOnlyCheck()
		if r.step("close", r.db.Close) == nil && !r.writeFault {
			r.durable = r.acked
		}
		r.readOnlyCheck()
		r.db, r.cf = nil, nil
	}
	r.open("reopen")
}

// readOnlyCheck records the outcome of a fault that hit while this DB was
// open and no call reported it.
func (r *errRun) readOnlyCheck() {
	r.db.mu.Lock()
	bgErr := r.db.mu.bgErr
	r.db.mu.Unlock()
	if bgErr != nil && !errors.Is(bgErr, vfs.ErrInjected) {
		r.problem("read-only after an error that is not the injected one: %v", bgErr)
	}
	if bgErr != nil && r.outcome == "" && !r.reported && r.efs.Injected() > 0 {
		r.outcome = "read-only"
	}
}

// run is the workload.
func (r *errRun) run() {
	r.open("open (create)")
	if r.db != nil && r.cf == nil {
		r.step("create column family", func() error {
			var err error
			r.cf, err = r.db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}})
			if err != nil {
				r.db.Close()
				r.db = nil
			}
			return err
		})
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < 10; i++ {
			r.randomWrite(fmt.Sprintf("write %d.%d", round, i))
		}
		r.read("get")
		r.action("flush", func() error { return r.db.Flush() })
		for i := 0; i < 6; i++ {
			r.randomWrite(fmt.Sprintf("write %d.%d+", round, i))
		}
		r.action("flush", func() error { return r.db.Flush() })
		r.read("get")
		r.action("compact", func() error { return r.db.Compact(nil, nil) })
		r.read("get after compact")
		r.action("compact column family", func() error { return r.cf.Compact(nil, nil) })
		r.randomWrite("write before close")
		r.reopen()
	}
	r.randomWrite("last write")
	r.finish()
}

// finish checks what survives: a crash now, a clean close, and a reopen
// without the fault.
func (r *errRun) finish() {
	inFlight := len(r.ops)
	if r.db != nil {
		r.readOnlyCheck()
		for i, o := range []vfs.CrashOptions{{}, {Unsynced: vfs.KeepUnsyncedPrefix, Seed: 7}} {
			h := newRelHistory(r.ops)
			if msg := checkRecovered(h, r.recoverClone(o), r.durable, inFlight); msg != "" {
				r.problem("crash clone %d at the end: %s", i, msg)
			}
		}
		if r.step("close", r.db.Close) == nil && !r.writeFault {
			r.durable = r.acked
		}
		r.readOnlyCheck() // a background flush may have failed during Close
		r.db = nil
	}
	r.noRetry()
	if r.efs.Injected() > 0 && r.outcome == "" {
		switch {
		case r.reported:
			r.outcome = "reported"
		default:
			r.outcome = "harmless"
			if r.harmlessRule = r.harmlessFault(); r.harmlessRule == "" {
				r.problem("the failed %s was neither reported nor made the DB read-only (not a harmless housekeeping failure; called from %s)",
					r.failedOp(), r.failedSite())
			}
		}
	}
	h := newRelHistory(r.ops)
	if msg := checkRecovered(h, r.recoverClone(vfs.CrashOptions{}), r.durable, inFlight); msg != "" {
		r.problem("crash clone after close: %s", msg)
	}
	// The fault is removed: a plain reopen on the MemFS.
	db, err := Open("/db", relOptions(r.mem))
	if err != nil {
		r.problem("reopen without the fault: %v", err)
		return
	}
	defer db.Close()
	got, _, err := scanDB(db)
	if err != nil {
		r.problem("reopen without the fault: scan: %v", err)
		return
	}
	if n := h.match(got, r.durable, inFlight); n < 0 {
		r.problem("reopen without the fault: %s", h.explain(got, r.durable, inFlight))
	}
	if err := db.CheckInvariants(true); err != nil {
		r.problem("reopen without the fault: %v", err)
	}
	if err := db.Put([]byte("after"), []byte("fault"), Sync); err != nil {
		r.problem("reopen without the fault: write: %v", err)
	}
}

// errRWEvery is how many of the crash clones one is also reopened
// read-write.
func errRWEvery() int {
	switch {
	case relLong():
		return 2
	case relRaceEnabled:
		return 16
	case testing.Short():
		return 8
	}
	return 4
}

// recoverClone takes a crash clone of the MemFS under the faults and reads
// what it recovers to read-only; one clone in errRWEvery (chosen from the
// seed and the clone's content) is then reopened read-write twice
// (reopenReadWrite), which must agree.
func (r *errRun) recoverClone(o vfs.CrashOptions) recovered {
	c := r.mem.CrashClone(o)
	r.clones++
	h := fsHash(c)
	rec := readRecovered(c)
	if rec.err == nil && rwSampled(r.seed, h, errRWEvery()) {
		r.rwOpens++
		rec.err = reopenReadWrite(c, rec.state, nil)
	}
	return rec
}

// callSite returns the functions on the stack of the Match callback's
// caller that are outside package vfs, innermost first, at most 4, named
// by package ("sieve.(*DB).onObsoleteTables",
// "manifest.(*VersionSet).rotate"; closures by their enclosing function).
func callSite() []string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs) // runtime.Callers, callSite, the Match callback
	frames := runtime.CallersFrames(pcs[:n])
	var out []string
	for len(out) < 4 {
		f, more := frames.Next()
		if fn := f.Function; fn != "" && !strings.HasPrefix(fn, "github.com/sievedb/sieve/vfs.") {
			fn = fn[strings.LastIndexByte(fn, '/')+1:]
			fn = closureSuffix.ReplaceAllString(fn, "")
			if len(out) == 0 || out[len(out)-1] != fn {
				out = append(out, fn)
			}
		}
		if !more {
			break
		}
	}
	return out
}

var closureSuffix = regexp.MustCompile(`(\.func\d+)+(\.\d+)*$`)

// harmlessRule is one kind of failed operation that may go unreported:
// the operation, the kind of file (fileKind), the function that called
// the file system (callSite's innermost), and an extra condition on the
// operations counted before it.
type harmlessRule struct {
	op    vfs.Op
	kinds []string
	site  string
	cond  func(rec []opRec, o opRec) bool
	why   string
}

// harmlessRules are the failures that may go unreported, and only they:
// removing an obsolete file and syncing the directory after such
// removals, listing the directory for the obsolete-file scan at Open, and
// closing a file opened only for reading (the one Close each of
// replayWAL, VersionSet.replay and readCurrent makes itself is of the
// handle it opened with FS.Open; the WAL's seal closes its read-write
// handle in withWAL). A failure anywhere else (a
// directory sync that makes a new file's entry durable, a close of a file
// that was written, a list that recovery relies on, ...) must reach the
// caller or turn the database read-only.
var harmlessRules = []harmlessRule{
	{vfs.OpRemove, []string{"table"}, "sieve.(*DB).onObsoleteTables", nil,
		"removing a table no version names (it stays behind; the next Open deletes it)"},
	{vfs.OpSyncDir, []string{"dir"}, "sieve.(*DB).onObsoleteTables", nil,
		"syncing the directory after removing obsolete tables (a table resurrected by a crash is deleted by the next Open)"},
	{vfs.OpRemove, []string{"WAL"}, "sieve.(*DB).deleteObsoleteWALs", nil,
		"removing a WAL older than the manifest's log number"},
	{vfs.OpSyncDir, []string{"dir"}, "sieve.(*DB).deleteObsoleteWALs", nil,
		"syncing the directory after removing obsolete WALs"},
	{vfs.OpList, []string{"dir"}, "sieve.(*DB).deleteObsoleteFilesLocked", nil,
		"listing the directory for Open's obsolete-file scan (the scan is skipped)"},
	{vfs.OpRemove, []string{"table", "WAL", "MANIFEST", "temp"}, "sieve.(*DB).deleteObsoleteFilesLocked", nil,
		"removing an obsolete file in Open's scan"},
	{vfs.OpSyncDir, []string{"dir"}, "sieve.(*DB).deleteObsoleteFilesLocked", nil,
		"syncing the directory after Open's obsolete-file scan"},
	{vfs.OpRemove, []string{"MANIFEST"}, "manifest.(*VersionSet).rotate", replacedManifest,
		"removing the manifest that a rotation replaced (CURRENT already names the new one)"},
	{vfs.OpSyncDir, []string{"dir"}, "manifest.(*VersionSet).rotate", replacedManifest,
		"syncing the directory after removing the replaced manifest"},
	{vfs.OpClose, []string{"WAL"}, "sieve.(*DB).replayWAL", nil,
		"closing a WAL opened for replay (read only)"},
	{vfs.OpClose, []string{"MANIFEST"}, "manifest.(*VersionSet).replay", nil,
		"closing the manifest opened for replay (read only)"},
	{vfs.OpClose, []string{"CURRENT"}, "manifest.readCurrent", nil,
		"closing CURRENT after reading it"},
}

// replacedManifest holds when a rotation has renamed CURRENT to name the
// newest manifest created and, for a removal, o removes another one; for a
// directory sync, such a removal came first.
func replacedManifest(rec []opRec, o opRec) bool {
	newest, renamed, removedOld := "", false, false
	for _, p := range rec {
		switch {
		case p.op == vfs.OpCreate && fileKind(p.name) == "MANIFEST":
			newest, renamed, removedOld = p.name, false, false
		case p.op == vfs.OpRename && fileKind(p.name) == "CURRENT":
			renamed = newest != ""
		case p.op == vfs.OpRemove && fileKind(p.name) == "MANIFEST" && p.name != newest:
			removedOld = renamed
		}
	}
	if o.op == vfs.OpRemove {
		return renamed && o.name != newest
	}
	return removedOld
}

// harmlessFault returns the rule under which the failure of the Nth
// counted operation may go unreported, or "" (an ENOSPC failure, a write,
// never may).
func (r *errRun) harmlessFault() string {
	rec := r.seen()
	n := int(r.opts.Nth)
	if n <= 0 || n > len(rec) {
		return ""
	}
	o := rec[n-1]
	for _, h := range harmlessRules {
		if h.op != o.op || !slices.Contains(h.kinds, fileKind(o.name)) || len(o.site) == 0 || o.site[0] != h.site {
			continue
		}
		if h.cond == nil || h.cond(rec[:n-1], o) {
			return h.why
		}
	}
	return ""
}

// TestHarmlessRulesAreNarrow: the allow-list of unreported failures
// accepts the housekeeping it names and nothing else of the same kind.
func TestHarmlessRulesAreNarrow(t *testing.T) {
	at := func(o opRec, before ...opRec) string {
		r := &errRun{opts: vfs.ErrorOptions{Nth: int64(len(before) + 1)}, record: append(before, o)}
		return r.harmlessFault()
	}
	rec := func(op vfs.Op, name string, site ...string) opRec { return opRec{op: op, name: name, site: site} }
	rotation := []opRec{rec(vfs.OpCreate, "/db/MANIFEST-000007"), rec(vfs.OpRename, "/db/CURRENT")}
	for _, c := range []struct {
		o      opRec
		before []opRec
		ok     bool
	}{
		{rec(vfs.OpRemove, "/db/000005.sst", "sieve.(*DB).onObsoleteTables"), nil, true},
		{rec(vfs.OpSyncDir, "/db", "sieve.(*DB).onObsoleteTables"), nil, true},
		{rec(vfs.OpList, "/db", "sieve.(*DB).deleteObsoleteFilesLocked"), nil, true},
		{rec(vfs.OpClose, "/db/000004.log", "sieve.(*DB).replayWAL"), nil, true},
		{rec(vfs.OpRemove, "/db/MANIFEST-000003", "manifest.(*VersionSet).rotate"), rotation, true},
		{rec(vfs.OpSyncDir, "/db", "manifest.(*VersionSet).rotate"), append(rotation, rec(vfs.OpRemove, "/db/MANIFEST-000003")), true},
		// A new WAL's, a flush's or a new manifest's directory sync.
		{rec(vfs.OpSyncDir, "/db", "sieve.(*DB).newWALLocked"), nil, false},
		{rec(vfs.OpSyncDir, "/db", "sieve.(*DB).flushGroup"), nil, false},
		{rec(vfs.OpSyncDir, "/db", "manifest.(*VersionSet).rotate"), rotation[:1], false},
		// The new manifest removed by a failed rotation; a table removed
		// by a failed flush.
		{rec(vfs.OpRemove, "/db/MANIFEST-000007", "manifest.(*VersionSet).rotate"), rotation, false},
		{rec(vfs.OpRemove, "/db/000005.sst", "sieve.(*DB).removeFiles"), nil, false},
		// Recovery's directory listing; the seal's read-write handle; a
		// written table; the WAL at Close.
		{rec(vfs.OpList, "/db", "sieve.(*DB).checkDir"), nil, false},
		{rec(vfs.OpClose, "/db/000004.log", "sieve.(*DB).withWAL"), nil, false},
		{rec(vfs.OpClose, "/db/000005.sst", "sieve.(*tableOutput).finish"), nil, false},
		{rec(vfs.OpClose, "/db/000004.log", "sieve.(*DB).Close"), nil, false},
		{rec(vfs.OpRemove, "/db/000004.log", "sieve.(*DB).onObsoleteTables"), nil, false},
		{rec(vfs.OpClose, "/db/000004.log"), nil, false},
	} {
		require.Equal(t, c.ok, at(c.o, c.before...) != "", "%s from %v", c.o, c.o.site)
	}
}
