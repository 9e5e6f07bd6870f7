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
	if Enabled && m.rank != unranked {
		Acquire(m.rank)
	}
	m.mu.Lock()
}

// Unlock unlocks.
func (m *Mutex) Unlock() {
	m.mu.Unlock()
	if Enabled && m.rank != unranked {
		Release(m.rank)
	}
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
	if Enabled && m.rank != unranked {
		Acquire(m.rank)
	}
	m.mu.Lock()
}

// Unlock unlocks.
func (m *RWMutex) Unlock() {
	m.mu.Unlock()
	if Enabled && m.rank != unranked {
		Release(m.rank)
	}
}

// RLock checks the rank order (checking builds), then read-locks.
func (m *RWMutex) RLock() {
	if Enabled && m.rank != unranked {
		Acquire(m.rank)
	}
	m.mu.RLock()
}

// RUnlock read-unlocks.
func (m *RWMutex) RUnlock() {
	m.mu.RUnlock()
	if Enabled && m.rank != unranked {
		Release(m.rank)
	}
}
