package sieve

import "time"

// Write stalls: the commit leader, before it writes a group, makes room
// for it (makeRoomForWrite), which may rotate the memtable, wait while too
// many full memtables wait for a flush, or slow down and then stop writes
// while L0 holds too many tables.

// makeRoomForWrite rotates the memtable group when the mutable one is full,
// stalling while too many full groups wait for a flush, and waiting for
// the groups in flight to be applied before it rotates. REQUIRES: the
// caller leads the write stage.
func (db *DB) makeRoomForWrite(incoming int) error {
	if db.roomWithoutLock(incoming) {
		return nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.closed.Load() {
			return ErrClosed
		}
		mem := db.mu.mem
		if mem.size()+int64(incoming) <= db.opts.MemTableSize || mem.empty() {
			return db.maybeStallForL0Locked()
		}
		if len(db.mu.imm) >= db.opts.MaxImmutableMemTables && db.canFlush() {
			db.stallWaitLocked("memtables")
			continue
		}
		if !db.commit.idle() {
			// Groups in flight still go to this memtable and WAL:
			// let them land (they take db.mu on failure) first.
			db.mu.Unlock()
			db.commit.drain()
			db.mu.Lock()
			continue
		}
		return db.rotateMemLocked()
	}
}

// roomWithoutLock reports whether the group fits the mutable memtable and
// no stall, slowdown or background error applies: the common case, decided
// without db.mu (a flush deleting files or installing a version holds it
// for milliseconds). Only the commit leader replaces db.mu.mem
// (rotateMemLocked; leadership passes under commit.mu, which orders it),
// so the leader may read it unlocked; the memtable's size is atomic.
// REQUIRES: the caller leads the write stage.
func (db *DB) roomWithoutLock(incoming int) bool {
	if db.failedBG.Load() || db.closed.Load() || db.maxL0Files() >= db.opts.L0SlowdownWritesTrigger {
		return false
	}
	mem := db.mu.mem
	return mem.size()+int64(incoming) <= db.opts.MemTableSize
}

// maybeStallForL0Locked blocks the commit leader while L0 holds
// L0StopWritesTrigger tables or more, and slows writes down (1 ms each)
// from L0SlowdownWritesTrigger on. REQUIRES: db.mu held.
func (db *DB) maybeStallForL0Locked() error {
	slowed := false
	for {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.closed.Load() {
			return ErrClosed
		}
		n := db.maxL0Files()
		if n >= db.opts.L0StopWritesTrigger {
			db.maybeScheduleCompactionLocked()
			if db.compact.running == 0 {
				// Nothing can reduce L0 (e.g. a family without its
				// merger): do not deadlock the writer.
				return nil
			}
			db.stallWaitLocked("L0 tables")
			continue
		}
		if !slowed && n >= db.opts.L0SlowdownWritesTrigger {
			slowed = true
			db.metrics.slowdowns.Add(1)
			db.mu.Unlock()
			time.Sleep(time.Millisecond)
			db.mu.Lock()
			continue
		}
		return nil
	}
}

// maxL0Files is the largest L0 table count over column families.
func (db *DB) maxL0Files() int { return int(db.maxL0.Load()) }

// stallWaitLocked blocks the commit leader until a flush or compaction
// signals, counting the stall. REQUIRES: db.mu held.
func (db *DB) stallWaitLocked(reason string) {
	start := time.Now()
	db.metrics.stalls.Add(1)
	db.opts.Logger.Warn("write stall", "reason", reason)
	db.maybeScheduleFlushLocked()
	db.mu.cond.Wait()
	db.metrics.stallNanos.Add(int64(time.Since(start)))
}
