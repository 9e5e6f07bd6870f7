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
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
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
		case base.KindRangeDelete: // [key, value)
			for k := range m {
				if e.key <= k && k < e.value {
					delete(m, k)
				}
			}
		}
	}
}

// hash is a fingerprint of the state: the sum of its entries' hashes, so
// that it does not depend on order and a history can keep it up to date
// one write at a time (relHistory).
func (s relState) hash() uint64 {
	var h uint64
	for cf := range s {
		for k, v := range s[cf] {
			h += entryHash(cf, k, v)
		}
	}
	return h
}

// entryHash is the hash of one key/value pair of column family cf.
func entryHash(cf int, k, v string) uint64 {
	d := xxhash.New()
	var buf [9]byte
	buf[0] = byte(cf)
	binary.LittleEndian.PutUint64(buf[1:], uint64(len(k)))
	d.Write(buf[:])
	d.WriteString(k)
	d.WriteString(v)
	return d.Sum64()
}

// applyHashed applies op like apply and returns the state's hash updated
// from h, the hash before.
func (s relState) applyHashed(op relOp, h uint64) uint64 {
	for _, e := range op.entries {
		m := s[e.cf]
		if e.kind == base.KindRangeDelete {
			h -= s.rangeHash(e)
		}
		if v, ok := m[e.key]; ok {
			h -= entryHash(e.cf, e.key, v)
		}
		s.apply(relOp{entries: []relEntry{e}})
		if v, ok := m[e.key]; ok {
			h += entryHash(e.cf, e.key, v)
		}
	}
	return h
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

// relHistory holds the hashes of the states after every prefix of a list
// of operations, so that "is this recovered state a prefix in [lo, hi]"
// costs a hash lookup. The states themselves are replayed when a message
// needs them.
type relHistory struct {
	ops    []relOp
	hashes []uint64 // hashes[n] = hash of the state after ops[:n]
	cur    relState // the state after every op
}

func newRelHistory(ops []relOp) *relHistory {
	h := &relHistory{cur: newRelState()}
	h.hashes = append(h.hashes, h.cur.hash())
	for _, op := range ops {
		h.add(op)
	}
	return h
}

// add appends op to the history.
func (h *relHistory) add(op relOp) {
	h.ops = append(h.ops, op)
	h.hashes = append(h.hashes, h.cur.applyHashed(op, h.hashes[len(h.hashes)-1]))
}

// stateAt replays ops[:n].
func (h *relHistory) stateAt(n int) relState {
	s := newRelState()
	for _, op := range h.ops[:n] {
		s.apply(op)
	}
	return s
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
				n, lo, got.diff(h.stateAt(lo)))
		}
	}
	hi = min(hi, len(h.ops))
	s := h.stateAt(lo)
	best, bestN := -1, lo
	for n := lo; n <= hi; n++ {
		if n > lo {
			s.apply(h.ops[n-1])
		}
		d := got.distance(s)
		if best < 0 || d < best {
			best, bestN = d, n
		}
		if os.Getenv("SIEVE_DEBUG") != "" {
			fmt.Printf("prefix %d (op %+v): distance %d: %s\n", n, h.ops[max(n-1, 0)], d, got.diff(s))
		}
	}
	return fmt.Sprintf("state matches no prefix in [%d, %d] (a hole or reordering); nearest is prefix %d: %s",
		lo, hi, bestN, got.diff(h.stateAt(bestN)))
}

// crashClass classifies a recovered state against the prefixes in [lo,
// hi] (lo: operations acknowledged as durable; hi: operations begun):
//
//   - "prefix": it equals the state after ops[:n] for some n in [lo, hi];
//   - "lost": it equals a shorter prefix, or some key holds a value it
//     held only before ops[:lo] were all applied (an acknowledged write
//     is missing);
//   - "wrong value": some key holds a value (or absence) it never held
//     after any prefix up to hi;
//   - "non-prefix": every key holds a value it holds after some prefix in
//     [lo, hi] (each acknowledged write is there, key by key), but no one
//     prefix gives them all: a hole in, or a reordering of, the
//     unacknowledged writes, or half a batch.
//
// It replays the history (O(hi × keys)): for failures and self-checks.
func (h *relHistory) crashClass(got relState, lo, hi int) (class, detail string) {
	hi = min(hi, len(h.ops))
	g := got.hash()
	if h.matchHash(g, lo, hi) >= 0 {
		return "prefix", ""
	}
	for n := 0; n < lo; n++ {
		if h.hashes[n] == g {
			return "lost", fmt.Sprintf("the state after %d ops, but %d were acknowledged as durable", n, lo)
		}
	}
	type ck struct {
		cf  int
		key string
	}
	// For every key ever written (or recovered): whether its recovered
	// value (or absence) appears after some prefix before lo, and after
	// some prefix in [lo, hi].
	keys := map[ck]bool{}
	for cf := range got {
		for k := range got[cf] {
			keys[ck{cf, k}] = true
		}
	}
	for _, op := range h.ops[:hi] {
		for _, e := range op.entries {
			keys[ck{e.cf, e.key}] = true
		}
	}
	before, inRange := map[ck]bool{}, map[ck]bool{}
	s := newRelState()
	for n := 0; n <= hi; n++ {
		if n > 0 {
			s.apply(h.ops[n-1])
		}
		for k := range keys {
			gv, gok := got[k.cf][k.key]
			sv, sok := s[k.cf][k.key]
			if gok == sok && gv == sv {
				if n < lo {
					before[k] = true
				} else {
					inRange[k] = true
				}
			}
		}
	}
	var lost, wrong []string
	for k := range keys {
		if inRange[k] {
			continue
		}
		gv, gok := got[k.cf][k.key]
		desc := fmt.Sprintf("cf%d key %q = %q (present %v)", k.cf, k.key, trunc(gv), gok)
		if before[k] {
			lost = append(lost, desc)
		} else {
			wrong = append(wrong, desc)
		}
	}
	slices.Sort(lost)
	slices.Sort(wrong)
	switch {
	case len(wrong) > 0:
		return "wrong value", fmt.Sprintf("%d keys hold what no prefix up to %d gives them, e.g. %s", len(wrong), hi, wrong[0])
	case len(lost) > 0:
		return "lost", fmt.Sprintf("%d keys hold what they held only before the %d acknowledged ops, e.g. %s", len(lost), lo, lost[0])
	}
	return "non-prefix", h.explain(got, lo, hi)
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

// rwMarker is the key reopenReadWrite writes into the default column
// family of a recovered database (outside every workload's key space).
const rwMarker = "\xffreopened read-write"

// reopenReadWrite checks recovery's write side on fs, which holds what a
// read-only open recovered as want: it opens the database read-write
// (sealing the newest WAL, starting a new manifest, deleting obsolete
// files, flushing what the WALs held, all in the background or in Open),
// which must hold want (scanned, and read key by key with Get) and pass
// CheckInvariants(true); writes rwMarker with
// Sync; closes; and opens it read-write again, which must hold want plus
// the marker. opts gives the options to open with (relOptions when nil).
// It changes fs. Like readRecovered it runs on a goroutine of its own (it
// may be called from a crash hook).
func reopenReadWrite(fs vfs.FS, want relState, opts func(vfs.FS) *Options) error {
	return onOwnGoroutine(func() error { return reopenReadWriteHere(fs, want, opts) })
}

func reopenReadWriteHere(fs vfs.FS, want relState, opts func(vfs.FS) *Options) error {
	if opts == nil {
		opts = relOptions
	}
	db, err := Open("/db", opts(fs))
	if err != nil {
		return fmt.Errorf("read-write open: %w", err)
	}
	got, _, err := scanDB(db)
	if err == nil && got.hash() != want.hash() {
		err = fmt.Errorf("holds other contents than the read-only open: %s", got.diff(want))
	}
	if err == nil {
		err = pointReads(db, want)
	}
	if err == nil {
		err = db.CheckInvariants(true)
	}
	if err == nil {
		err = db.Put([]byte(rwMarker), []byte("1"), Sync)
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("read-write open: %w", err)
	}
	db, err = Open("/db", opts(fs))
	if err != nil {
		return fmt.Errorf("second read-write open (after Close): %w", err)
	}
	got, _, err = scanDB(db)
	want = want.clone()
	want[0][rwMarker] = "1"
	if err == nil && got.hash() != want.hash() {
		err = fmt.Errorf("holds other contents than the first: %s", got.diff(want))
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("second read-write open (after Close): %w", err)
	}
	return nil
}

// pointReads checks db with a Get of every key of want.
func pointReads(db *DB, want relState) error {
	var cf *ColumnFamily
	if len(want[1]) > 0 {
		var err error
		if cf, err = db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}}); err != nil {
			return err
		}
	}
	for c := range want {
		for k, w := range want[c] {
			var v []byte
			var err error
			if c == 0 {
				v, err = db.Get([]byte(k))
			} else {
				v, err = cf.Get([]byte(k))
			}
			if err != nil {
				return fmt.Errorf("Get cf%d %q: %w", c, k, err)
			}
			if string(v) != w {
				return fmt.Errorf("Get cf%d %q = %q, the scan found %q", c, k, trunc(string(v)), trunc(w))
			}
		}
	}
	return nil
}

// rwSampled says whether the crash state with fingerprint fsh is one of
// the 1-in-every states a test reopens read-write too: a choice fixed by
// the seed and the state, not by the order states come in.
func rwSampled(seed int64, fsh uint64, every int) bool {
	if every <= 1 {
		return true
	}
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(seed))
	binary.LittleEndian.PutUint64(buf[8:], fsh)
	return xxhash.Sum64(buf[:])%uint64(every) == 0
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
// With rwEvery > 0, one distinct state in rwEvery (rwSampled) is also
// reopened read-write after the read-only open (reopenReadWrite); a
// difference or failure there is the state's recovery error.
type recoveryCache struct {
	m            map[uint64]recovered
	opens, calls int
	seed         int64
	rwEvery      int
	rwOpens      int // states reopened read-write
}

func newRecoveryCache() *recoveryCache { return &recoveryCache{m: map[uint64]recovered{}} }

// get returns fs's fingerprint and what it recovers to. It may change fs
// (the read-write reopen).
func (c *recoveryCache) get(fs *vfs.MemFS) (uint64, recovered) {
	c.calls++
	h := fsHash(fs)
	if r, ok := c.m[h]; ok {
		return h, r
	}
	c.opens++
	r := readRecovered(fs)
	if r.err == nil && c.rwEvery > 0 && rwSampled(c.seed, h, c.rwEvery) {
		c.rwOpens++
		r.err = reopenReadWrite(fs, r.state, nil)
	}
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

// waitImmutablesFlushed waits until every immutable memtable is flushed:
// those Open replayed from the WAL (flushed in the background, so that
// the tree printed after a reopen would otherwise depend on whether that
// flush won the race with the print; CI once saw it win) or a rotation
// left.
func waitImmutablesFlushed(t *testing.T, db *DB) {
	t.Helper()
	db.mu.Lock()
	err := db.waitFlushedLocked(db.mu.mem.logNum)
	db.mu.Unlock()
	require.NoError(t, err)
}

// backgroundIdle reports whether db runs no background flush or
// compaction and has none to start: with no writes, none starts later.
func backgroundIdle(db *DB) bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return !db.flush.running && len(db.mu.imm) == 0 && db.compact.running == 0
}
