package sieve

// NewIter (temporary until the compaction package's merging iterator lands).
func (db *DB) NewIter(o *IterOptions) *Iterator {
	return &Iterator{err: ErrClosed, iter: emptyIter{}}
}

func (db *DB) newIter(cf uint32, o *IterOptions, seq uint64) *Iterator {
	return &Iterator{err: ErrClosed, iter: emptyIter{}}
}
