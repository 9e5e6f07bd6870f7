package sieve

import (
	"errors"
	"fmt"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/percpu"
	"github.com/sievedb/sieve/internal/rangedel"
	"github.com/sievedb/sieve/memtable"
	"github.com/sievedb/sieve/sstable"
)

// getState accumulates what a point lookup has found so far, walking from
// the newest data to the oldest.
type getState struct {
	key []byte
	// hash is filter.HashKey(key) (= memtable.KeyHash), computed once for
	// every memtable and table filter the lookup probes.
	hash uint64
	// p is the lookup's stripe (percpu.Index): the read counters and the
	// table references it takes are on its processor's lines.
	p int
	// The merge operands found so far, newest first, copied back to back
	// into opBuf (operand i ends at opEnds[i]): a merger may return one
	// of them, and what Get returns is the caller's to change, so none
	// may alias a memtable or a block. One buffer, not one allocation per
	// operand.
	opBuf  []byte
	opEnds []int
	value  []byte // the base value, copied (valid when found)
	// deadline is the base value's (a SetExpiring's; 0: none), judged
	// by resolve
	deadline int64
	found    bool // a Set was reached
	done     bool // a Set or Delete was reached: stop searching
	// seen is set by visit when any entry for the key was visited; the
	// table path uses it to tell filter false positives.
	seen bool
	// lazy is set while the lookup runs on a read state it holds no
	// reference on (Get's optimistic pass, getCF): the first table whose
	// blocks it must read pins lazy first (pinLazy), or fails the pass
	// with errReadStateRetired. pinned is the state pinLazy pinned, for
	// the caller to release.
	lazy, pinned *readState
	// tomb is the newest sequence number (at most the read's) of a range
	// tombstone covering key in the sources searched so far: entries
	// below it are deleted. Sources are searched newest first and a
	// tombstone is newer than every entry of a key it covers in an older
	// source, so once a source has one, the search ends after it.
	tomb uint64
}

// coverBy notes the range tombstones l of the source about to be
// searched (nil: none).
func (st *getState) coverBy(l *rangedel.List, seq uint64) {
	if l != nil {
		st.tomb = max(st.tomb, l.MaxCovering(st.key, seq))
	}
}

// coverByMem notes the range tombstones of memtable t.
func (st *getState) coverByMem(t *memtable.MemTable, seq uint64) {
	st.tomb = max(st.tomb, t.MaxCovering(st.key, seq))
}

// endSource ends the search after a source that had a range tombstone
// covering the key: what older sources hold is deleted.
func (st *getState) endSource() {
	if st.tomb > 0 {
		st.done = true
	}
}

func (st *getState) visit(k base.InternalKey, v []byte) bool {
	st.seen = true
	if k.SeqNum() < st.tomb {
		// Deleted by a range tombstone: like a Delete.
		st.done = true
		return false
	}
	switch k.Kind() {
	case base.KindSet:
		st.value = append([]byte{}, v...)
		st.found, st.done = true, true
		return false
	case base.KindSetExpiring:
		d, val, ok := base.SplitExpiring(v)
		if !ok {
			// A short value is corrupt: read it as absent rather than
			// guess (a table's checksums passed, so this is a bug).
			st.done = true
			return false
		}
		st.value, st.deadline = append([]byte{}, val...), d
		st.found, st.done = true, true
		return false
	case base.KindDelete:
		st.done = true
		return false
	case base.KindMerge:
		st.opBuf = append(st.opBuf, v...)
		st.opEnds = append(st.opEnds, len(st.opBuf))
		return true
	}
	return false
}

// Get returns a copy of the value of key, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	return db.getCF(0, key, nil)
}

// getCF reads key in column family cf as of snapshot seq (nil = latest).
func (db *DB) getCF(cf uint32, key []byte, snapSeq *uint64) (v []byte, err error) {
	return db.getCFExpiry(cf, key, snapSeq, nil)
}

// getCFExpiry is getCF that also stores the value's deadline (0: none)
// in *dl when dl is not nil.
func (db *DB) getCFExpiry(cf uint32, key []byte, snapSeq *uint64, dl *int64) (v []byte, err error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("sieve: get: internal error: %v", r)
		}
		if err != nil && db.closed.Load() && !errors.Is(err, ErrNotFound) {
			// A read racing Close finds tables closed under it.
			v, err = nil, ErrClosed
		}
	}()
	p := percpu.Index()
	// The optimistic pass: no reference on the read state until a table's
	// blocks must be read. A Get that the memtables answer, or that every
	// table's resident filter rules out (an absent key), reads only
	// garbage-collected memory that nothing frees or reuses while it is
	// reachable (memtables, the version's metadata, resident filters and
	// range tombstones), so it needs none: the reference's two atomic
	// adds on the read state were a sixth of an absent-key Get. The
	// sequence number is loaded after the state, as readSeq requires.
	rs := db.rs.Load()
	if rs == nil {
		return nil, ErrClosed
	}
	st := getState{key: key, hash: memtable.KeyHash(key), p: p, lazy: rs}
	defer st.unpin()
	err = db.lookupInto(&st, rs, cf, db.readSeq(snapSeq))
	if err == errReadStateRetired {
		// A newer state replaced rs before a table had to be read: its
		// files may be gone. Start over, pinned from the start. The
		// first pass's filter probes were made and stay counted; the Get
		// itself counts once (getFromVersion counts it in each pass).
		db.metrics.getRestarts.Add(1)
		db.metrics.readStripe(p).gets.Add(-1)
		rs = db.loadReadStateAt(p)
		if rs == nil {
			return nil, ErrClosed
		}
		defer rs.unrefAt(p)
		st, err = db.lookupIn(p, rs, cf, key, db.readSeq(snapSeq))
	}
	if err != nil {
		return nil, err
	}
	v, err = db.resolve(cf, &st)
	if dl != nil {
		*dl = st.deadline
	}
	return v, err
}

// errReadStateRetired fails an optimistic lookup (getState.lazy) that
// must read a table of a read state already retired.
var errReadStateRetired = errors.New("sieve: read state retired")

// pinLazy takes the reference an optimistic lookup defers until it must
// read a table's blocks, reporting false when the state was retired
// meanwhile. A state not yet retired has released nothing: its version,
// and so every table file in it, is still referenced. Pinned, the lookup
// goes on as if it had pinned the state from the start (the memtables and
// filters it read before are the state's own, which pinning does not
// change).
func (st *getState) pinLazy() bool {
	if st.lazy == nil {
		return true
	}
	if !st.lazy.refs.TryAcquire(st.p) {
		return false
	}
	st.pinned, st.lazy = st.lazy, nil
	return true
}

// unpin releases what pinLazy pinned.
func (st *getState) unpin() {
	if st.pinned != nil {
		st.pinned.unrefAt(st.p)
		st.pinned = nil
	}
}

// readSeq is the sequence number a read reads at: its snapshot's, or the
// latest visible one. REQUIRES: the caller loaded its read state first
// (pinned, or for Get's optimistic pass only loaded: a published state
// never changes, and pinning it later adds nothing to it). The order
// matters: a compaction that folds a key's operands into one value keeps
// the newest operand's sequence number and drops the rest (no snapshot
// protects an unregistered read), so a sequence number loaded before the
// state could be older than what the state's tables hold. Loaded after,
// it covers everything in them.
func (db *DB) readSeq(snapSeq *uint64) uint64 {
	if snapSeq != nil {
		return *snapSeq
	}
	return db.visibleSeq.Load()
}

// lookup gathers what the memtables and tables hold for key as of seq,
// from the current read state.
func (db *DB) lookup(cf uint32, key []byte, seq uint64) (getState, error) {
	p := percpu.Index()
	rs := db.loadReadStateAt(p)
	if rs == nil {
		return getState{}, ErrClosed
	}
	defer rs.unrefAt(p)
	return db.lookupIn(p, rs, cf, key, seq)
}

// searchMemtables visits st.key's entries in the memtables of family cf
// in rs, newest first, with their range tombstones, until st is done
// (Get and MultiGet).
func (st *getState) searchMemtables(rs *readState, cf uint32, seq uint64) {
	if t := rs.mem.table(cf); t != nil {
		st.coverByMem(t, seq)
		t.GetHash(st.key, st.hash, seq, st.visit)
		st.endSource()
	}
	for i := len(rs.imm) - 1; i >= 0 && !st.done; i-- {
		if t := rs.imm[i].table(cf); t != nil {
			st.coverByMem(t, seq)
			t.GetHash(st.key, st.hash, seq, st.visit)
			st.endSource()
		}
	}
}

// lookupIn gathers what the memtables and tables of rs hold for key as of
// seq, counting on stripe p.
func (db *DB) lookupIn(p int, rs *readState, cf uint32, key []byte, seq uint64) (getState, error) {
	st := getState{key: key, hash: memtable.KeyHash(key), p: p}
	err := db.lookupInto(&st, rs, cf, seq)
	return st, err
}

// lookupInto is lookupIn filling st, made by the caller (key, hash, p and
// lazy set).
func (db *DB) lookupInto(st *getState, rs *readState, cf uint32, seq uint64) error {
	st.searchMemtables(rs, cf, seq)
	if !st.done {
		return db.getFromVersion(rs.version, cf, st.key, seq, st)
	}
	return nil
}

// operands returns the merge operands found, oldest first (the order
// FullMerge takes), with room for extra more. Each is capped at its own
// length, so a merger appending to one cannot overwrite the next.
func (st *getState) operands(extra int) [][]byte {
	n := len(st.opEnds)
	ops := make([][]byte, n, n+extra)
	start := 0
	for i, end := range st.opEnds {
		ops[n-1-i] = st.opBuf[start:end:end]
		start = end
	}
	return ops
}

// resolve turns what a lookup found into the answer.
func (db *DB) resolve(cf uint32, st *getState) ([]byte, error) {
	if st.deadline != 0 && db.expired(st.deadline) {
		// Expired: the base reads as a Delete.
		st.found, st.value, st.deadline = false, nil, 0
	}
	if len(st.opEnds) == 0 {
		if st.found {
			return st.value, nil
		}
		return nil, ErrNotFound
	}
	return db.fullMerge(cf, st.key, st.value, st.found, st.operands(0))
}

// getFromVersion searches the tables: L0 newest first, then the one table
// per deeper level whose range covers key.
func (db *DB) getFromVersion(v *manifest.Version, cf uint32, key []byte, seq uint64, st *getState) error {
	lv := v.Levels(cf)
	if lv == nil {
		return nil
	}
	rc := db.metrics.readStripe(st.p)
	rc.gets.Add(1)
	pinBelow := db.pinBelow(lv)
	if len(lv[0]) > 0 {
		if err := db.getFromL0(rc, lv, pinBelow, key, seq, st); err != nil || st.done {
			return err
		}
	}
	ls, kw := v.LevelSearch(cf), manifest.MakeKeyWords(key)
	for level := 1; level < manifest.NumLevels; level++ {
		files := lv[level]
		if len(files) == 0 {
			continue
		}
		i := ls.Find(level, files, key, kw)
		if i < 0 || files[i].SmallestSeq > seq {
			continue
		}
		if err := db.getFromTable(rc, files[i], level, pinBelow, key, seq, st); err != nil || st.done {
			return err
		}
	}
	return nil
}

// getFromL0 searches the L0 tables holding key, newest first. The first
// one that did not answer is charged (chargeGetSeek) when the Get goes on
// to another table: a later L0 table here, or the levels below (which
// chargeGetSeek checks hold a table).
func (db *DB) getFromL0(rc *readCounters, lv *manifest.Levels, pinBelow int, key []byte, seq uint64, st *getState) error {
	var passed *manifest.FileMetadata
	charged := false
	for _, f := range lv[0] {
		if !f.Overlaps(key, key) || f.SmallestSeq > seq {
			continue
		}
		if passed != nil && !charged {
			db.chargeGetSeek(passed, nil)
			charged = true
		}
		if err := db.getFromTable(rc, f, 0, pinBelow, key, seq, st); err != nil || st.done {
			return err
		}
		if passed == nil {
			passed = f
		}
	}
	if passed != nil && !charged {
		db.chargeGetSeek(passed, lv)
	}
	return nil
}

// pinBelow returns the level above which tables' index and filter blocks
// are pinned (Options.PinL0FilterAndIndexBlocks): the deepest non-empty
// level, at least 1 (L0 is always pinned); 0 when nothing is pinned.
func (db *DB) pinBelow(lv *manifest.Levels) int {
	if !db.pinning {
		return 0
	}
	bottom := manifest.NumLevels - 1
	for bottom > 1 && lv.NumFiles(bottom) == 0 {
		bottom--
	}
	return bottom
}

// getFromTable probes the filter of one table of level and, if it may hold
// key, its data blocks. A table of a level below pinBelow gets its index
// and filter pinned first.
//
// One deferred call (the table's release, which must run even when a
// panic is recovered by getCF) and two returns keep the defer open-coded:
// with searchTable's returns in this function, the three defers it had
// went through the runtime's defer chain on every probe.
func (db *DB) getFromTable(rc *readCounters, f *manifest.FileMetadata, level, pinBelow int, key []byte, seq uint64, st *getState) error {
	if db.filterRulesOut(rc, f, level, key, seq, st) {
		return nil
	}
	if !st.pinLazy() {
		return errReadStateRetired
	}
	e, err := db.tables.getAt(st.p, f)
	if err != nil {
		return err
	}
	defer db.tables.releaseAt(st.p, e)
	rc.tablesProbed.Add(1)
	var rstats sstable.ReadStats
	err = db.searchTable(rc, e.r, f, level, pinBelow, key, seq, st, &rstats)
	st.endSource()
	rc.addReadStats(&rstats)
	return err
}

// filterRulesOut answers a probe of table f, open in the table cache with
// a resident filter, that the filter rules out, without taking a reference
// on the table (a compare-and-swap and a decrement, each a full memory
// barrier, on a line every Get of the table shares): most probes of a
// deep level are such misses, and sstable.Reader.ExcludesResident reads
// nothing a close frees. The table's range tombstones still count. It
// reports false, having done nothing, when the table is not published
// open, has no resident filter, or the filter may hold key.
func (db *DB) filterRulesOut(rc *readCounters, f *manifest.FileMetadata, level int, key []byte, seq uint64, st *getState) bool {
	e, _ := f.TableCache.Load().(*tableEntry)
	if e == nil || !e.r.ExcludesResident(key, st.hash) {
		return false
	}
	e.markUsed()
	rc.tablesProbed.Add(1)
	rc.level[level].negatives.Add(1)
	st.coverBy(e.r.RangeDels(), seq)
	st.endSource()
	return true
}

// searchTable is getFromTable's work on the open table r. The filter's
// outcomes are counted per level (negatives, false and true positives;
// their sum is the checks, Metrics derives it), so a negative probe, the
// common case, adds to one counter besides the table's.
func (db *DB) searchTable(rc *readCounters, r *sstable.Reader, f *manifest.FileMetadata, level, pinBelow int, key []byte, seq uint64, st *getState, rstats *sstable.ReadStats) error {
	st.coverBy(r.RangeDels(), seq)
	if level < pinBelow && !r.PinTried() {
		if err := r.Pin(); err != nil {
			return err
		}
	}
	hasFilter := r.FilterState() == sstable.FilterLoaded
	lm := &rc.level[level]
	if hasFilter {
		may, err := r.ProbeFilter(key, st.hash, rstats)
		if err != nil {
			return err
		}
		if !may {
			lm.negatives.Add(1)
			return nil
		}
	}
	st.seen = false
	if err := r.Get(key, seq, rstats, st.visit); err != nil {
		return err
	}
	if hasFilter {
		if st.seen {
			lm.truePositives.Add(1)
		} else {
			lm.falsePositives.Add(1)
		}
	}
	return nil
}
