package sieve

// Shared plumbing of the reliability suite (reliability_*_test.go): a model
// of two column families under appendMerger, workload operations, reading
// back what a (crashed) file system recovers to, and the prefix oracle.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
)

// relLong reports whether the long versions of the reliability tests were
// asked for (SIEVE_LONG=1).
func relLong() bool { return os.Getenv("SIEVE_LONG") != "" }

// relCF names the non-default column family the workloads write to.
const relCF = "cf1"

// relEntry is one write of a workload operation. cf is 0 for the default
// column family and 1 for relCF.
type relEntry struct {
	cf    int
	kind  base.Kind
	key   string
	value string
}

// relOp is one acknowledged (or attempted) write: one batch.
type relOp struct {
	entries []relEntry
	sync    bool
}

// relState is the content of the two column families.
type relState [2]map[string]string

func newRelState() relState { return relState{{}, {}} }

func (s relState) clone() relState {
	var c relState
	for i := range s {
		c[i] = make(map[string]string, len(s[i]))
		for k, v := range s[i] {
			c[i][k] = v
		}
	}
	return c
}

// apply applies op with appendMerger's semantics.
func (s relState) apply(op relOp) {
	for _, e := range op.entries {
		m := s[e.cf]
		switch e.kind {
		case base.KindSet:
			m[e.key] = e.value
		case base.KindDelete:
			delete(m, e.key)
		case base.KindMerge:
			if v, ok := m[e.key]; ok && v != "" {
				m[e.key] = v + "," + e.value
			} else {
				m[e.key] = e.value
			}
		}
	}
}

// hash is a fingerprint of the state.
func (s relState) hash() uint64 {
	d := xxhash.New()
	var buf [8]byte
	str := func(x string) {
		binary.LittleEndian.PutUint64(buf[:], uint64(len(x)))
		d.Write(buf[:])
		d.WriteString(x)
	}
	for cf := range s {
		keys := make([]string, 0, len(s[cf]))
		for k := range s[cf] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		binary.LittleEndian.PutUint64(buf[:], uint64(len(keys)))
		d.Write(buf[:])
		for _, k := range keys {
			str(k)
			str(s[cf][k])
		}
	}
	return d.Sum64()
}

// diff describes the first difference between two states, for messages.
func (s relState) diff(want relState) string {
	for cf := range s {
		keys := map[string]bool{}
		for k := range s[cf] {
			keys[k] = true
		}
		for k := range want[cf] {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			g, gok := s[cf][k]
			w, wok := want[cf][k]
			if gok != wok || g != w {
				return fmt.Sprintf("cf%d key %q: got %q (present %v), want %q (present %v)", cf, k, trunc(g), gok, trunc(w), wok)
			}
		}
	}
	return "equal"
}

// distance counts the keys whose presence or value differ.
func (s relState) distance(o relState) int {
	d := 0
	for cf := range s {
		for k, v := range s[cf] {
			if w, ok := o[cf][k]; !ok || w != v {
				d++
			}
		}
		for k := range o[cf] {
			if _, ok := s[cf][k]; !ok {
				d++
			}
		}
	}
	return d
}

func trunc(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", s[:40], len(s))
	}
	return s
}

// relHistory holds the states after every prefix of a list of operations,
// so that "is this recovered state a prefix in [lo, hi]" costs a hash
// lookup.
type relHistory struct {
	ops    []relOp
	hashes []uint64 // hashes[n] = state after ops[:n]
	states []relState
	merges []bool // merges[n]: ops[:n] hold a merge operand
}

func newRelHistory(ops []relOp) *relHistory {
	h := &relHistory{ops: ops}
	s := newRelState()
	merged := false
	h.hashes = append(h.hashes, s.hash())
	h.states = append(h.states, s.clone())
	h.merges = append(h.merges, false)
	for _, op := range ops {
		s.apply(op)
		for _, e := range op.entries {
			merged = merged || e.kind == base.KindMerge
		}
		h.hashes = append(h.hashes, s.hash())
		h.states = append(h.states, s.clone())
		h.merges = append(h.merges, merged)
	}
	return h
}

// match returns the largest n in [lo, hi] whose prefix state equals got,
// or -1.
func (h *relHistory) match(got relState, lo, hi int) int {
	return h.matchHash(got.hash(), lo, hi)
}

func (h *relHistory) matchHash(g uint64, lo, hi int) int {
	for n := min(hi, len(h.ops)); n >= lo; n-- {
		if h.hashes[n] == g {
			return n
		}
	}
	return -1
}

// explain says why got matches no prefix in [lo, hi].
func (h *relHistory) explain(got relState, lo, hi int) string {
	if lo > len(h.ops) {
		return fmt.Sprintf("bounds [%d, %d] beyond the %d ops", lo, hi, len(h.ops))
	}
	g := got.hash()
	for n := 0; n < lo; n++ {
		if h.hashes[n] == g {
			return fmt.Sprintf("state is the prefix of %d ops, but %d were acknowledged as durable (lost: %s)",
				n, lo, got.diff(h.states[lo]))
		}
	}
	best, bestN := -1, lo
	for n := lo; n <= min(hi, len(h.ops)); n++ {
		if d := got.distance(h.states[n]); best < 0 || d < best {
			best, bestN = d, n
		}
	}
	if os.Getenv("SIEVE_DEBUG") != "" {
		for n := lo; n <= min(hi, len(h.ops)); n++ {
			fmt.Printf("prefix %d (op %+v): distance %d: %s\n", n, h.ops[max(n-1, 0)], got.distance(h.states[n]), got.diff(h.states[n]))
		}
	}
	return fmt.Sprintf("state matches no prefix in [%d, %d] (a hole or reordering); nearest is prefix %d: %s",
		lo, hi, bestN, got.diff(h.states[bestN]))
}

// recovered is what a database recovers to on a file system.
type recovered struct {
	state relState
	hash  uint64 // state.hash()
	// mergers are the merger names the manifest records for the default
	// column family and relCF.
	mergers [2]string
	err     error
}

// relOptions are the options the reliability workloads open with.
func relOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, Merger: appendMerger{}, MemTableSize: 64 << 10,
		L0CompactionTrigger: 100, L0StopWritesTrigger: 200, BlockSize: 1024}
}

// readRecovered opens the database in /db on fs read-only (no recovery
// writes), scans both column families and verifies every table. A file
// system without CURRENT holds no database yet: the empty state.
//
// Crash hooks call it from inside a file-system operation of the DB under
// test, which may hold that DB's locks; it runs on a goroutine of its own
// so that the lock-rank checker (race builds) sees the clone's locks apart
// from the locks of the DB being crashed.
func readRecovered(fs vfs.FS) recovered {
	return onOwnGoroutine(func() recovered { return readRecoveredHere(fs) })
}

// onOwnGoroutine runs f on a new goroutine and waits for its result.
func onOwnGoroutine[T any](f func() T) T {
	c := make(chan T, 1)
	go func() { c <- f() }()
	return <-c
}

func readRecoveredHere(fs vfs.FS) recovered {
	var r recovered
	if _, err := fs.Stat("/db/CURRENT"); errors.Is(err, os.ErrNotExist) {
		r.state = newRelState()
		r.hash = r.state.hash()
		return r
	}
	o := relOptions(fs)
	o.ReadOnly = true
	db, err := Open("/db", o)
	if err != nil {
		r.err = fmt.Errorf("open: %w", err)
		return r
	}
	defer db.Close()
	r.state, r.mergers, r.err = scanDB(db)
	r.hash = r.state.hash()
	if r.err == nil {
		if err := db.CheckInvariants(true); err != nil {
			r.err = fmt.Errorf("CheckInvariants: %w", err)
		}
	}
	return r
}

// scanDB reads both column families of db with iterators.
func scanDB(db *DB) (relState, [2]string, error) {
	s := newRelState()
	var mergers [2]string
	if st := db.cfs.get(0); st != nil {
		mergers[0] = st.recordedMerger
	}
	if err := scanInto(db.NewIter(nil), s[0]); err != nil {
		return s, mergers, fmt.Errorf("scan default: %w", err)
	}
	db.cfs.mu.RLock()
	st := db.cfs.byName[relCF]
	db.cfs.mu.RUnlock()
	if st == nil {
		return s, mergers, nil
	}
	mergers[1] = st.recordedMerger
	cf, err := db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}})
	if err != nil {
		return s, mergers, fmt.Errorf("open %s: %w", relCF, err)
	}
	if err := scanInto(cf.NewIter(nil), s[1]); err != nil {
		return s, mergers, fmt.Errorf("scan %s: %w", relCF, err)
	}
	return s, mergers, nil
}

func scanInto(it *Iterator, m map[string]string) error {
	for ok := it.First(); ok; ok = it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	return errors.Join(it.Error(), it.Close())
}

// fsHash fingerprints the content of /db on a MemFS (names and bytes), so
// that identical crash states are checked once.
func fsHash(fs *vfs.MemFS) uint64 {
	d := xxhash.New()
	names, err := fs.List("/db")
	if err != nil {
		return 0
	}
	var buf [8]byte
	for _, n := range names {
		d.WriteString(n)
		data, err := fs.ReadFile("/db/" + n)
		binary.LittleEndian.PutUint64(buf[:], uint64(len(data)))
		if err != nil {
			buf[7] = 0xff // not a file
		}
		d.Write(buf[:])
		d.Write(data)
	}
	return d.Sum64()
}

// recoveryCache remembers what each distinct crash state recovers to.
type recoveryCache struct {
	m            map[uint64]recovered
	opens, calls int
}

func newRecoveryCache() *recoveryCache { return &recoveryCache{m: map[uint64]recovered{}} }

func (c *recoveryCache) get(fs *vfs.MemFS) (uint64, recovered) {
	c.calls++
	h := fsHash(fs)
	if r, ok := c.m[h]; ok {
		return h, r
	}
	c.opens++
	r := readRecovered(fs)
	c.m[h] = r
	return h, r
}

// checkRecovered applies the oracle to a recovered state: it must be the
// state after ops[:n] for some n in [lo, hi] (lo: writes acknowledged as
// durable; hi: writes begun), and a column family holding merge operands
// must have its merger name recorded. It returns "" when all holds.
func checkRecovered(h *relHistory, r recovered, lo, hi int) string {
	if r.err != nil {
		return fmt.Sprintf("recovery failed: %v", r.err)
	}
	n := h.matchHash(r.hash, lo, hi)
	if n < 0 {
		return h.explain(r.state, lo, hi)
	}
	for cf := range r.mergers {
		if hasMergeIn(h.ops[:n], cf) && r.mergers[cf] == "" {
			return fmt.Sprintf("cf%d holds merge operands but its merger name is not recorded", cf)
		}
	}
	return ""
}

func hasMergeIn(ops []relOp, cf int) bool {
	for _, op := range ops {
		for _, e := range op.entries {
			if e.cf == cf && e.kind == base.KindMerge {
				return true
			}
		}
	}
	return false
}

// fileKind names the kind of a database file for reports ("WAL",
// "table", "MANIFEST", "CURRENT", "temp", "dir").
func fileKind(name string) string {
	i := strings.LastIndexByte(name, '/')
	t, _, ok := base.ParseFilename(name[i+1:])
	if !ok {
		return "dir"
	}
	return [...]string{"WAL", "table", "MANIFEST", "CURRENT", "LOCK", "temp"}[t]
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
