package sieve

// An iterator pins the read state it was built on: its memtables and the
// tables of its version are not freed or deleted while it is open. A
// long-lived iterator that is reused for seek after seek (a server's
// cursor, a benchmark's reader) would otherwise go on reading the LSM as
// it was when the iterator was made, L0 tables a compaction has long
// since merged included, and would keep those obsolete files on disk.
//
// So an absolute positioning call (First, Last, SeekGE, SeekLT,
// SeekPrefixGE) first moves the iterator onto the current read state when
// that has changed and nothing has been written since the iterator's view:
// the database's visible sequence number is still the iterator's, and no
// edit that adds data without a sequence number (a copy-path Ingest, keys
// at sequence number 0) was installed since (readState.gen). Then
// the current state read at the iterator's sequence number is exactly the
// view the iterator had: a flush or compaction never changes what a read
// at the latest sequence number sees, and newer writes, the only thing
// that could differ, do not exist. (RocksDB's
// ReadOptions.auto_refresh_iterator_with_snapshot does the same for
// iterators on a snapshot, protected there by the snapshot.) The
// refreshed stack is built exactly as NewIter builds it, so a refresh is
// a Close and a NewIter at the same sequence number, keeping the
// iterator's buffers.
//
// Relative moves (Next, Prev) never refresh: they continue from the
// current position in the current stack.

// maybeRefresh moves it onto the database's current read state if that
// gives the same view (see above). Called by the absolute positioning
// methods after leavePrefix, before they move.
func (it *Iterator) maybeRefresh() {
	db := it.db
	if it.rs == nil || it.alloc == nil || db == nil {
		return
	}
	if cur := db.rs.Load(); cur == it.rs || cur == nil || cur.gen != it.rs.gen || db.visibleSeq.Load() != it.seq {
		return
	}
	seq := it.seq
	n := db.newIter(it.cf, &IterOptions{LowerBound: it.lower, UpperBound: it.upper}, &seq)
	if n.err != nil || n.rs == nil || n.rs.gen != it.rs.gen || !sameFamilies(it, n) || db.visibleSeq.Load() != seq {
		// Closing, the family was dropped since, or a write became
		// visible while n was built (the state n loaded may then have
		// been compacted with that write's shadow): keep the pinned view.
		n.Close()
		return
	}
	// Swap the stacks: it continues on n's, and n carries the old one to
	// Close, which closes its iterators, unpins its read state and returns
	// its allocation (with n's unused buffers) to the pool.
	it.iter, n.iter = n.iter, it.iter
	it.rs, n.rs = n.rs, it.rs
	it.release, n.release = n.release, it.release
	it.alloc, n.alloc = n.alloc, it.alloc
	n.key, n.value, n.valueBuf = nil, nil, nil // it keeps its buffers; none are shared
	it.valid = false
	db.metrics.iterRefreshes.Add(1)
	if err := n.Close(); err != nil && it.err == nil {
		it.err = err
	}
}

// sameFamilies reports whether the refreshed read state still holds the
// iterator's column family (a dropped family's data is gone from it, and
// the iterator must go on reading what it pinned).
func sameFamilies(old, n *Iterator) bool {
	_, had := old.rs.version.CFs[old.cf]
	_, has := n.rs.version.CFs[n.cf]
	return had == has && !n.db.cfs.wasDropped(n.cf)
}
