package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/percpu"
	"github.com/sievedb/sieve/memtable"
	"github.com/sievedb/sieve/sstable"
)

// ErrNoPrefix is the error of SeekPrefixGE on a column family without a
// prefix function (Options.Prefix, ColumnFamilyOptions.Prefix).
var ErrNoPrefix = errors.New("sieve: SeekPrefixGE needs a prefix function (Options.Prefix)")

// prefixFunc is a family's prefix function and its name (zero: none).
type prefixFunc struct {
	fn   func([]byte) int
	name string
}

// cut returns key's prefix.
func (p prefixFunc) cut(key []byte) []byte { return key[:sstable.PrefixLen(p.fn, key)] }

func checkPrefixOptions(fn func([]byte) int, name string) error {
	if fn != nil && name == "" {
		return fmt.Errorf("%w: Prefix is set without a PrefixName", ErrInvalidOptions)
	}
	if fn == nil && name != "" {
		return fmt.Errorf("%w: PrefixName %q is set without a Prefix", ErrInvalidOptions, name)
	}
	return nil
}

// prefix is the DB's prefix function (Options.Prefix).
func (db *DB) prefix() prefixFunc { return prefixFunc{db.opts.Prefix, db.opts.PrefixName} }

// cfPrefix returns column family cf's prefix function (zero: none).
func (db *DB) cfPrefix(cf uint32) prefixFunc {
	if db.cfs == nil {
		return prefixFunc{}
	}
	if st := db.cfs.get(cf); st != nil {
		return st.prefix
	}
	return prefixFunc{}
}

func prefixOf(co ColumnFamilyOptions) prefixFunc { return prefixFunc{co.Prefix, co.PrefixName} }

// setPrefixOptions gives a table of column family cf its family's prefix
// function, so that its filter holds the keys' prefixes.
func (db *DB) setPrefixOptions(cf uint32, o *sstable.WriterOptions) {
	if st := db.cfs.get(cf); st != nil && st.prefix.fn != nil {
		o.Prefix, o.PrefixName = st.prefix.fn, st.prefix.name
	}
}

// prefixSuccessor returns the smallest key greater than every key that
// starts with p, appended to dst, or nil when there is none (p empty or
// all 0xff).
func prefixSuccessor(dst, p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			dst = append(dst[:0], p[:i+1]...)
			dst[i]++
			return dst
		}
	}
	return nil
}

// prefixCounters is one stripe of the prefix-seek counters (PrefixMetrics).
type prefixCounters struct {
	seeks, checks, negatives, unfiltered, memSkipped atomic.Int64
	_                                                [24]byte
}

// PrefixMetrics count Iterator.SeekPrefixGE calls and their table-filter
// probes, apart from the point lookups' (Metrics.Filter).
type PrefixMetrics struct {
	// Seeks is the number of SeekPrefixGE calls.
	Seeks int64
	// Checks is the number of tables whose filter was probed for a
	// prefix; Negatives the tables it ruled out (not read).
	Checks, Negatives int64
	// Unfiltered counts tables a prefix seek had to read because their
	// filter holds no prefixes of the family's function (written without
	// one, under another PrefixName, or with no usable filter).
	Unfiltered int64
	// MemtablesSkipped counts memtables whose key filter ruled the prefix
	// out.
	MemtablesSkipped int64
}

func (m *dbMetrics) prefixTotals() PrefixMetrics {
	var out PrefixMetrics
	for i := range m.prefix {
		c := &m.prefix[i]
		out.Seeks += c.seeks.Load()
		out.Checks += c.checks.Load()
		out.Negatives += c.negatives.Load()
		out.Unfiltered += c.unfiltered.Load()
		out.MemtablesSkipped += c.memSkipped.Load()
	}
	return out
}

// String is the prefix-seek line of Metrics.String.
func (p PrefixMetrics) String() string {
	return fmt.Sprintf("prefix seeks: %d, %d prefix filter checks, %d negatives (tables skipped), %d tables without prefix filter, %d memtables skipped",
		p.Seeks, p.Checks, p.Negatives, p.Unfiltered, p.MemtablesSkipped)
}

// prefixSeek is what a prefix seek counts, added to a stripe at its end.
type prefixSeek struct {
	checks, negatives, unfiltered, memSkipped int64
}

// prefixSource builds the iterator stack of one prefix seek: the
// children that may hold keys of one prefix, each bounded by [lo, hi).
type prefixSource struct {
	db     *DB
	pf     prefixFunc
	prefix []byte // the prefix
	hash   uint64 // filter.HashPrefix of the prefix
	lo, hi []byte
	count  prefixSeek
}

// mayHold reports whether table f may hold keys of the prefix: true
// unless its filter, holding prefixes of the family's function, rules
// the prefix out.
//
// A table is ruled out only by its point keys' prefixes: its range
// tombstones, which may hide keys of other tables, are applied to the
// seek from every source (SeekPrefixGE), skipped or not.
func (s *prefixSource) mayHold(f *manifest.FileMetadata) (bool, error) {
	e, err := s.db.tables.get(f)
	if err != nil {
		return false, err
	}
	defer s.db.tables.release(e)
	if !e.r.PrefixUsable(s.pf.name) {
		s.count.unfiltered++
		return true, nil
	}
	s.count.checks++
	may, err := e.r.ProbePrefix(s.prefix, s.hash, nil)
	if err != nil {
		return false, err
	}
	if !may {
		s.count.negatives++
	}
	return may, nil
}

// memMayHold reports whether memtable t (nil: none) may hold keys of the
// prefix: it is not empty and its key filter does not rule the prefix
// out. Entries a reader of the seek may see were counted before it
// pinned its state, so an empty table has none.
func (s *prefixSource) memMayHold(t *memtable.MemTable) bool {
	if t == nil || t.Empty() {
		return false
	}
	if t.MayContainPrefix(s.pf.name, s.hash) {
		return true
	}
	s.count.memSkipped++
	return false
}

// children returns the memtables' and tables' iterators of column family
// cf in rs that may hold keys of the prefix, newest first.
func (s *prefixSource) children(rs *readState, cf uint32) ([]base.InternalIterator, error) {
	var out []base.InternalIterator
	if t := rs.mem.table(cf); s.memMayHold(t) {
		out = append(out, t.NewIter(s.lo, s.hi))
	}
	for i := len(rs.imm) - 1; i >= 0; i-- {
		if t := rs.imm[i].table(cf); s.memMayHold(t) {
			out = append(out, t.NewIter(s.lo, s.hi))
		}
	}
	lv := rs.version.Levels(cf)
	if lv == nil {
		return out, nil
	}
	opts := compaction.IterOptions{LowerBound: s.lo, UpperBound: s.hi}
	open := s.db.tableOpener(s.lo, s.hi)
	for level := 0; level < manifest.NumLevels; level++ {
		files, err := s.levelFiles(lv, level)
		if err != nil {
			closeAll(out)
			return nil, err
		}
		if level == 0 {
			for i := range files {
				out = append(out, compaction.NewLevelIter(opts, files[i:i+1], open))
			}
		} else if len(files) > 0 {
			out = append(out, compaction.NewLevelIter(opts, files, open))
		}
	}
	return out, nil
}

// levelFiles returns the tables of level that overlap [lo, hi) and may
// hold keys of the prefix, in the level's order.
func (s *prefixSource) levelFiles(lv *manifest.Levels, level int) ([]*manifest.FileMetadata, error) {
	var out []*manifest.FileMetadata
	for _, f := range lv[level] {
		if bytes.Compare(f.Largest.UserKey, s.lo) < 0 {
			continue
		}
		if s.hi != nil && bytes.Compare(f.Smallest.UserKey, s.hi) >= 0 {
			if level > 0 {
				break // sorted: every later table is beyond hi too
			}
			continue
		}
		may, err := s.mayHold(f)
		if err != nil {
			return nil, err
		}
		if may {
			out = append(out, f)
		}
	}
	return out, nil
}

func closeAll(its []base.InternalIterator) {
	for _, it := range its {
		it.Close()
	}
}

// prefixState is an Iterator's state while it is positioned by
// SeekPrefixGE: the iterator's own stack and bounds, set aside, and the
// buffers of the prefix's bounds.
type prefixState struct {
	active       bool
	full         base.InternalIterator
	lower, upper []byte
	lo, hi       []byte
}

// SeekPrefixGE moves to the first key >= key that has key's prefix
// (Options.Prefix). It reads only the memtables and tables whose filters
// may hold the prefix (memtables' key filters hold prefixes too): one
// whose filter rules the prefix out is not read (Metrics.PrefixSeeks
// counts the probes and what they skipped). Until the next First, Last, SeekGE or SeekLT the
// iterator is confined to the prefix (and its bounds): Next becomes
// invalid after the prefix's last key, and Prev walks back within the
// prefix, becoming invalid before its first key (not only before key).
//
// The column family must have a prefix function; without one
// SeekPrefixGE fails with ErrNoPrefix, which stays the iterator's Error.
func (it *Iterator) SeekPrefixGE(key []byte) bool {
	if !it.usable() {
		return false
	}
	key = it.ownSeekKey(key)
	it.leavePrefix()
	it.maybeRefresh()
	st := it.db.cfs.get(it.cf)
	if st == nil || st.prefix.fn == nil {
		return it.fail(ErrNoPrefix)
	}
	if it.ps == nil {
		it.ps = &prefixState{}
	}
	ps := it.ps
	p := st.prefix.cut(key)
	ps.lo = append(ps.lo[:0], p...)
	ps.hi = prefixSuccessor(ps.hi, p)
	src := prefixSource{db: it.db, pf: st.prefix, prefix: ps.lo, hash: filter.HashPrefix(p), lo: ps.lo, hi: ps.hi}
	if it.lower != nil && bytes.Compare(it.lower, src.lo) > 0 {
		src.lo = it.lower
	}
	if it.upper != nil && (src.hi == nil || bytes.Compare(it.upper, src.hi) < 0) {
		src.hi = it.upper
	}
	// Range tombstones apply from every source, those the prefix's
	// filters skip included (a skipped table may hide keys of others).
	rd, err := it.db.iterRangeDels(it.rs, it.cf)
	if err != nil {
		return it.fail(err)
	}
	children, err := src.children(it.rs, it.cf)
	it.countPrefixSeek(&src.count)
	if err != nil {
		return it.fail(err)
	}
	ps.full, ps.lower, ps.upper, ps.active = it.iter, it.lower, it.upper, true
	it.iter = compaction.NewMergingIter(compaction.IterOptions{LowerBound: src.lo, UpperBound: src.hi}, children...)
	if len(rd) > 0 {
		it.iter = newRangeDelIter(it.iter, rd, it.seq)
	}
	it.lower, it.upper = src.lo, src.hi
	if bytes.Compare(key, src.lo) < 0 {
		key = src.lo
	}
	return it.findNext(it.iter.SeekGE(key))
}

func (it *Iterator) countPrefixSeek(n *prefixSeek) {
	c := &it.db.metrics.prefix[percpu.Index()&(readStripes-1)]
	c.seeks.Add(1)
	addNonZero(&c.checks, n.checks)
	addNonZero(&c.negatives, n.negatives)
	addNonZero(&c.unfiltered, n.unfiltered)
	addNonZero(&c.memSkipped, n.memSkipped)
}

// leavePrefix ends the confinement of a SeekPrefixGE: the prefix's stack
// is closed and the iterator's own stack and bounds are back.
func (it *Iterator) leavePrefix() {
	ps := it.ps
	if ps == nil || !ps.active {
		return
	}
	if err := it.iter.Close(); err != nil && it.err == nil {
		it.err = err
	}
	it.iter, it.lower, it.upper = ps.full, ps.lower, ps.upper
	ps.full, ps.lower, ps.upper, ps.active = nil, nil, nil, false
	it.valid = false
}
