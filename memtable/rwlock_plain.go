//go:build sieve_plainlock

package memtable

import "sync"

// rwLock is sync.RWMutex: the plain version the ledger's A/B compares the
// spinning lock (rwlock.go) with (go test -tags sieve_plainlock).
type rwLock struct{ sync.RWMutex }
