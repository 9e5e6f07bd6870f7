package sieve

import (
	"fmt"
	"sync"
	"time"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/lockrank"
	"github.com/sievedb/sieve/memtable"
	"github.com/sievedb/sieve/wal"
)

// maxGroupBytes bounds how many bytes of queued batches one leader commits
// in a single WAL record.
const maxGroupBytes = 4 << 20

// commitPipeline commits writes in groups, in three stages that different
// groups occupy at once (Pebble's commit pipeline and LogWriter flush loop,
// RocksDB's pipelined write, in the shape of LevelDB's writer queue):
//
//  1. Write. Each writer enqueues itself; the writer at the head of the
//     queue leads: it takes every queued batch (up to maxGroupBytes),
//     makes room (stall.go), numbers the batches and writes them as one
//     WAL record. A group that asks for Sync first waits for an fsync in
//     flight to end, gathering every writer that queues meanwhile, so that
//     one record and one fsync cover them all. The leader then hands the
//     queue to the next leader and appends its group to pending.
//  2. Sync. A group that asked for Sync waits until the WAL is synced past
//     its record. If no fsync is running its leader runs one, covering
//     every record written so far, its successors' too. A failed fsync is
//     never retried: that group and every later one fail, and the DB is
//     read-only (db.mu.bgErr).
//  3. Apply. Groups are applied in the order they were written: the
//     leader of pending[0] inserts its batches into the memtable, then
//     publishes the group's last sequence number (readers see a group in
//     one step), wakes its followers and hands pending[0] to the next
//     group.
//
// So a write returns after its group is visible, and a Sync write after
// its record is durable too; the disk syncs one group while the next is
// gathered and written and the previous one applied. Anything that must
// see no commit in flight (rotating the WAL or the memtable, Close,
// Checkpoint, Ingest) takes the head of the queue and waits for pending to
// drain (acquire, drain).
type commitPipeline struct {
	mu sync.Mutex
	// queue holds the writers waiting for the write stage; queue[0]
	// leads it.
	queue []*writer
	// pending holds the leaders of groups written to the WAL and not yet
	// applied, in WAL order.
	pending []*writer
	// syncing is set while a leader runs an fsync of the WAL; syncCond
	// is broadcast when it ends, idleCond when pending empties.
	syncing  bool
	syncCond sync.Cond
	idleCond sync.Cond
	// returning estimates how many Sync writers released by an fsync
	// have not queued again since; lastSync is the last fsync's duration.
	// gathering is set while a leader waits for them (gatherCond wakes
	// it; gatherEpoch tells its timer from a later wait's).
	returning      int
	lastSync       time.Duration
	gathering      bool
	gatherTimedOut bool
	gatherCond     sync.Cond
	gatherEpoch    uint64
	// bgSyncing is set, with syncing, while a background fsync of
	// unsynced records runs (syncWALInBackground); drain waits for it,
	// since the WAL must not be closed under it.
	bgSyncing bool
	// failed is the error of the first group that failed after its WAL
	// write (an fsync): every later group fails with it.
	failed error
	// buf holds the combined record of a multi-batch group.
	buf []byte
}

// writer is one batch waiting to commit; a group's leader also carries the
// group through the pipeline. Every field is guarded by commitPipeline.mu
// except the group fields, which only the leader touches.
type writer struct {
	batch *Batch
	sync  bool
	// lead is set when the writer reaches the head of the queue; done
	// when a leader has committed it (with err).
	lead, done bool
	err        error
	cond       sync.Cond

	// The group this writer leads: its writers (this one first), whether
	// any asked for Sync, the WAL and memtable it went to, the WAL offset
	// past its record and its last sequence number.
	group     []*writer
	groupSync bool
	log       *wal.Writer
	mem       *memGroup
	end       int64
	last      uint64
}

var writerPool = sync.Pool{New: func() any { return new(writer) }}

// newWriter returns a pooled writer for b (nil for acquire).
func (p *commitPipeline) newWriter(b *Batch, sync bool) *writer {
	w := writerPool.Get().(*writer)
	group := w.group[:0]
	*w = writer{batch: b, sync: sync, group: group}
	w.cond.L = &p.mu
	return w
}

// enqueue appends w to the queue and waits until it leads or a leader has
// committed it. REQUIRES: p.mu held.
func (p *commitPipeline) enqueue(w *writer) {
	if p.syncCond.L == nil {
		p.syncCond.L = &p.mu
		p.idleCond.L = &p.mu
		p.gatherCond.L = &p.mu
	}
	switch {
	case w.batch == nil:
		// acquire: a leader waiting for writers to return stops.
		p.returning = 0
	case w.sync && p.returning > 0:
		p.returning--
	}
	if p.gathering && p.returning == 0 {
		p.gatherCond.Signal()
	}
	p.queue = append(p.queue, w)
	if len(p.queue) == 1 {
		w.lead = true
	}
	for !w.done && !w.lead {
		w.cond.Wait()
	}
}

// popQueue removes the first n writers from the queue and makes the next
// one lead. REQUIRES: p.mu held.
func (p *commitPipeline) popQueue(n int) {
	p.queue = popFront(p.queue, n)
	if len(p.queue) > 0 {
		p.queue[0].lead = true
		p.queue[0].cond.Signal()
	}
}

// popFront removes the first n writers of q in place. Re-slicing from the
// front instead would shrink q's capacity, and every later append would
// allocate a new array (3% of a lone NoSync writer's profile).
func popFront(q []*writer, n int) []*writer {
	k := copy(q, q[n:])
	clear(q[k:])
	return q[:k]
}

// acquire makes the caller the leader with an empty group and waits until
// no group is in flight, blocking writers until release. Used by Close
// and by operations that must not run concurrently with a commit
// (rotating the WAL from outside the pipeline).
func (p *commitPipeline) acquire() {
	lockrank.Acquire(lockrank.Commit)
	w := p.newWriter(nil, false)
	p.mu.Lock()
	p.enqueue(w)
	p.drainLocked()
	p.mu.Unlock()
}

// acquireWrite is acquire without waiting for the groups in flight: the
// caller may use the WAL writer as a write-stage leader does (write its
// buffer), not close or replace it.
func (p *commitPipeline) acquireWrite() {
	lockrank.Acquire(lockrank.Commit)
	w := p.newWriter(nil, false)
	p.mu.Lock()
	p.enqueue(w)
	p.mu.Unlock()
}

// release ends a leadership taken by acquire or acquireWrite.
func (p *commitPipeline) release() {
	p.mu.Lock()
	w := p.queue[0]
	p.popQueue(1)
	p.mu.Unlock()
	writerPool.Put(w)
	lockrank.Release(lockrank.Commit)
}

// drain waits until every group written so far is applied (or failed).
// REQUIRES: the caller leads the write stage, so that no group is added.
func (p *commitPipeline) drain() {
	p.mu.Lock()
	p.drainLocked()
	p.mu.Unlock()
}

func (p *commitPipeline) drainLocked() {
	for len(p.pending) > 0 || p.bgSyncing {
		p.idleCond.Wait()
	}
}

// idle reports whether no group and no background fsync is in flight.
func (p *commitPipeline) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending) == 0 && !p.bgSyncing
}

// apply commits b. It returns once b is in the WAL (and synced when sync is
// set) and visible to readers, or with the error that prevented it.
func (db *DB) apply(b *Batch, sync bool) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if b.err != nil {
		return b.err
	}
	if b.count == 0 {
		return nil
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	b.finish()
	// Queuing may wait for the leader, and the leader may become this
	// goroutine: both rank as holding Commit.
	lockrank.Acquire(lockrank.Commit)
	defer lockrank.Release(lockrank.Commit)
	p := &db.commit
	w := p.newWriter(b, sync)
	p.mu.Lock()
	p.enqueue(w)
	if w.done {
		err := w.err
		p.mu.Unlock()
		writerPool.Put(w)
		return err
	}
	size := p.gatherLocked(w, &db.metrics.commit)
	p.mu.Unlock()
	err := db.commitGroup(w, size)
	writerPool.Put(w)
	return err
}

// gatherLocked makes w's group: w and the writers queued after it, up to
// maxGroupBytes. A group with a Sync writer first waits for an fsync in
// flight (whose end it could not share), and may wait for the writers the
// last fsync released (waitReturningLocked); whoever queues meanwhile
// joins. It returns the group's size in bytes. REQUIRES: p.mu held, w
// leads.
func (p *commitPipeline) gatherLocked(w *writer, m *commitCounters) int {
	waited := false
	for {
		size, full := p.collectLocked(w)
		switch {
		case !w.groupSync:
			return size
		case p.syncing:
			for p.syncing {
				p.syncCond.Wait()
			}
		case waited || full || p.returning == 0 || p.lastSync <= 0:
			return size
		default:
			p.waitReturningLocked(m)
			waited = true
		}
	}
}

// collectLocked sets w's group to w and the writers queued after it, up
// to maxGroupBytes, and returns its size in bytes and whether a writer was
// left out (the byte limit, or acquire's writer). REQUIRES: p.mu held.
func (p *commitPipeline) collectLocked(w *writer) (size int, full bool) {
	w.group = append(w.group[:0], w)
	w.groupSync = w.sync
	size = len(w.batch.data)
	for _, f := range p.queue[1:] {
		// A writer without a batch took the pipeline with acquire: it
		// runs alone, after this group.
		if f.batch == nil || size+len(f.batch.data) > maxGroupBytes {
			return size, true
		}
		size += len(f.batch.data)
		w.groupSync = w.groupSync || f.sync
		w.group = append(w.group, f)
	}
	return size, false
}

// waitReturningLocked waits, before a Sync group is written, for the
// writers that the last fsync released to queue their next writes, for at
// most half the last fsync's duration. Without it, writers that each wait
// for their fsync split into two cohorts that alternate (one syncs while
// the other queues), each fsync covering half of them; merged, one fsync
// covers all of them and costs one re-queueing delay, a win while that
// delay is below an fsync. Writers that do not come back cost one wait:
// a timeout forgets them. REQUIRES: p.mu held, the caller leads, no fsync
// in flight.
func (p *commitPipeline) waitReturningLocked(m *commitCounters) {
	m.gatherWaits.Add(1)
	p.gatherEpoch++
	epoch := p.gatherEpoch
	p.gathering, p.gatherTimedOut = true, false
	t := time.AfterFunc(p.lastSync/2, func() {
		p.mu.Lock()
		if p.gathering && p.gatherEpoch == epoch {
			p.gatherTimedOut = true
			p.gatherCond.Broadcast()
		}
		p.mu.Unlock()
	})
	for p.returning > 0 && !p.gatherTimedOut {
		p.gatherCond.Wait()
	}
	t.Stop()
	if p.gatherTimedOut {
		m.gatherTimeouts.Add(1)
		p.returning = 0
	}
	p.gathering = false
}

// commitGroup runs w's group through the pipeline's stages and wakes its
// followers with the outcome, which it returns. REQUIRES: w leads.
func (db *DB) commitGroup(w *writer, size int) error {
	p := &db.commit
	err := db.writeGroup(w, size)
	p.mu.Lock()
	if err == nil && !w.groupSync && len(p.pending) == 0 {
		// Nothing to overlap with: a NoSync group with no group ahead of
		// it is applied in the write stage, which it then hands on
		// together with its followers' outcome (the lone writer's
		// common case, without the stage handoffs' locking).
		return db.applyDirectLocked(w)
	}
	if err == nil {
		p.pending = append(p.pending, w)
	}
	p.popQueue(len(w.group))
	p.mu.Unlock()
	if err == nil {
		if hooks.afterWrite != nil {
			hooks.afterWrite()
		}
		if w.groupSync {
			err = db.syncGroup(w)
		}
		err = db.applyGroup(w, err)
	}
	p.mu.Lock()
	for _, f := range w.group[1:] {
		f.err, f.done = err, true
		f.cond.Signal()
	}
	p.mu.Unlock()
	clear(w.group)
	w.group = w.group[:0]
	return err
}

// insertGroup inserts w's batches into its memtable and publishes the
// group's last sequence number: readers see the group in one step.
// REQUIRES: w's group is the next to apply.
func (db *DB) insertGroup(w *writer) {
	for _, f := range w.group {
		db.applyToMemtable(w.mem, f.batch)
		if hooks.afterApply != nil {
			hooks.afterApply()
		}
	}
	db.visibleSeq.Store(w.last)
}

// applyDirectLocked applies w's group while it still leads the write
// stage (so no other group is written or pending), publishes it, hands
// the write stage on and wakes its followers. An earlier group's failure
// fails it. REQUIRES: p.mu held (released on return), w leads, w's group
// is written, nothing is pending.
func (db *DB) applyDirectLocked(w *writer) error {
	p := &db.commit
	err := p.failed
	p.mu.Unlock()
	if err == nil {
		db.insertGroup(w)
	}
	p.mu.Lock()
	for _, f := range w.group[1:] {
		f.err, f.done = err, true
		f.cond.Signal()
	}
	p.popQueue(len(w.group))
	p.mu.Unlock()
	clear(w.group)
	w.group = w.group[:0]
	return err
}

// writeGroup makes room for w's group, numbers its batches and writes them
// as one WAL record: handed to the file when the group asked for Sync,
// buffered otherwise. REQUIRES: w leads the write stage.
func (db *DB) writeGroup(w *writer, size int) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if err := db.makeRoomForWrite(size); err != nil {
		return err
	}
	seq := db.logSeq + 1
	var count uint64
	for _, f := range w.group {
		f.batch.setSeq(seq + count)
		count += uint64(f.batch.count)
	}
	if seq+count-1 > base.SeqNumMax {
		return fmt.Errorf("sieve: sequence numbers exhausted")
	}
	record := w.batch.data
	if len(w.group) > 1 {
		buf := db.commit.buf[:0]
		for _, f := range w.group {
			buf = append(buf, f.batch.data...)
		}
		db.commit.buf = buf
		record = buf
	}
	var werr error
	if w.groupSync {
		_, werr = db.log.w.WriteRecord(record)
	} else {
		// Unsynced groups are buffered and written in 64 KiB pieces (or
		// by the flush timer): a write system call per record would
		// dominate small NoSync writes.
		werr = db.log.w.BufferRecord(record)
		if werr == nil && db.log.w.Buffered() > 0 {
			db.scheduleWALFlush()
		}
		if werr == nil {
			db.maybeSyncWALInBackground(db.log.w)
		}
	}
	if werr != nil {
		db.setBackgroundError(fmt.Errorf("WAL %s write: %w", base.FileName(base.FileTypeLog, db.log.num), werr))
		return werr
	}
	db.logSeq = seq + count - 1
	// mem and log stay while the group is in flight: rotating them waits
	// for the pipeline to drain.
	w.log, w.end, w.mem, w.last = db.log.w, db.log.w.Size(), db.mu.mem, db.logSeq
	db.metrics.noteGroup(w, len(record))
	return nil
}

// syncGroup waits until w's record is durable, running the fsync itself
// when none is in flight: it covers every record written so far, so the
// groups written while it runs share the next one. REQUIRES: w's group
// is pending.
func (db *DB) syncGroup(w *writer) error {
	p := &db.commit
	waited := false
	p.mu.Lock()
	for {
		if p.failed != nil {
			err := p.failed
			p.mu.Unlock()
			return err
		}
		if w.log.SyncedOffset() >= w.end {
			p.returning += w.syncWriters()
			p.mu.Unlock()
			return nil
		}
		if !p.syncing {
			break
		}
		if !waited {
			waited = true
			db.metrics.commit.syncWaits.Add(1)
		}
		p.syncCond.Wait()
	}
	p.syncing = true
	p.mu.Unlock()
	if hooks.beforeSync != nil {
		hooks.beforeSync()
	}
	before := w.log.SyncedOffset()
	start := time.Now()
	err := w.log.SyncWritten()
	took := time.Since(start)
	db.metrics.commit.syncNanos.Add(int64(took))
	if err != nil {
		// Never retry a failed fsync: the WAL's state is unknown.
		db.setBackgroundError(fmt.Errorf("WAL %s sync: %w", base.FileName(base.FileTypeLog, db.logNumOf(w)), err))
	} else if w.log.SyncedOffset() > before {
		db.metrics.walSyncs.Add(1)
	}
	p.mu.Lock()
	p.syncing = false
	if err != nil && p.failed == nil {
		p.failed = err
	}
	if err == nil {
		p.lastSync = took
		p.returning += w.syncWriters()
	}
	p.syncCond.Broadcast()
	p.mu.Unlock()
	return err
}

// hooks, set by tests before any DB opens, run at points of the
// pipeline where a delay widens the window in which an ordering bug would
// show: afterWrite when a group's leader has handed on the write stage,
// beforeSync when it is about to run an fsync, afterApply after each
// batch a group applies.
var hooks struct{ afterWrite, beforeSync, afterApply func() }

// syncWriters counts the writers of w's group that asked for Sync.
func (w *writer) syncWriters() int {
	n := 0
	for _, f := range w.group {
		if f.sync {
			n++
		}
	}
	return n
}

// logNumOf returns the number of the WAL w's group went to.
func (db *DB) logNumOf(w *writer) uint64 { return w.mem.logNum }

// applyGroup waits until every group written before w's is applied, then
// inserts w's batches into the memtable and publishes its last sequence
// number, unless err (or an earlier group's failure) says the group
// failed. It hands the apply stage to the next group and returns the
// group's outcome.
func (db *DB) applyGroup(w *writer, err error) error {
	p := &db.commit
	p.mu.Lock()
	for p.pending[0] != w {
		w.cond.Wait()
	}
	if err == nil {
		err = p.failed
	}
	p.mu.Unlock()
	if err == nil {
		db.insertGroup(w)
	}
	p.mu.Lock()
	if err != nil && p.failed == nil {
		p.failed = err
	}
	p.pending = popFront(p.pending, 1)
	if len(p.pending) > 0 {
		p.pending[0].cond.Signal()
	} else {
		p.idleCond.Broadcast()
	}
	p.mu.Unlock()
	return err
}

// walBytesPerSync is how many unsynced bytes a WAL may hold before a
// NoSync group's leader starts a background fsync of them (RocksDB's and
// Pebble's WAL bytes-per-sync). Rotating a full memtable's WAL syncs it
// (newWALLocked), on the leader, and a 32 MiB WAL of unsynced records
// made that ~25 ms of every rotation in a NoSync fill; synced as it
// grows, the rotation's fsync finds at most this much to write. A
// variable only so that the stress test can make the fsyncs frequent; set
// before any DB opens, as hooks.
var walBytesPerSync int64 = 1 << 20

// maybeSyncWALInBackground starts a background fsync of w when it holds
// walBytesPerSync unsynced bytes and no fsync runs. REQUIRES: the caller
// leads the write stage.
func (db *DB) maybeSyncWALInBackground(w *wal.Writer) {
	if w.Size()-w.SyncedOffset() < walBytesPerSync {
		return
	}
	p := &db.commit
	p.mu.Lock()
	if p.syncing || p.failed != nil {
		p.mu.Unlock()
		return
	}
	p.syncing, p.bgSyncing = true, true
	p.mu.Unlock()
	db.bg.Add(1)
	go db.syncWALInBackground(w)
}

// syncWALInBackground fsyncs every record written to w, as a Sync group's
// leader would (syncGroup), for no group: the WAL cannot be closed or
// replaced meanwhile (drain waits for it). A failure is never retried:
// every later group fails and the DB is read-only.
func (db *DB) syncWALInBackground(w *wal.Writer) {
	defer db.bg.Done()
	p := &db.commit
	err := w.SyncWritten()
	if err != nil {
		db.setBackgroundError(fmt.Errorf("WAL sync: %w", err))
	} else {
		db.metrics.walBackgroundSyncs.Add(1)
	}
	p.mu.Lock()
	p.syncing, p.bgSyncing = false, false
	if err != nil && p.failed == nil {
		p.failed = err
	}
	p.syncCond.Broadcast()
	p.idleCond.Broadcast()
	p.mu.Unlock()
}

// walFlushDelay bounds how long an unsynced write may sit in the WAL
// writer's buffer before it is handed to the OS.
const walFlushDelay = 2 * time.Millisecond

// scheduleWALFlush arms the timer that writes buffered WAL records.
// REQUIRES: leader.
func (db *DB) scheduleWALFlush() {
	if db.walFlushPending.Swap(true) {
		return
	}
	time.AfterFunc(walFlushDelay, db.flushWALBuffer)
}

// flushWALBuffer writes the WAL writer's buffered records, taking the
// commit pipeline so that it runs between commits.
func (db *DB) flushWALBuffer() {
	db.commit.acquireWrite()
	defer db.commit.release()
	db.walFlushPending.Store(false)
	if db.log.w == nil || db.closed.Load() {
		return
	}
	if err := db.log.w.Flush(); err != nil {
		db.setBackgroundError(fmt.Errorf("WAL %s write: %w", base.FileName(base.FileTypeLog, db.log.num), err))
	}
}

// applyToMemtable inserts a committed batch. REQUIRES: the caller leads
// the apply stage.
func (db *DB) applyToMemtable(g *memGroup, b *Batch) {
	seq := b.seq()
	br := newEntryReader(b.data[batchHeaderLen:], b.count)
	for e, ok := br.next(); ok; e, ok = br.next() {
		t := g.tableForWrite(e.cf)
		if e.kind == base.KindMerge && db.collapsed(t, e, seq) {
			seq++
			continue
		}
		if e.kind == base.KindRangeDelete {
			db.metrics.rangeDel.written.Add(1)
		}
		t.Add(seq, e.kind, e.key, e.value)
		seq++
	}
	if br.Err != nil {
		// The batch was built by Batch methods; a decode failure is a bug.
		panic(fmt.Sprintf("sieve: committed batch does not decode: %v", br.Err))
	}
}

// collapsed stores merge entry e as its key's merged value, at seq, when
// the key already stacks its family's cap of operands in t (and the value
// can be computed), and reports whether it did.
func (db *DB) collapsed(t *memtable.MemTable, e batchEntry, seq uint64) bool {
	c := db.mergeCap(e.cf)
	if c <= 0 || !t.HasSuccessiveMerges(e.key, c) {
		return false
	}
	v, ok := db.collapseMerge(e.cf, e.key, e.value, seq)
	if ok {
		t.Add(seq, base.KindSet, e.key, v)
	}
	return ok
}

// mergeCap is family cf's MaxSuccessiveMerges (≤ 0: no cap).
func (db *DB) mergeCap(cf uint32) int {
	if m := db.mergeCaps.Load(); m != nil {
		if c, ok := (*m)[cf]; ok {
			return c
		}
	}
	return db.opts.MaxSuccessiveMerges
}

// setMergeCap records family cf's own cap (0: the DB's). REQUIRES: the
// registry's createMu (writers are serialized).
func (db *DB) setMergeCap(cf uint32, c int) {
	old := db.mergeCaps.Load()
	m := map[uint32]int{}
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	if c == 0 {
		delete(m, cf)
	} else {
		m[cf] = c
	}
	db.mergeCaps.Store(&m)
}

// collapseMerge resolves key's value as of seq-1 with operand on top, so
// that a long operand stack in the memtable is replaced by one value
// (RocksDB's max_successive_merges). ok is false when the value cannot be
// computed (no merger, a merger or read error): the operand is then kept.
// REQUIRES: leader; every entry before seq is applied.
func (db *DB) collapseMerge(cf uint32, key, operand []byte, seq uint64) ([]byte, bool) {
	prev := seq - 1
	st, err := db.lookup(cf, key, prev)
	if err != nil || st.deadline != 0 {
		// A base with a deadline keeps its operands: their merged value
		// would be a SetExpiring, which the memtable's cap does not write.
		return nil, false
	}
	v, err := db.fullMerge(cf, key, st.value, st.found, append(st.operands(1), operand))
	if err != nil {
		return nil, false
	}
	db.metrics.mergesCollapsed.Add(1)
	return v, true
}

// rotateMemLocked makes the mutable group immutable, and starts a new WAL
// and group. REQUIRES: db.mu held, leader.
func (db *DB) rotateMemLocked() error {
	old := db.mu.mem
	if err := db.newWALLocked(0); err != nil {
		db.setBackgroundErrorLocked(err)
		return err
	}
	db.mu.imm = append(db.mu.imm, old)
	db.mu.mem = newMemGroup(db.log.num, db.memFilterBits(), db.cfPrefix)
	db.updateReadStateLocked()
	db.maybeScheduleFlushLocked()
	return nil
}

// newWALLocked closes the current WAL (syncing it, so that later WALs
// never hold writes whose predecessors could be lost) and creates the next one, making
// its directory entry durable: number num, or the next file number when
// num is 0. REQUIRES: db.mu held; leader (or Open). It takes no other DB
// lock (file numbers are atomic), so a rotation under db.mu never waits
// for the manifest writer.
func (db *DB) newWALLocked(num uint64) error {
	if db.log.w != nil {
		old := db.log
		// Released even on error, so that Close does not close it again
		// and report that instead of the cause.
		db.log = walHandle{}
		if err := old.w.Close(); err != nil {
			old.f.Close()
			return fmt.Errorf("WAL %s close: %w", base.FileName(base.FileTypeLog, old.num), err)
		}
		if err := old.f.Close(); err != nil {
			return fmt.Errorf("WAL %s close: %w", base.FileName(base.FileTypeLog, old.num), err)
		}
	}
	if num == 0 {
		num = db.versions.NextFileNum()
	}
	name := base.MakeFilename(db.dirname, base.FileTypeLog, num)
	f, err := db.fs.Create(name)
	if err != nil {
		return err
	}
	w, err := newWALWriter(f, num)
	if err != nil {
		f.Close()
		return err
	}
	if err := db.fs.SyncDir(db.dirname); err != nil {
		w.Close()
		f.Close()
		return err
	}
	db.log = walHandle{num: num, f: f, w: w}
	db.mu.wals = append(db.mu.wals, num)
	return nil
}
