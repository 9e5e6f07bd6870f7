package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/percpu"
	"github.com/sievedb/sieve/memtable"
	"github.com/sievedb/sieve/sstable"
)

// MultiGet looks up many keys at once in the default column family. For
// each keys[i] it returns what Get would: a copy of the value in vals[i]
// (the caller's to keep and change) with errs[i] nil, or errs[i] ErrNotFound
// or another error. All keys are read in one consistent view: one read
// state and one sequence number, as if by one snapshot. Internally the keys
// are sorted, so each table's filter is probed once for all the keys that
// fall in its range and each data block is fetched once for the keys it
// holds. Duplicate keys are allowed; empty input returns empty slices.
func (db *DB) MultiGet(keys [][]byte) ([][]byte, []error) {
	return db.multiGetCF(0, keys, nil)
}

// MultiGet is DB.MultiGet in the column family.
func (cf *ColumnFamily) MultiGet(keys [][]byte) ([][]byte, []error) {
	if err := cf.checkLive(); err != nil {
		return failAll(len(keys), err)
	}
	return cf.db.multiGetCF(cf.id, keys, nil)
}

// MultiGet is DB.MultiGet as of the snapshot.
func (s *Snapshot) MultiGet(keys [][]byte) ([][]byte, []error) {
	if s.closed.Load() {
		return failAll(len(keys), ErrClosed)
	}
	return s.db.multiGetCF(0, keys, &s.seq)
}

// MultiGetCF is MultiGet in column family cf as of the snapshot.
func (s *Snapshot) MultiGetCF(cf *ColumnFamily, keys [][]byte) ([][]byte, []error) {
	if s.closed.Load() {
		return failAll(len(keys), ErrClosed)
	}
	if err := cf.checkLive(); err != nil {
		return failAll(len(keys), err)
	}
	return s.db.multiGetCF(cf.id, keys, &s.seq)
}

func failAll(n int, err error) ([][]byte, []error) {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return make([][]byte, n), errs
}

// multiGet is the state of one MultiGet: the distinct keys in order, what
// each lookup found, and scratch space reused from table to table.
type multiGet struct {
	states []getState // one per distinct key, ascending
	errs   []error    // per distinct key: a lookup error (the key is done)
	// slot[i] is the distinct key of the caller's keys[i].
	slot []int
	// Scratch for one table: candidate keys, their hashes, filter answers
	// and read errors.
	keys   [][]byte
	hashes []uint64
	may    []bool
	rerrs  []error
	kept   []int
	rstats sstable.ReadStats
}

func newMultiGet(keys [][]byte) *multiGet {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	mg := &multiGet{slot: make([]int, len(keys)), states: make([]getState, 0, len(keys))}
	for n, i := range order {
		if n == 0 || !bytes.Equal(keys[i], keys[order[n-1]]) {
			mg.states = append(mg.states, getState{key: keys[i], hash: memtable.KeyHash(keys[i])})
		}
		mg.slot[i] = len(mg.states) - 1
	}
	mg.errs = make([]error, len(mg.states))
	return mg
}

// pending returns the distinct keys still to be searched, ascending.
func (mg *multiGet) pending(dst []int) []int {
	dst = dst[:0]
	for u := range mg.states {
		if mg.isPending(u) {
			dst = append(dst, u)
		}
	}
	return dst
}

// isPending reports whether key u is still to be searched.
func (mg *multiGet) isPending(u int) bool { return !mg.states[u].done && mg.errs[u] == nil }

func (mg *multiGet) key(u int) []byte { return mg.states[u].key }

// multiGetCF is MultiGet in column family cf as of snapshot seq (nil =
// latest).
func (db *DB) multiGetCF(cf uint32, keys [][]byte, snapSeq *uint64) (vals [][]byte, errs []error) {
	if err := db.checkOpen(); err != nil {
		return failAll(len(keys), err)
	}
	if len(keys) == 0 {
		return [][]byte{}, []error{}
	}
	defer func() {
		if r := recover(); r != nil {
			vals, errs = failAll(len(keys), fmt.Errorf("sieve: multiget: internal error: %v", r))
		}
		for i, err := range errs {
			if err != nil && !errors.Is(err, ErrNotFound) && db.closed.Load() {
				vals[i], errs[i] = nil, ErrClosed // tables closed under a read racing Close
			}
		}
	}()
	rs := db.loadReadState()
	if rs == nil {
		return failAll(len(keys), ErrClosed)
	}
	defer rs.unref()
	db.metrics.multiGets.Add(1)
	db.metrics.multiGetKeys.Add(int64(len(keys)))
	seq := db.readSeq(snapSeq)
	mg := newMultiGet(keys)
	db.multiLookupIn(rs, cf, seq, mg)
	return db.multiResolve(cf, mg)
}

// multiResolve turns what the lookups found into the answers, in the
// caller's order. A repeated key gets its own copy of the value.
func (db *DB) multiResolve(cf uint32, mg *multiGet) ([][]byte, []error) {
	for u := range mg.states {
		st := &mg.states[u]
		if mg.errs[u] == nil {
			st.value, mg.errs[u] = db.resolve(cf, st)
		}
		st.seen = false // from here on: the value was handed out
	}
	vals, errs := make([][]byte, len(mg.slot)), make([]error, len(mg.slot))
	for i, u := range mg.slot {
		st := &mg.states[u]
		vals[i], errs[i] = st.value, mg.errs[u]
		if st.seen && vals[i] != nil {
			vals[i] = slices.Clone(vals[i])
		}
		st.seen = true
	}
	return vals, errs
}

// multiLookupIn is lookupIn for every key of mg: the memtables newest
// first, then the tables.
func (db *DB) multiLookupIn(rs *readState, cf uint32, seq uint64, mg *multiGet) {
	for u := range mg.states {
		mg.states[u].searchMemtables(rs, cf, seq)
	}
	lv := rs.version.Levels(cf)
	if lv == nil {
		return
	}
	// One stripe for the batch: the calling processor's.
	rc := db.metrics.readStripe(percpu.Index())
	pinBelow := db.pinBelow(lv)
	var pend []int
	// first is the first L0 table consulted and owed the number of its
	// keys it left pending: each charges it once another table is
	// consulted, as a Get does (chargeGetSeek).
	var first *manifest.FileMetadata
	owed := 0
	for _, f := range lv[0] {
		if pend = mg.pending(pend); len(pend) == 0 {
			return
		}
		if f.SmallestSeq > seq {
			continue
		}
		lo, hi := keysWithin(mg, pend, f)
		if lo == hi {
			continue
		}
		if owed > 0 {
			db.chargeGetSeeks(first, owed)
			owed = 0
		}
		db.multiGetFromTable(rc, f, 0, pinBelow, seq, mg, pend[lo:hi])
		if first == nil {
			first = f
			for _, u := range pend[lo:hi] {
				if mg.isPending(u) {
					owed++
				}
			}
		}
	}
	if owed > 0 && tablesBelowL0(lv) {
		db.chargeGetSeeks(first, owed)
	}
	for level := 1; level < manifest.NumLevels; level++ {
		if pend = mg.pending(pend); len(pend) == 0 {
			return
		}
		db.multiGetLevel(rc, lv[level], level, pinBelow, seq, mg, pend)
	}
}

// keysWithin returns the run pend[lo:hi] of the pending keys (ascending)
// that lie in f's key range.
func keysWithin(mg *multiGet, pend []int, f *manifest.FileMetadata) (lo, hi int) {
	lo = sort.Search(len(pend), func(i int) bool { return bytes.Compare(mg.key(pend[i]), f.Smallest.UserKey) >= 0 })
	hi = sort.Search(len(pend), func(i int) bool { return bytes.Compare(mg.key(pend[i]), f.Largest.UserKey) > 0 })
	return lo, hi
}

// multiGetLevel searches one sorted level for the pending keys pend
// (ascending): each table gets the run of keys inside its range.
func (db *DB) multiGetLevel(rc *readCounters, files []*manifest.FileMetadata, level, pinBelow int, seq uint64, mg *multiGet, pend []int) {
	k := 0
	for k < len(pend) {
		key := mg.key(pend[k])
		fi := manifest.SearchLargest(files, key)
		if fi == len(files) {
			return
		}
		f := files[fi]
		end := k
		for end < len(pend) && bytes.Compare(mg.key(pend[end]), f.Largest.UserKey) <= 0 {
			end++
		}
		lo := k
		for lo < end && bytes.Compare(mg.key(pend[lo]), f.Smallest.UserKey) < 0 {
			lo++ // in the gap before f
		}
		if lo < end && f.SmallestSeq <= seq {
			db.multiGetFromTable(rc, f, level, pinBelow, seq, mg, pend[lo:end])
		}
		k = end
	}
}

// multiGetFromTable is getFromTable for the candidate keys cands
// (ascending, all within f's range): one filter probe pass, then one
// batched read of the keys the filter lets through.
func (db *DB) multiGetFromTable(rc *readCounters, f *manifest.FileMetadata, level, pinBelow int, seq uint64, mg *multiGet, cands []int) {
	fail := func(err error) {
		for _, u := range cands {
			mg.errs[u] = err
		}
	}
	e, err := db.tables.get(f)
	if err != nil {
		fail(err)
		return
	}
	defer db.tables.release(e)
	r := e.r
	rc.tablesProbed.Add(1)
	// The table's range tombstones cover its candidates whether or not
	// its filter lets them through (as getFromTable).
	for _, u := range cands {
		mg.states[u].coverBy(r.RangeDels(), seq)
	}
	defer func(all []int) {
		for _, u := range all {
			mg.states[u].endSource()
		}
	}(cands)
	if level < pinBelow && !r.PinTried() {
		if err := r.Pin(); err != nil {
			fail(err)
			return
		}
	}
	// The call's counters live in mg (one table at a time), not on a
	// per-table heap allocation.
	rstats := &mg.rstats
	*rstats = sstable.ReadStats{}
	defer rc.addReadStats(rstats)
	hasFilter := r.FilterState() == sstable.FilterLoaded
	lm := &rc.level[level]
	if hasFilter {
		var err error
		if cands, err = mg.probe(r, cands, rstats, lm); err != nil {
			fail(err)
			return
		}
	}
	if len(cands) == 0 {
		return
	}
	mg.keys = mg.keys[:0]
	for _, u := range cands {
		mg.keys = append(mg.keys, mg.key(u))
		mg.states[u].seen = false
	}
	mg.rerrs = slices.Grow(mg.rerrs[:0], len(cands))[:len(cands)]
	r.GetBatch(mg.keys, seq, rstats, mg.rerrs, func(i int, k base.InternalKey, v []byte) bool {
		return mg.states[cands[i]].visit(k, v)
	})
	for i, u := range cands {
		if err := mg.rerrs[i]; err != nil {
			mg.errs[u] = err
		} else if hasFilter && mg.states[u].seen {
			lm.truePositives.Add(1)
		} else if hasFilter {
			lm.falsePositives.Add(1)
		}
	}
}

// probe probes r's filter for the candidates and returns those it lets
// through (in mg.kept, valid until the next probe), counting the negatives
// (the positives are counted once searched: the checks are their sum).
func (mg *multiGet) probe(r *sstable.Reader, cands []int, rstats *sstable.ReadStats, lm *levelFilterCounters) ([]int, error) {
	mg.keys, mg.hashes, mg.may = mg.keys[:0], mg.hashes[:0], mg.may[:0]
	for _, u := range cands {
		mg.keys = append(mg.keys, mg.key(u))
		mg.hashes = append(mg.hashes, mg.states[u].hash)
		mg.may = append(mg.may, false)
	}
	if err := r.ProbeFilterBatch(mg.keys, mg.hashes, mg.may, rstats); err != nil {
		return nil, err
	}
	mg.kept = mg.kept[:0]
	for i, u := range cands {
		if mg.may[i] {
			mg.kept = append(mg.kept, u)
		}
	}
	lm.negatives.Add(int64(len(cands) - len(mg.kept)))
	return mg.kept, nil
}
