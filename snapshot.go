package sieve

import (
	"sort"
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
