package sieve

import (
	"fmt"
	"sync"
	"time"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/lockrank"
)

// maxGroupBytes bounds how many bytes of queued batches one leader commits
// in a single WAL record.
const maxGroupBytes = 4 << 20

// commitPipeline serializes writes with group commit (LevelDB's writer
// queue): each writer enqueues itself; the writer at the head of the queue
// becomes the leader, takes every queued batch (up to maxGroupBytes), writes
// them as one WAL record with one fsync if any of them asked for Sync,
// applies them to the memtable, publishes their sequence numbers and wakes
// the followers it committed for.
type commitPipeline struct {
	mu    sync.Mutex
	queue []*writer
	// buf holds the combined record of a multi-batch group.
	buf []byte
}

type writer struct {
	batch *Batch
	sync  bool
	done  bool
	err   error
	cond  sync.Cond
}

var writerPool = sync.Pool{New: func() any { return new(writer) }}

// acquire makes the caller the leader with an empty group, blocking
// writers until release. Used by Close and by operations that must not run
// concurrently with a commit (rotating the WAL from outside the pipeline).
func (p *commitPipeline) acquire() *writer {
	lockrank.Acquire(lockrank.Commit)
	w := writerPool.Get().(*writer)
	*w = writer{}
	w.cond.L = &p.mu
	p.mu.Lock()
	p.queue = append(p.queue, w)
	for p.queue[0] != w {
		w.cond.Wait()
	}
	p.mu.Unlock()
	return w
}

// release ends a leadership taken by acquire.
func (p *commitPipeline) release() {
	p.mu.Lock()
	w := p.queue[0]
	p.queue[0] = nil
	p.queue = p.queue[1:]
	if len(p.queue) > 0 {
		p.queue[0].cond.Signal()
	}
	p.mu.Unlock()
	writerPool.Put(w)
	lockrank.Release(lockrank.Commit)
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
	w := writerPool.Get().(*writer)
	*w = writer{batch: b, sync: sync}
	w.cond.L = &p.mu

	p.mu.Lock()
	p.queue = append(p.queue, w)
	for !w.done && p.queue[0] != w {
		w.cond.Wait()
	}
	if w.done {
		err := w.err
		p.mu.Unlock()
		writerPool.Put(w)
		return err
	}
	// Leader: take a group from the head of the queue.
	group, groupSync, size := 1, w.sync, len(b.data)
	for _, f := range p.queue[1:] {
		// A writer without a batch took the pipeline with acquire: it
		// runs alone, after this group.
		if f.batch == nil || size+len(f.batch.data) > maxGroupBytes {
			break
		}
		size += len(f.batch.data)
		groupSync = groupSync || f.sync
		group++
	}
	writers := p.queue[:group]
	p.mu.Unlock()

	err := db.commitGroup(writers, groupSync, size)

	p.mu.Lock()
	for _, f := range writers[1:] {
		f.err, f.done = err, true
		f.cond.Signal()
	}
	for i := range writers {
		p.queue[i] = nil
	}
	p.queue = p.queue[group:]
	if len(p.queue) > 0 {
		p.queue[0].cond.Signal()
	}
	p.mu.Unlock()
	writerPool.Put(w)
	return err
}

// commitGroup writes, syncs and applies a group. REQUIRES: the caller is
// the leader.
func (db *DB) commitGroup(writers []*writer, sync bool, size int) (err error) {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if err := db.makeRoomForWrite(size); err != nil {
		return err
	}
	seq := db.logSeq + 1
	var count uint64
	for _, w := range writers {
		w.batch.setSeq(seq + count)
		count += uint64(w.batch.count)
	}
	if seq+count-1 > base.SeqNumMax {
		return fmt.Errorf("sieve: sequence numbers exhausted")
	}
	record := writers[0].batch.data
	if len(writers) > 1 {
		buf := db.commit.buf[:0]
		for _, w := range writers {
			buf = append(buf, w.batch.data...)
		}
		db.commit.buf = buf
		record = buf
	}
	var werr error
	if sync {
		_, werr = db.log.w.WriteRecord(record)
	} else {
		// Unsynced groups are buffered and written in 64 KiB pieces (or
		// by the flush timer): a write system call per record would
		// dominate small NoSync writes.
		werr = db.log.w.BufferRecord(record)
		if werr == nil && db.log.w.Buffered() > 0 {
			db.scheduleWALFlush()
		}
	}
	if werr != nil {
		db.setBackgroundError(fmt.Errorf("WAL %s write: %w", base.FileName(base.FileTypeLog, db.log.num), werr))
		return werr
	}
	db.metrics.walBytes.Add(int64(len(record)))
	db.metrics.walRecords.Add(1)
	if sync {
		if err := db.log.w.Sync(); err != nil {
			// Never retry a failed fsync: the WAL's state is unknown.
			db.setBackgroundError(fmt.Errorf("WAL %s sync: %w", base.FileName(base.FileTypeLog, db.log.num), err))
			return err
		}
		db.metrics.walSyncs.Add(1)
	}
	// The group's record is in the WAL; from here on nothing fails.
	mem := db.mu.mem // stable: only the leader rotates it
	for _, w := range writers {
		db.applyToMemtable(mem, w.batch)
	}
	db.logSeq = seq + count - 1
	db.visibleSeq.Store(db.logSeq)
	return nil
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
	db.commit.acquire()
	defer db.commit.release()
	db.walFlushPending.Store(false)
	if db.log.w == nil || db.closed.Load() {
		return
	}
	if err := db.log.w.Flush(); err != nil {
		db.setBackgroundError(fmt.Errorf("WAL %s write: %w", base.FileName(base.FileTypeLog, db.log.num), err))
	}
}

// applyToMemtable inserts a committed batch. REQUIRES: leader.
func (db *DB) applyToMemtable(g *memGroup, b *Batch) {
	seq := b.seq()
	br := newEntryReader(b.data[batchHeaderLen:], b.count)
	for e, ok := br.next(); ok; e, ok = br.next() {
		t := g.tableForWrite(e.cf)
		if e.kind == base.KindMerge && db.opts.MaxSuccessiveMerges > 0 &&
			t.HasSuccessiveMerges(e.key, db.opts.MaxSuccessiveMerges) {
			if v, ok := db.collapseMerge(e.cf, e.key, e.value, seq); ok {
				t.Add(seq, base.KindSet, e.key, v)
				seq++
				continue
			}
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

// collapseMerge resolves key's value as of seq-1 with operand on top, so
// that a long operand stack in the memtable is replaced by one value
// (RocksDB's max_successive_merges). ok is false when the value cannot be
// computed (no merger, a merger or read error): the operand is then kept.
// REQUIRES: leader; every entry before seq is applied.
func (db *DB) collapseMerge(cf uint32, key, operand []byte, seq uint64) ([]byte, bool) {
	prev := seq - 1
	st, err := db.lookup(cf, key, prev)
	if err != nil {
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
