package sieve

import (
	"sort"
	"sync/atomic"
)

// snapshotList is the sorted multiset of open snapshots' sequence numbers.
// REQUIRES: db.mu held for every method.
type snapshotList struct {
	seqs []uint64
}

func (l *snapshotList) add(seq uint64) {
	i := sort.Search(len(l.seqs), func(i int) bool { return l.seqs[i] > seq })
	l.seqs = append(l.seqs, 0)
	copy(l.seqs[i+1:], l.seqs[i:])
	l.seqs[i] = seq
}

func (l *snapshotList) remove(seq uint64) {
	i := sort.Search(len(l.seqs), func(i int) bool { return l.seqs[i] >= seq })
	if i < len(l.seqs) && l.seqs[i] == seq {
		l.seqs = append(l.seqs[:i], l.seqs[i+1:]...)
	}
}

// all returns a copy of the open snapshots' sequence numbers, ascending.
func (l *snapshotList) all() []uint64 { return append([]uint64(nil), l.seqs...) }

// Snapshot is a consistent, read-only view of the database as of the
// moment it was created. Reads through it see neither later writes nor
// later deletions; compaction keeps the versions it needs. Close it when
// done: an open snapshot holds back garbage collection.
//
// A Snapshot is safe for concurrent use.
type Snapshot struct {
	db     *DB
	seq    uint64
	closed atomic.Bool
}

// NewSnapshot returns a snapshot of the current state.
func (db *DB) NewSnapshot() *Snapshot {
	db.mu.Lock()
	for db.compact.ingesting {
		db.mu.cond.Wait() // an Ingest installs its tables (ingest_copy.go)
	}
	s := &Snapshot{db: db, seq: db.visibleSeq.Load()}
	db.mu.snapshots.add(s.seq)
	db.mu.Unlock()
	return s
}

// Get returns a copy of key's value as of the snapshot, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.db.getCF(0, key, &s.seq)
}

// NewIter returns an iterator over the snapshot's view.
func (s *Snapshot) NewIter(o *IterOptions) *Iterator {
	if s.closed.Load() {
		return &Iterator{err: ErrClosed, iter: emptyIter{}}
	}
	return s.db.newIter(0, o, &s.seq)
}

// Close releases the snapshot. A second Close is harmless.
func (s *Snapshot) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.db.mu.Lock()
	s.db.mu.snapshots.remove(s.seq)
	s.db.mu.Unlock()
	return nil
}
