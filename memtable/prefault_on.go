//go:build !sieve_noprefault

package memtable

// prefault: arena chunks and B-tree node slabs are faulted in ahead of
// the writer, on another goroutine (ahead.go). The build tag
// sieve_noprefault turns it off, for the A/B of doc/performance.md's
// ledger (make ab-memtable-prefault).
const prefault = true
