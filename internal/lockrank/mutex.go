package lockrank

import "sync"

// ranked is a lock L with a rank: Lock and Unlock for both Mutex and
// RWMutex.
type ranked[L any, P interface {
	*L
	sync.Locker
}] struct {
	mu   L
	rank Rank
}

// Init sets the lock's rank. REQUIRES: before the first Lock.
func (m *ranked[L, P]) Init(r Rank) { m.rank = r }

// Lock checks the rank order (checking builds), then locks.
func (m *ranked[L, P]) Lock() {
	m.rank.acquire()
	P(&m.mu).Lock()
}

// Unlock unlocks.
func (m *ranked[L, P]) Unlock() {
	P(&m.mu).Unlock()
	m.rank.release()
}

// Mutex is a sync.Mutex with a rank (set once with Init, before use).
type Mutex struct {
	ranked[sync.Mutex, *sync.Mutex]
}

// RWMutex is a sync.RWMutex with a rank; read locks are ranked too.
type RWMutex struct {
	ranked[sync.RWMutex, *sync.RWMutex]
}

// RLock checks the rank order (checking builds), then read-locks.
func (m *RWMutex) RLock() {
	m.rank.acquire()
	m.mu.RLock()
}

// RUnlock read-unlocks.
func (m *RWMutex) RUnlock() {
	m.mu.RUnlock()
	m.rank.release()
}

// acquire records that a lock of rank r is being taken (checking builds,
// ranked locks only).
func (r Rank) acquire() {
	if Enabled && r != unranked {
		Acquire(r)
	}
}

// release records that a lock of rank r was released.
func (r Rank) release() {
	if Enabled && r != unranked {
		Release(r)
	}
}
