package sieve

import (
	"fmt"
	"time"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/rangedel"
	"github.com/sievedb/sieve/memtable"
	"github.com/sievedb/sieve/vfs"
	"github.com/sievedb/sieve/wal"
)

func newWALWriter(f vfs.File, num uint64) (*wal.Writer, error) { return wal.NewWriter(f, num) }

// flushState is guarded by db.mu.
type flushState struct {
	running bool
	// removingWALs is set while the flush goroutine removes the WALs a
	// flush made obsolete (without db.mu): Flush waits for it.
	removingWALs bool
}

func (db *DB) canFlush() bool { return !db.opts.ReadOnly }

// maybeScheduleFlushLocked starts the flush goroutine if immutable groups
// are waiting and none runs. REQUIRES: db.mu held.
func (db *DB) maybeScheduleFlushLocked() {
	if db.flush.running || len(db.mu.imm) == 0 || db.mu.bgErr != nil || db.closed.Load() || db.opts.ReadOnly {
		return
	}
	db.flush.running = true
	db.bg.Add(1)
	go db.flushLoop()
}

// flushLoop flushes immutable groups, oldest first, until none is left.
func (db *DB) flushLoop() {
	defer db.bg.Done()
	for {
		db.mu.Lock()
		if len(db.mu.imm) == 0 || db.mu.bgErr != nil || db.closed.Load() {
			db.flush.running = false
			db.mu.cond.Broadcast()
			db.mu.Unlock()
			return
		}
		g := db.mu.imm[0]
		nextLog := db.mu.mem.logNum
		if len(db.mu.imm) > 1 {
			nextLog = db.mu.imm[1].logNum
		}
		db.mu.Unlock()

		if err := db.flushGroup(g, nextLog); err != nil {
			db.mu.Lock()
			db.setBackgroundErrorLocked(fmt.Errorf("flush of WAL %s: %w", base.FileName(base.FileTypeLog, g.logNum), err))
			db.flush.running = false
			db.mu.Unlock()
			return
		}
	}
}

// flushGroup writes one L0 table per column family of g, records them and
// the new WAL horizon in the manifest, and retires g.
func (db *DB) flushGroup(g *memGroup, nextLog uint64) error {
	start := time.Now()
	edit := &manifest.VersionEdit{HasLogNum: true, LogNum: nextLog}
	var maxSeq uint64
	var created []uint64
	var bytes int64
	for _, ct := range g.all() {
		cf, t := ct.cf, ct.t
		if db.cfs.wasDropped(cf) {
			continue // a dropped family's writes go with it
		}
		meta, err := db.flushTable(cf, t)
		if err != nil {
			db.removeFiles(created)
			return err
		}
		created = append(created, meta.FileNum)
		edit.NewFiles = append(edit.NewFiles, manifest.NewFile{CF: cf, Level: 0, Meta: meta})
		maxSeq = max(maxSeq, t.Stats().MaxSeq)
		bytes += int64(meta.Size)
	}
	if len(created) > 0 {
		if err := db.fs.SyncDir(db.dirname); err != nil {
			db.removeFiles(created)
			return err
		}
	}
	if maxSeq > 0 {
		edit.HasLastSeq, edit.LastSeq = true, maxSeq
	}
	// The table is installed and the memtable retired in one step: no
	// read state may hold both (their merge operands would count twice)
	// or neither.
	// The metrics count the flush in the same step, before Flush's waiters
	// wake: a Flush that returned shows in Metrics.
	err := db.logAndApply(edit, func() {
		db.metrics.flushes.Add(1)
		db.metrics.flushBytes.Add(bytes)
		db.metrics.levelBytesIn[0].Add(bytes)
		db.mu.imm = db.mu.imm[1:]
		// Set in the step that retires g: whoever sees g gone also
		// sees that its WAL's removal is pending.
		db.flush.removingWALs = true
		db.mu.cond.Broadcast()
	})
	if err != nil {
		return err
	}
	db.mu.Lock()
	obsolete := db.obsoleteWALsLocked()
	db.mu.Unlock()
	// The removals' directory sync comes before any compaction this
	// flush starts and before Flush returns, so that it never also covers
	// the tables such a compaction creates (the crash tests check each
	// of those syncs on its own).
	db.deleteObsoleteWALs(obsolete)
	db.mu.Lock()
	db.flush.removingWALs = false
	db.mu.cond.Broadcast()
	db.maybeScheduleCompactionLocked()
	db.mu.Unlock()
	db.opts.Logger.Info("flushed", "wal", g.logNum, "tables", len(created), "bytes", bytes, "took", time.Since(start))
	return nil
}

// forwardIter is what writeTable consumes: a forward pass over internal
// keys in order.
type forwardIter interface {
	First() bool
	Next() bool
	Key() base.InternalKey
	Value() []byte
	Close() error
}

// flushTable writes memtable t of column family cf into an L0 table. It
// reads t through the compaction iterator, so that a flush drops what
// compaction would: versions shadowed within a snapshot stripe (also by a
// range tombstone), runs of merge operands folded by PartialMerge, range
// tombstones shadowed by a newer one in their stripe. It never drops
// tombstones (older data may lie below) or full-merges.
func (db *DB) flushTable(cf uint32, t *memtable.MemTable) (*manifest.FileMetadata, error) {
	opts := db.gcOptions(cf)
	opts.RangeDels = t.RangeDels()
	rd := db.outputRangeDels(opts, nil, true)
	return db.writeTable(cf, compaction.NewIter(t.NewIter(nil, nil), opts), rd)
}

// writeTable writes the entries of it and the range tombstones rd (nil:
// none) into a new table of column family cf, syncs and closes it, and
// returns its metadata. The caller syncs the directory before the manifest
// names the table.
func (db *DB) writeTable(cf uint32, it forwardIter, rd *rangedel.List) (*manifest.FileMetadata, error) {
	out := &tableOutput{db: db, cf: cf, rd: rd, flush: true}
	err := out.start()
	for ok := err == nil && it.First(); ok && err == nil; ok = it.Next() {
		err = out.add(it.Key(), it.Value())
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if gc, ok := it.(*compaction.Iter); ok {
		s := gc.Stats()
		db.metrics.rangeDel.keysDropped.Add(s.DroppedByRangeDel)
		db.metrics.expired.Add(s.Expired)
		db.metrics.filtered.Add(s.Filtered)
	}
	if err == nil {
		err = out.finish(true)
	}
	if err != nil {
		out.abandon()
		return nil, err
	}
	return out.metas[0], nil
}

// Flush makes every write acknowledged so far durable in L0 tables and
// waits for it.
func (db *DB) Flush() error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	db.commit.acquire()
	db.mu.Lock()
	var err error
	if db.mu.bgErr != nil {
		err = db.mu.bgErr
	} else if !db.mu.mem.empty() {
		err = db.rotateMemLocked()
	}
	// Wait for every group up to the one just rotated.
	target := db.mu.mem.logNum
	db.mu.Unlock()
	db.commit.release()
	if err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.waitFlushedLocked(target)
}

// waitFlushedLocked waits until every immutable group older than WAL
// target is flushed and the WALs it made obsolete are removed, and returns
// the background error. REQUIRES: db.mu.
func (db *DB) waitFlushedLocked(target uint64) error {
	for (len(db.mu.imm) > 0 && db.mu.imm[0].logNum < target) || db.flush.removingWALs {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.closed.Load() {
			return ErrClosed
		}
		db.maybeScheduleFlushLocked()
		db.mu.cond.Wait()
	}
	return db.mu.bgErr
}
