package sieve

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
)

// Tests of the commit pipeline (commit.go): writers of Sync and NoSync
// batches from many goroutines, readers checking what an acknowledged
// write and a snapshot see, crashes at every step of every group, and a
// failing fsync. SIEVE_SEED replays a run (the seed is logged); SIEVE_LONG
// makes the runs longer.

// gcBatch is one committed batch: its writer and index, its first and
// last sequence numbers.
type gcBatch struct {
	writer, op  int
	first, last uint64
	entries     int
	sync        bool
}

// gcOps is how many ops each writer runs: def, long with SIEVE_LONG, race
// under the race detector.
func gcOps(def, long, race int) int {
	switch {
	case relLong():
		return long
	case relRaceEnabled:
		return race
	}
	return def
}

func gcKey(writer, op, entry int) []byte {
	return fmt.Appendf(nil, "w%02d/%05d/%d", writer, op, entry)
}

func gcValue(writer, op int) []byte { return fmt.Appendf(nil, "v%d.%d", writer, op) }

// gcEntries is how many entries op of writer has (1 to 3): a reader can
// tell which keys a batch in flight writes.
func gcEntries(writer, op int) int { return 1 + (writer+op)%3 }

// gcWrite builds and applies op of writer (Sync with probability 1/2) and
// returns what it committed.
func gcWrite(db *DB, rng *rand.Rand, writer, op int) (gcBatch, error) {
	b := db.NewBatch()
	n := gcEntries(writer, op)
	for e := range n {
		if err := b.Put(gcKey(writer, op, e), gcValue(writer, op)); err != nil {
			return gcBatch{}, err
		}
	}
	wo := NoSync
	if rng.IntN(2) == 0 {
		wo = Sync
	}
	if err := db.Apply(b, wo); err != nil {
		return gcBatch{}, err
	}
	first := b.seq()
	return gcBatch{writer: writer, op: op, first: first, last: first + uint64(n) - 1, entries: n, sync: wo.Sync}, nil
}

// gcRunWriters runs ops writes from each of writers goroutines, calling
// acked (from the writer's goroutine) after each, and returns the first
// error.
func gcRunWriters(db *DB, seed int64, writers, ops int, acked func(gcBatch)) error {
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			for i := range ops {
				b, err := gcWrite(db, rng, w, i)
				if err != nil {
					errs[w] = fmt.Errorf("writer %d op %d: %w", w, i, err)
					return
				}
				acked(b)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// slowWALSyncs makes every WAL fsync of fs take d, as a disk's would, so
// that writers queue behind it and groups form.
func slowWALSyncs(fs *vfs.MemFS, d time.Duration) {
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		if op == vfs.OpSync && fileKind(name) == "WAL" {
			time.Sleep(d)
		}
	})
}

// gcLog is the batches acknowledged so far, in acknowledgement order and
// by writer.
type gcLog struct {
	mu       sync.Mutex
	batches  []gcBatch
	byWriter [][]gcBatch
}

func newGCLog(writers int) *gcLog { return &gcLog{byWriter: make([][]gcBatch, writers)} }

func (l *gcLog) add(b gcBatch) {
	l.mu.Lock()
	l.batches = append(l.batches, b)
	l.byWriter[b.writer] = append(l.byWriter[b.writer], b)
	l.mu.Unlock()
}

// get returns op of writer, if acknowledged.
func (l *gcLog) get(writer, op int) (gcBatch, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if op < len(l.byWriter[writer]) {
		return l.byWriter[writer][op], true
	}
	return gcBatch{}, false
}

// tail returns up to n of the last batches acknowledged.
func (l *gcLog) tail(n int) []gcBatch {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]gcBatch(nil), l.batches[max(0, len(l.batches)-n):]...)
}

// gcCounts are the cases the concurrent test's readers reached.
type gcCounts struct {
	ackVisible, snapVisible, snapInvisible atomic.Int64
	// inflightWhole counts batches not yet acknowledged that a snapshot
	// saw whole, inflightChecked the sightings of such batches checked
	// against their sequence numbers once they were acknowledged.
	inflightWhole, inflightChecked atomic.Int64
}

// gcSighting is what a snapshot at seq saw of a batch not yet acknowledged.
type gcSighting struct {
	seq       uint64
	writer    int
	op        int
	whole     bool
	sightings int // of the same batch at the same seq, folded into one
}

// TestGroupCommitConcurrent runs writers of Sync and NoSync batches
// against readers that check, while the writes go on, that (1) a write is
// visible once its Apply returned, and (2) a snapshot sees each batch
// whole or not at all, exactly as its sequence numbers say: batches up to
// the snapshot's sequence number entirely, later ones not at all. A group
// published before all of its batches were in the memtable, or groups
// applied out of order, fail (2). The memtables are small, so the writes
// rotate them (the pipeline drains first) and flush many times. It checks
// that groups of more than one writer formed and shared fsyncs.
func TestGroupCommitConcurrent(t *testing.T) {
	seed := testutil.Seed(t)
	writers, ops := 8, gcOps(250, 3000, 80)
	hooks.afterApply = func() { time.Sleep(20 * time.Microsecond) }
	defer func() { hooks.afterApply = nil }()
	fs := vfs.NewMem()
	slowWALSyncs(fs, 200*time.Microsecond)
	o := crashOptions(fs)
	db, err := Open("/db", o)
	require.NoError(t, err)
	var (
		log    = newGCLog(writers)
		acked  = make([]atomic.Int64, writers) // ops acknowledged per writer
		counts gcCounts
		done   atomic.Bool
		errs   = make(chan error, writers+2)
		wg     sync.WaitGroup
	)
	wg.Go(func() {
		err := gcRunWriters(db, seed, writers, ops, func(b gcBatch) {
			log.add(b)
			acked[b.writer].Store(int64(b.op + 1))
		})
		if err != nil {
			errs <- err
		}
	})
	var readers sync.WaitGroup
	for r := range 2 {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(100+r)))
		readers.Go(func() { gcReader(db, rng, log, acked, &counts, &done, errs) })
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v (seed %d)", err, seed)
	}
	// A rotated memtable's flush runs in the background: wait for it, so
	// that the flush count says whether the memtable rotated.
	waitImmutablesFlushed(t, db)
	m := db.Metrics()
	counts.requireReached(t, m)
	require.NotZero(t, m.Flush.Count, "the memtable never rotated")
	require.Equal(t, int64(writers*ops), m.Commit.Batches)
	gcCheckAll(t, db, log.tail(writers*ops))
	require.NoError(t, db.Close())
	db, err = Open("/db", o)
	require.NoError(t, err)
	gcCheckAll(t, db, log.tail(writers*ops))
	require.NoError(t, db.Close())
}

// gcReader checks until done is set, sending the first violation to errs.
func gcReader(db *DB, rng *rand.Rand, log *gcLog, acked []atomic.Int64, counts *gcCounts, done *atomic.Bool, errs chan<- error) {
	var seen []gcSighting
	for !done.Load() {
		var err error
		if seen, err = gcReadCheck(db, rng, log, acked, counts, seen); err != nil {
			errs <- err
			return
		}
		if relRaceEnabled {
			// Under the race detector every ranked lock a read takes
			// goes through lockrank's one mutex: let the writers have it.
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := gcCheckSightings(log, seen, counts); err != nil {
		errs <- err
	}
}

// requireReached logs the counts and the commit metrics and fails unless
// every case was reached, groups of several writers formed and Sync
// writers shared fsyncs.
func (c *gcCounts) requireReached(t *testing.T, m *Metrics) {
	t.Helper()
	t.Logf("%s; %d flushes; checks: %d acknowledged writes visible, %d batches visible and %d invisible in snapshots, %d unacknowledged batches seen whole, %d sightings checked",
		m.Commit, m.Flush.Count, c.ackVisible.Load(), c.snapVisible.Load(), c.snapInvisible.Load(), c.inflightWhole.Load(), c.inflightChecked.Load())
	require.NotZero(t, c.ackVisible.Load(), "no acknowledged write checked")
	require.NotZero(t, c.snapVisible.Load(), "no batch checked visible in a snapshot")
	require.NotZero(t, c.snapInvisible.Load(), "no batch checked invisible in a snapshot")
	require.NotZero(t, c.inflightWhole.Load(), "no batch in flight seen by a snapshot")
	require.NotZero(t, c.inflightChecked.Load(), "no sighting of a batch in flight checked")
	require.Greater(t, m.Commit.MaxGroup, int64(1), "no group of more than one writer formed")
	require.Less(t, m.Commit.Syncs, m.Commit.SyncBatches, "Sync writers did not share fsyncs")
}

// gcReadCheck is one round of a reader of TestGroupCommitConcurrent. seen
// holds the sightings of batches in flight not yet checked; it returns
// those still unchecked.
func gcReadCheck(db *DB, rng *rand.Rand, log *gcLog, acked []atomic.Int64, counts *gcCounts, seen []gcSighting) ([]gcSighting, error) {
	w := rng.IntN(len(acked))
	if n := int(acked[w].Load()); n > 0 {
		op := rng.IntN(n)
		v, err := db.Get(gcKey(w, op, 0))
		if err != nil || string(v) != string(gcValue(w, op)) {
			return nil, fmt.Errorf("acknowledged write %s: got %q, %v", gcKey(w, op, 0), v, err)
		}
		counts.ackVisible.Add(1)
	}
	snapshots, tail := 8, 24
	if relRaceEnabled {
		snapshots, tail = 2, 6
	}
	for range snapshots {
		s := db.NewSnapshot()
		var err error
		seen, err = gcInflightCheck(s, acked, counts, seen)
		s.Close()
		if err != nil {
			return nil, err
		}
	}
	seen, err := gcCheckSightings(log, seen, counts)
	if err != nil {
		return nil, err
	}
	s := db.NewSnapshot()
	defer s.Close()
	// Let writes land after the snapshot, so that the log's tail holds
	// batches above its sequence number.
	runtime.Gosched()
	time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
	for _, b := range log.tail(tail) {
		if err := gcSnapshotCheck(s, b, counts); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// gcInflightCheck checks, right after s was taken, that s sees each
// writer's next batches (perhaps being applied at this moment) whole or
// not at all, and appends the sightings to seen, to be checked against the
// batches' sequence numbers once known (gcCheckSightings). A group whose
// sequence numbers were published before all of its batches were in the
// memtable shows as a batch seen in part, or as a batch not seen at a
// sequence number that covers it.
func gcInflightCheck(s *Snapshot, acked []atomic.Int64, counts *gcCounts, seen []gcSighting) ([]gcSighting, error) {
	for w := range acked {
		next := int(acked[w].Load())
		for op := next; op < next+2; op++ {
			found := 0
			n := gcEntries(w, op)
			for e := range n {
				if _, err := s.Get(gcKey(w, op, e)); err == nil {
					found++
				} else if !errors.Is(err, ErrNotFound) {
					return nil, err
				}
			}
			if found != 0 && found != n {
				return nil, fmt.Errorf("snapshot at %d sees %d of the %d entries of batch %d.%d", s.seq, found, n, w, op)
			}
			if found == n {
				counts.inflightWhole.Add(1)
			}
			seen = gcNoteSighting(seen, gcSighting{seq: s.seq, writer: w, op: op, whole: found == n})
		}
	}
	return seen, nil
}

// gcNoteSighting appends g to seen, folding it into the last sighting of
// the same batch at the same sequence number (a reader sees the same
// state many times while writers wait for their fsync).
func gcNoteSighting(seen []gcSighting, g gcSighting) []gcSighting {
	for i := len(seen) - 1; i >= 0; i-- {
		if p := &seen[i]; p.seq == g.seq && p.writer == g.writer && p.op == g.op && p.whole == g.whole {
			p.sightings++
			return seen
		}
		if seen[i].seq != g.seq {
			break
		}
	}
	g.sightings = 1
	return append(seen, g)
}

// gcCheckSightings checks the sightings of batches acknowledged since:
// seen whole exactly when the snapshot's sequence number covers the
// batch. It returns the sightings still unchecked.
func gcCheckSightings(log *gcLog, seen []gcSighting, counts *gcCounts) ([]gcSighting, error) {
	keep := seen[:0]
	for _, g := range seen {
		b, ok := log.get(g.writer, g.op)
		if !ok {
			keep = append(keep, g)
			continue
		}
		if covered := b.last <= g.seq; covered != g.whole {
			return nil, fmt.Errorf("a snapshot at %d saw batch %d.%d [%d, %d] whole: %v, %d times: a group's sequence numbers were published before its writes",
				g.seq, g.writer, g.op, b.first, b.last, g.whole, g.sightings)
		}
		counts.inflightChecked.Add(int64(g.sightings))
	}
	return keep, nil
}

// gcSnapshotCheck checks that s sees batch b whole when b is at or below
// its sequence number and not at all when above.
func gcSnapshotCheck(s *Snapshot, b gcBatch, counts *gcCounts) error {
	if b.first <= s.seq && s.seq < b.last {
		return fmt.Errorf("snapshot at %d splits batch %d.%d [%d, %d]: sequence numbers are not published per group", s.seq, b.writer, b.op, b.first, b.last)
	}
	visible := b.last <= s.seq
	for e := range b.entries {
		v, err := s.Get(gcKey(b.writer, b.op, e))
		switch {
		case visible && (err != nil || string(v) != string(gcValue(b.writer, b.op))):
			return fmt.Errorf("snapshot at %d: entry %d of batch %d.%d [%d, %d] missing: %q, %v", s.seq, e, b.writer, b.op, b.first, b.last, v, err)
		case !visible && !errors.Is(err, ErrNotFound):
			return fmt.Errorf("snapshot at %d: entry %d of batch %d.%d [%d, %d] visible too early: %q, %v", s.seq, e, b.writer, b.op, b.first, b.last, v, err)
		}
	}
	if visible {
		counts.snapVisible.Add(1)
	} else {
		counts.snapInvisible.Add(1)
	}
	return nil
}

// gcCheckAll checks that every entry of batches reads back.
func gcCheckAll(t *testing.T, db *DB, batches []gcBatch) {
	t.Helper()
	for _, b := range batches {
		for e := range b.entries {
			v, err := db.Get(gcKey(b.writer, b.op, e))
			require.NoError(t, err, "batch %d.%d entry %d", b.writer, b.op, e)
			require.Equal(t, string(gcValue(b.writer, b.op)), string(v))
		}
	}
}

// gcCrashPoint is a crash clone taken at a WAL write or fsync, with how
// many batches had been acknowledged by then.
type gcCrashPoint struct {
	fs    *vfs.MemFS
	acked int
	event string
	mode  vfs.UnsyncedMode
}

// TestGroupCommitCrash crashes a run of concurrent Sync and NoSync writers
// at every step of every commit group: a clone of the file system is taken
// at each WAL write (a group's record reached the file) and each WAL fsync
// (with the writes acknowledged before it), in each of the crash modes in
// turn, and right after each Sync write is acknowledged, and recovered. Every acknowledged Sync batch must survive, each
// batch whole or not at all, and each writer's surviving batches must be a
// prefix of what it wrote (its batches reach the WAL in order).
func TestGroupCommitCrash(t *testing.T) {
	seed := testutil.Seed(t)
	writers, ops := 4, gcOps(40, 400, 12)
	// A delay between a group's write and its fsync lets the next group
	// be written before the fsync starts, so that groups also find an
	// fsync in flight that does not cover them.
	// An fsync that takes time before it syncs lets writes be
	// acknowledged while it runs: a group acknowledged before the fsync
	// covering it would be caught by the crash point its writer takes.
	hooks.afterWrite = func() { time.Sleep(50 * time.Microsecond) }
	hooks.beforeSync = func() { time.Sleep(100 * time.Microsecond) }
	defer func() { hooks.afterWrite, hooks.beforeSync = nil, nil }()
	fs := vfs.NewMem()
	var (
		mu     sync.Mutex
		acked  []gcBatch
		events int
	)
	points := make(chan gcCrashPoint, 4)
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		if fileKind(name) != "WAL" || (op != vfs.OpWrite && op != vfs.OpSync) {
			return
		}
		mu.Lock()
		events++
		ev, n := events, len(acked)
		mu.Unlock()
		points <- gcClonePoint(fs, seed, ev, n, fmt.Sprintf("%d: %s %s", ev, op, name))
	})
	checked := make(chan gcCrashTally)
	go func() { checked <- gcCheckCrashPoints(points, writers, ops, &mu, &acked) }()
	db, err := Open("/db", crashOptions(fs))
	require.NoError(t, err)
	err = gcRunWriters(db, seed, writers, ops, func(b gcBatch) {
		mu.Lock()
		acked = append(acked, b)
		n := len(acked)
		mu.Unlock()
		if b.sync {
			// A crash right after the acknowledgement.
			points <- gcClonePoint(fs, seed, 0, n, fmt.Sprintf("ack of %d.%d", b.writer, b.op))
		}
	})
	require.NoError(t, err)
	m := db.Metrics()
	require.NoError(t, db.Close())
	fs.SetDurabilityHook(nil)
	close(points)
	tally := <-checked
	tally.report(t, m, seed)
	require.Greater(t, m.Commit.MaxGroup, int64(1), "no group of more than one writer formed")
	require.Less(t, m.Commit.Syncs, m.Commit.SyncBatches, "Sync writers did not share fsyncs")
	require.NotZero(t, m.Commit.SyncWaits, "no group found an fsync in flight")
}

// report logs the tally and fails on its failures and unless crash
// points with acknowledged Sync batches were checked.
func (tally *gcCrashTally) report(t *testing.T, m *Metrics, seed int64) {
	t.Helper()
	t.Logf("%s; %d crash points, %d with an acknowledged Sync batch; %d acknowledged Sync batches found after a crash",
		m.Commit, tally.points, tally.withSync, tally.syncChecks)
	for _, f := range tally.failures {
		t.Error(f)
	}
	if len(tally.failures) > 0 {
		t.Fatalf("replay: SIEVE_SEED=%d go test -run '^TestGroupCommitCrash$' .", seed)
	}
	require.NotZero(t, tally.points, "no crash point")
	require.NotZero(t, tally.syncChecks, "no acknowledged Sync batch checked after a crash")
}

// gcClonePoint takes crash point ev of fs, in the ev'th crash mode.
func gcClonePoint(fs *vfs.MemFS, seed int64, ev, acked int, event string) gcCrashPoint {
	modes := []vfs.UnsyncedMode{vfs.DropUnsynced, vfs.KeepUnsyncedPrefix, vfs.KeepUnsyncedSectors, vfs.ZeroUnsynced, vfs.GarbageUnsynced}
	mode := modes[ev%len(modes)]
	clone := fs.CrashClone(vfs.CrashOptions{Unsynced: mode, KeepUnsyncedFraction: 0.5, Seed: uint64(seed) + uint64(ev)})
	return gcCrashPoint{fs: clone, acked: acked, event: event, mode: mode}
}

// gcCrashTally is what gcCheckCrashPoints found.
type gcCrashTally struct {
	points, withSync, syncChecks int
	failures                     []string
}

// gcCheckCrashPoints recovers each crash point and checks it against the
// batches acknowledged before it (acked[:p.acked], read under mu).
func gcCheckCrashPoints(points <-chan gcCrashPoint, writers, ops int, mu *sync.Mutex, acked *[]gcBatch) gcCrashTally {
	var tally gcCrashTally
	for p := range points {
		tally.points++
		rec := readRecovered(p.fs)
		mu.Lock()
		before := append([]gcBatch(nil), (*acked)[:p.acked]...)
		mu.Unlock()
		msg, syncs := gcCheckRecovered(rec, before, writers, ops)
		if syncs > 0 {
			tally.withSync++
		}
		tally.syncChecks += syncs
		if msg != "" && len(tally.failures) < 10 {
			tally.failures = append(tally.failures, fmt.Sprintf("crash at event %s (%s): %s", p.event, p.mode, msg))
		}
	}
	return tally
}

// gcCheckRecovered checks a recovered state: each writer's batches a
// prefix of its ops, each whole, and every Sync batch of before among
// them. It returns what is wrong ("" if nothing) and how many Sync
// batches it checked.
func gcCheckRecovered(rec recovered, before []gcBatch, writers, ops int) (string, int) {
	if rec.err != nil {
		return fmt.Sprintf("recovery failed: %v", rec.err), 0
	}
	kv := rec.state[0]
	survived := make([]int, writers) // ops [0, survived[w]) of writer w
	for w := range writers {
		for op := range ops {
			found := 0
			n := gcEntries(w, op)
			for e := range n {
				if v, ok := kv[string(gcKey(w, op, e))]; ok {
					if v != string(gcValue(w, op)) {
						return fmt.Sprintf("batch %d.%d entry %d has value %q", w, op, e, v), 0
					}
					found++
				}
			}
			switch {
			case found != 0 && found != n:
				return fmt.Sprintf("batch %d.%d survived in part (%d of %d entries)", w, op, found, n), 0
			case found == n && survived[w] != op:
				return fmt.Sprintf("batch %d.%d survived but %d.%d did not", w, op, w, survived[w]), 0
			case found == n:
				survived[w]++
			}
		}
	}
	syncs := 0
	for _, b := range before {
		if !b.sync {
			continue
		}
		if b.op >= survived[b.writer] {
			return fmt.Sprintf("acknowledged Sync batch %d.%d [%d, %d] lost (writer %d kept %d batches)", b.writer, b.op, b.first, b.last, b.writer, survived[b.writer]), syncs
		}
		syncs++
	}
	return "", syncs
}

// TestGroupCommitSyncFailure fails one WAL fsync (a transient error: the
// next one would succeed) under concurrent Sync and NoSync writers. The
// fsync is never retried (no other WAL fsync is attempted), the group it
// was for and every later one fail, the DB refuses writes from then on,
// and every Sync write acknowledged before it survives a crash.
func TestGroupCommitSyncFailure(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	writers := 8
	mem := vfs.NewMem()
	slowWALSyncs(mem, 200*time.Microsecond)
	nth := int64(5 + rng.IntN(20))
	efs := vfs.NewErrorFS(mem, vfs.ErrorOptions{Ops: vfs.OpsOf(vfs.OpSync), Nth: nth,
		Match: func(_ vfs.Op, name string) bool { return fileKind(name) == "WAL" }})
	o := crashOptions(efs)
	o.MemTableSize = 4 << 20 // no rotation: its WAL close would sync
	db, err := Open("/db", o)
	require.NoError(t, err)
	var (
		mu     sync.Mutex
		acked  []gcBatch
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(1+w)))
			for i := 0; ; i++ {
				b, err := gcWrite(db, rng, w, i)
				if err != nil {
					if !errors.Is(err, vfs.ErrInjected) {
						t.Errorf("writer %d op %d: %v, not the injected error", w, i, err)
					}
					failed.Add(1)
					return
				}
				mu.Lock()
				acked = append(acked, b)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Error(t, db.Put([]byte("after"), []byte("x"), Sync), "a write after the failed fsync succeeded")
	m := db.Metrics()
	t.Logf("%s; fsync %d failed; %d writers saw it, %d batches acknowledged", m.Commit, nth, failed.Load(), len(acked))
	require.Equal(t, nth, efs.Ops(), "WAL fsyncs attempted: the failed one was retried, or one followed it")
	require.Equal(t, int64(writers), failed.Load())
	require.Greater(t, m.Commit.MaxGroup, int64(1), "no group of more than one writer formed")
	db.Close() // reports the failure again
	rec := readRecovered(mem.CrashClone(vfs.CrashOptions{}))
	var syncs int
	for _, b := range acked {
		if !b.sync {
			continue
		}
		for e := range b.entries {
			require.Equal(t, string(gcValue(b.writer, b.op)), rec.state[0][string(gcKey(b.writer, b.op, e))],
				"acknowledged Sync batch %d.%d lost (seed %d)", b.writer, b.op, seed)
		}
		syncs++
	}
	require.NotZero(t, syncs, "no Sync batch acknowledged before the failure")
}
