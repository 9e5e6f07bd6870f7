package lockrank

import "sync"

// Mutex is a sync.Mutex with a rank (set once with Init, before use).
type Mutex struct {
	mu   sync.Mutex
	rank Rank
}

// Init sets the mutex's rank. REQUIRES: before the first Lock.
func (m *Mutex) Init(r Rank) { m.rank = r }

// Lock checks the rank order (checking builds), then locks.
func (m *Mutex) Lock() {
	m.rank.acquire()
	m.mu.Lock()
}

// Unlock unlocks.
func (m *Mutex) Unlock() {
	m.mu.Unlock()
	m.rank.release()
}

// RWMutex is a sync.RWMutex with a rank; read locks are ranked too.
type RWMutex struct {
	mu   sync.RWMutex
	rank Rank
}

// Init sets the mutex's rank. REQUIRES: before the first lock.
func (m *RWMutex) Init(r Rank) { m.rank = r }

// Lock checks the rank order (checking builds), then locks.
func (m *RWMutex) Lock() {
	m.rank.acquire()
	m.mu.Lock()
}

// Unlock unlocks.
func (m *RWMutex) Unlock() {
	m.mu.Unlock()
	m.rank.release()
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
