package sieve

// compactState is guarded by db.mu.
type compactState struct {
	running int
}

// maybeScheduleCompactionLocked starts background compactions when a level
// needs one. REQUIRES: db.mu held.
func (db *DB) maybeScheduleCompactionLocked() {}

// maybeStallForL0Locked blocks the commit leader while L0 holds
// L0StopWritesTrigger tables or more. REQUIRES: db.mu held.
func (db *DB) maybeStallForL0Locked() error { return nil }
