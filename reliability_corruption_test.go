package sieve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"path"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestCorruptionMatrix damages every kind of file the way bad disks and
// file systems do — bit flips, zeroed ranges, truncation, and misplaced
// blocks (one region of the file copied over another) — and checks what a
// user sees on Open and on reading every key of both column families:
//
//   - in the unsynced tail of the newest WAL (what a crash leaves) the
//     damage is tolerated: Open succeeds and the state is a prefix of the
//     history holding every Sync-acknowledged write;
//   - anywhere else (a cleanly closed WAL, an older WAL, each SSTable block
//     kind and the footer, the manifest, CURRENT) Open or the reads return
//     an error wrapping ErrCorruption that names the file (for CURRENT, a
//     clear error naming CURRENT or the manifest), never a panic and never
//     a wrong value; damage that changes nothing a read can see (padding,
//     an unused region) counts as harmless.
//
// A log (WAL or manifest) cut at a record boundary would look exactly like
// a crash that tore its unsynced tail; it is detected because recovery
// seals the newest WAL before starting the next (every older WAL must end
// with its trailer), a clean close records in the manifest which WAL it
// sealed, and the manifest's log number must name a WAL that exists
// (wal/FORMAT.md rule 14, internal/manifest/FORMAT.md). The test logs the
// matrix; SIEVE_LONG=1 damages more offsets.
func TestCorruptionMatrix(t *testing.T) {
	seed := testutil.Seed(t)
	m := &corruptionMatrix{t: t, rng: rand.New(rand.NewSource(seed)), tally: map[string]*corrTally{}}
	m.walTail()
	m.walClosed()
	m.walOlder()
	m.tables()
	m.manifest()
	m.current()
	m.report()
}

type corrTally struct {
	tried, detected, tolerated, harmless int
	// silent counts cases where a key an acknowledged write left there
	// read as absent without an error (each also a failure).
	silent int
}

type corruptionMatrix struct {
	t     *testing.T
	rng   *rand.Rand
	tally map[string]*corrTally // "target / damage"
	order []string
	bad   []string
	// fixtureOps are the writes of the last tablesFixture.
	fixtureOps []relOp
}

func (m *corruptionMatrix) count(target, damage string) *corrTally {
	k := target + " / " + damage
	c := m.tally[k]
	if c == nil {
		c = &corrTally{}
		m.tally[k] = c
		m.order = append(m.order, k)
	}
	c.tried++
	return c
}

// dataSample is about how many data blocks per table are damaged (all of
// them in long mode).
func (m *corruptionMatrix) dataSample() int {
	if testing.Short() || relRaceEnabled {
		return 1
	}
	return 3
}

func (m *corruptionMatrix) report() {
	var tried, detected, tolerated, harmless, silent int
	for _, k := range m.order {
		c := m.tally[k]
		m.t.Logf("  %-34s tried %3d: detected %3d, tolerated %3d, harmless %3d, silent losses %d",
			k, c.tried, c.detected, c.tolerated, c.harmless, c.silent)
		tried += c.tried
		detected += c.detected
		tolerated += c.tolerated
		harmless += c.harmless
		silent += c.silent
	}
	m.t.Logf("corruption cases: %d tried; %d detected (ErrCorruption with the file named, no key silently missing), %d tolerated (torn tail of the newest WAL), %d harmless (no visible effect); %d with silent losses (a key acknowledged there read as absent without an error); %d failures",
		tried, detected, tolerated, harmless, silent, len(m.bad))
	for i, b := range m.bad {
		if i == 20 {
			m.t.Errorf("... and %d more", len(m.bad)-20)
			break
		}
		m.t.Errorf("%s", b)
	}
}

// damage is one way of damaging a file.
type damage struct {
	kind   string // "bit flip", "zeroed range", "truncation", "misplaced block"
	desc   string
	lo, hi int64 // the bytes it changes
	apply  func(fs *vfs.MemFS, name string) error
}

func flipAt(off int64, bit uint) damage {
	return damage{"bit flip", fmt.Sprintf("bit %d of byte %d", bit, off), off, off + 1,
		func(fs *vfs.MemFS, name string) error { return fs.FlipBit(name, off, bit) }}
}

func zeroAt(off, n int64) damage {
	return damage{"zeroed range", fmt.Sprintf("%d bytes at %d zeroed", n, off), off, off + n,
		func(fs *vfs.MemFS, name string) error { return fs.Corrupt(name, off, make([]byte, n)) }}
}

func truncateAt(size int64) damage {
	return damage{"truncation", fmt.Sprintf("truncated to %d bytes", size), size, 1 << 62,
		func(fs *vfs.MemFS, name string) error { return fs.Truncate(name, size) }}
}

// misplace copies n bytes from offset from over offset to.
func misplace(from, to, n int64) damage {
	return damage{"misplaced block", fmt.Sprintf("%d bytes from %d copied over %d", n, from, to), to, to + n,
		func(fs *vfs.MemFS, name string) error {
			data, err := fs.ReadFile(name)
			if err != nil {
				return err
			}
			return fs.Corrupt(name, to, data[from:from+n])
		}}
}

// expectation says what a damaged case must do.
type expectation struct {
	// tail: the damage lies in the unsynced tail of the newest WAL; Open
	// must succeed and recover a prefix in [durable, len(h.ops)].
	tail    bool
	h       *relHistory
	durable int
	// want is the complete state for the other cases.
	want relState
	// context is a string the corruption error must contain (the file).
	context string
	// current: CURRENT damage, where any error naming CURRENT or a
	// manifest is a clear error.
	current bool
}

// try damages a clone of base with d and classifies what the database
// does with it.
func (m *corruptionMatrix) try(base *vfs.MemFS, target, name string, d damage, e expectation) {
	c := m.count(target, d.kind)
	fs := fullCopy(base)
	if err := d.apply(fs, name); err != nil {
		m.t.Fatalf("%s: applying %s: %v", target, d.desc, err)
	}
	fail := func(format string, args ...any) {
		m.bad = append(m.bad, fmt.Sprintf("%s %s (%s of %s): %s", target, d.kind, d.desc, path.Base(name), fmt.Sprintf(format, args...)))
	}
	outcome, msg := evalDamaged(fs, e)
	switch outcome {
	case "detected":
		if e.tail {
			fail("damage in the unsynced tail of the newest WAL refused: %s", msg)
			return
		}
		c.detected++
	case "tolerated":
		if !e.tail {
			fail("tolerated, but a tail was not expected (%s)", msg)
			return
		}
		c.tolerated++
	case "harmless":
		c.harmless++
	case "detected, with silent losses", "lost":
		// Some key an acknowledged write put there reads as absent with
		// no error, whether or not other reads report the damage.
		c.silent++
		fail("%s: %s", outcome, msg)
	default:
		fail("%s: %s", outcome, msg)
	}
}

// evalDamaged opens fs and reads everything. Outcomes: "detected" (an
// error wrapping ErrCorruption with e.context, or for CURRENT a clear
// error), "tolerated" (tail: a valid prefix), "harmless" (everything read
// right), "lost" (reads that should hold a value do not), or a failure:
// "wrong value", "unmarked error", "panic", "refused".
func evalDamaged(fs *vfs.MemFS, e expectation) (outcome, msg string) {
	defer func() {
		if p := recover(); p != nil {
			outcome, msg = "panic", fmt.Sprint(p)
		}
	}()
	db, err := Open("/db", relOptions(fs))
	if err != nil {
		if e.detects(err) {
			return "detected", err.Error()
		}
		return "unmarked error", fmt.Sprintf("Open: %v", err)
	}
	defer db.Close()
	var cf *ColumnFamily
	db.cfs.mu.RLock()
	_, hasCF := db.cfs.byName[relCF]
	db.cfs.mu.RUnlock()
	if hasCF {
		if cf, err = db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}}); err != nil {
			return "unmarked error", fmt.Sprintf("OpenColumnFamily: %v", err)
		}
	}
	if e.tail {
		return evalTail(db, e)
	}
	// Point reads of every key, then scans: each read is right or fails
	// with a marked error. A key an acknowledged write left there that
	// reads as absent without an error (a Get returning ErrNotFound, a
	// scan that ends cleanly without it) is a silent loss, also when other
	// reads report the corruption.
	r := &damagedRead{e: e, db: db, cf: cf, silent: map[string]bool{}}
	if outcome, msg := r.gets(); outcome != "" {
		return outcome, msg
	}
	if outcome, msg := r.scan(); outcome != "" {
		return outcome, msg
	}
	return r.verdict()
}

// detects tells whether err is the clear report of e's damage.
func (e expectation) detects(err error) bool {
	if e.current {
		s := err.Error()
		return strings.Contains(s, "CURRENT") || strings.Contains(s, "MANIFEST")
	}
	// The damaged file is named, or (a manifest that lost edits) the
	// table it names that is gone.
	return errors.Is(err, ErrCorruption) &&
		(strings.Contains(err.Error(), e.context) || strings.Contains(err.Error(), "named by the manifest is missing"))
}

// evalTail evaluates damage to the newest WAL's unsynced tail: db must
// scan to a prefix holding every durable write.
func evalTail(db *DB, e expectation) (outcome, msg string) {
	got, _, err := scanDB(db)
	if err != nil {
		if e.detects(err) {
			return "detected", err.Error()
		}
		return "unmarked error", err.Error()
	}
	if n := e.h.match(got, e.durable, len(e.h.ops)); n < 0 {
		return "lost", e.h.explain(got, e.durable, len(e.h.ops))
	}
	return "tolerated", ""
}

// damagedRead reads every key of a damaged database (cf: nil if the
// family is missing), noting the last damage reported and the keys
// silently lost.
type damagedRead struct {
	e        expectation
	db       *DB
	cf       *ColumnFamily
	detected string
	silent   map[string]bool
}

// gets reads every key e.want holds with Get; a non-empty outcome is a
// failure.
func (r *damagedRead) gets() (outcome, msg string) {
	e := r.e
	for cfi := range e.want {
		if cfi == 1 && r.cf == nil {
			for _, k := range sortedKeys(e.want[1]) {
				r.silent[fmt.Sprintf("cf1 %q (the column family is missing)", k)] = true
			}
			continue
		}
		for _, k := range sortedKeys(e.want[cfi]) {
			var v []byte
			var err error
			if cfi == 0 {
				v, err = r.db.Get([]byte(k))
			} else {
				v, err = r.cf.Get([]byte(k))
			}
			switch {
			case err == nil && string(v) != e.want[cfi][k]:
				return "wrong value", fmt.Sprintf("cf%d key %q = %q, want %q", cfi, k, trunc(string(v)), trunc(e.want[cfi][k]))
			case errors.Is(err, ErrNotFound):
				r.silent[fmt.Sprintf("cf%d %q (Get: not found)", cfi, k)] = true
			case err != nil && e.detects(err):
				r.detected = err.Error()
			case err != nil:
				return "unmarked error", fmt.Sprintf("Get cf%d %q: %v", cfi, k, err)
			}
		}
	}
	return "", ""
}

// scan scans both families; a non-empty outcome is a failure.
func (r *damagedRead) scan() (outcome, msg string) {
	got, _, err := scanDB(r.db)
	switch {
	case err != nil && r.e.detects(err):
		r.detected = err.Error()
	case err != nil:
		return "unmarked error", fmt.Sprintf("scan: %v", err)
	default:
		return r.checkScanned(got)
	}
	return "", ""
}

// checkScanned: a scan that ends without an error vouches for every key
// in its range: each must be there with its value, and nothing else.
func (r *damagedRead) checkScanned(got relState) (outcome, msg string) {
	e := r.e
	for cfi := range e.want {
		for _, k := range sortedKeys(e.want[cfi]) {
			v, ok := got[cfi][k]
			switch {
			case !ok && (cfi == 0 || r.cf != nil):
				r.silent[fmt.Sprintf("cf%d %q (scan)", cfi, k)] = true
			case ok && v != e.want[cfi][k]:
				return "wrong value", fmt.Sprintf("scan: cf%d key %q = %q, want %q", cfi, k, trunc(v), trunc(e.want[cfi][k]))
			}
		}
		for _, k := range sortedKeys(got[cfi]) {
			if _, ok := e.want[cfi][k]; !ok {
				return "wrong value", fmt.Sprintf("scan: cf%d key %q = %q, which no acknowledged write left there", cfi, k, trunc(got[cfi][k]))
			}
		}
	}
	return "", ""
}

// verdict is the outcome once every read was right or marked: silent
// losses, detected damage, or neither.
func (r *damagedRead) verdict() (outcome, msg string) {
	if len(r.silent) > 0 {
		keys := sortedKeys(r.silent)
		msg := fmt.Sprintf("%d silently lost: %s", len(keys), strings.Join(keys[:min(len(keys), 3)], ", "))
		if r.detected != "" {
			return "detected, with silent losses", msg + "; detected: " + r.detected
		}
		return "lost", msg
	}
	if r.detected != "" {
		return "detected", r.detected
	}
	return "harmless", ""
}

// fullCopy copies fs as it is, unsynced data included (the state a
// process kill leaves).
func fullCopy(fs *vfs.MemFS) *vfs.MemFS {
	return fs.CrashClone(vfs.CrashOptions{Unsynced: vfs.KeepUnsyncedSectors, KeepUnsyncedFraction: 1})
}

// fileOf returns the path of the first file in /db of the given kind.
func fileOf(t *testing.T, fs *vfs.MemFS, kind string) string {
	names, err := fs.List("/db")
	require.NoError(t, err)
	for _, n := range names {
		if fileKind("/db/"+n) == kind {
			return "/db/" + n
		}
	}
	t.Fatalf("no %s in /db", kind)
	return ""
}

// walChunk is one chunk of a log file (wal/FORMAT.md).
type walChunk struct {
	off, length int64 // header offset, total length (header + payload)
	typ         byte
}

// walChunks parses the chunk layout of a log file.
func walChunks(data []byte) []walChunk {
	const blockSize, headerSize = 32 << 10, 19
	var out []walChunk
	for off := int64(0); off+headerSize <= int64(len(data)); {
		if room := blockSize - off%blockSize; room < headerSize {
			off += room
			continue
		}
		n := int64(binary.LittleEndian.Uint16(data[off+8:]))
		if data[off+10] == 0 || off+headerSize+n > int64(len(data)) {
			break
		}
		out = append(out, walChunk{off: off, length: headerSize + n, typ: data[off+10]})
		off += headerSize + n
	}
	return out
}

// logDamages returns damages spread over [from, to) of a log file whose
// chunks are chunks: flips and zeroed ranges in headers and payloads,
// truncations at chunk boundaries and inside chunks, and chunks copied
// over other chunks.
func (m *corruptionMatrix) logDamages(chunks []walChunk, from, to int64) []damage {
	var in []walChunk
	for _, c := range chunks {
		if c.off >= from && c.off+c.length <= to && c.typ != 5 { // not the file header
			in = append(in, c)
		}
	}
	if len(in) == 0 {
		return nil
	}
	n := 4
	switch {
	case relLong():
		n = 16
	case testing.Short() || relRaceEnabled:
		n = 2
	}
	var out []damage
	for i := 0; i < n; i++ {
		c := in[m.rng.Intn(len(in))]
		out = append(out,
			flipAt(c.off+m.rng.Int63n(19), uint(m.rng.Intn(8))),                            // header
			flipAt(c.off+min(19+m.rng.Int63n(max(c.length-19, 1)), c.length-1), uint(i%8)), // payload
			zeroAt(min(c.off+m.rng.Int63n(c.length), to-min(16, c.length)), min(16, c.length)),
			truncateAt(c.off+1+m.rng.Int63n(c.length-1)), // inside a chunk
			truncateAt(c.off), // at a chunk boundary
		)
		if d := in[m.rng.Intn(len(in))]; d.off != c.off {
			out = append(out, misplace(c.off, d.off, min(c.length, d.length)))
		}
	}
	// The last chunk (a clean log's EOF trailer) too.
	last := in[len(in)-1]
	out = append(out, flipAt(last.off+3, 1), zeroAt(last.off, last.length))
	return out
}

// walBase writes a history of writes to both column families; after each
// write that returns it may call after.
func walWorkload(t *testing.T, db *DB, cf *ColumnFamily, rng *rand.Rand, n int, syncEvery int) []relOp {
	var ops []relOp
	for i := 0; i < n; i++ {
		op := relOp{sync: syncEvery > 0 && i%syncEvery == syncEvery-1}
		k := fmt.Sprintf("w%03d", rng.Intn(120))
		switch rng.Intn(5) {
		case 0:
			op.entries = []relEntry{del(0, k)}
		case 1:
			op.entries = []relEntry{merge(0, k, fmt.Sprintf("m%d", i)), set(1, k, fmt.Sprint(i))}
		default:
			op.entries = []relEntry{set(0, k, fmt.Sprintf("v%d-%s", i, strings.Repeat("w", rng.Intn(200))))}
		}
		require.NoError(t, applyBatch(db, cf, op))
		ops = append(ops, op)
	}
	return ops
}

func openRel(t *testing.T, fs vfs.FS) (*DB, *ColumnFamily) {
	o := relOptions(fs)
	o.MemTableSize = 32 << 20
	db, err := Open("/db", o)
	require.NoError(t, err)
	cf, err := db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}})
	require.NoError(t, err)
	return db, cf
}

func stateOf(ops []relOp) relState {
	s := newRelState()
	for _, op := range ops {
		s.apply(op)
	}
	return s
}

// walTail: Sync writes, then NoSync writes handed to the OS, then the
// process dies: damage after the last sync is a torn tail.
func (m *corruptionMatrix) walTail() {
	t := m.t
	fs := vfs.NewMem()
	db, cf := openRel(t, fs)
	ops := walWorkload(t, db, cf, m.rng, 200, 10)
	durable := len(ops)
	ops = append(ops, walWorkload(t, db, cf, m.rng, 60, 0)...)
	db.flushWALBuffer()
	synced := db.log.w.SyncedOffset()
	killDB(db)
	name := fileOf(t, fs, "WAL")
	data, err := fs.ReadFile(name)
	require.NoError(t, err)
	require.Greater(t, int64(len(data)), synced+1000, "an unsynced tail")
	e := expectation{tail: true, h: newRelHistory(ops), durable: durable}
	for _, d := range m.logDamages(walChunks(data), synced, int64(len(data))) {
		if d.kind == "misplaced block" {
			// A chunk of this log copied into the tail is not something a
			// crash leaves; it is detected (a replayed batch's sequence
			// number goes backwards) or tolerated.
			m.tryEither(fs, "WAL, unsynced tail", name, d, e)
			continue
		}
		m.try(fs, "WAL, unsynced tail", name, d, e)
	}
}

// tryEither accepts detection or toleration.
func (m *corruptionMatrix) tryEither(fs *vfs.MemFS, target, name string, d damage, e expectation) {
	e2 := e
	e2.context = path.Base(name)
	out, msg := evalDamaged(func() *vfs.MemFS {
		c := fullCopy(fs)
		require.NoError(m.t, d.apply(c, name))
		return c
	}(), e2)
	c := m.count(target, d.kind)
	switch out {
	case "detected":
		c.detected++
	case "tolerated":
		c.tolerated++
	default:
		m.bad = append(m.bad, fmt.Sprintf("%s %s (%s): %s: %s", target, d.kind, d.desc, out, msg))
	}
}

// walClosed: a cleanly closed WAL, whose end-of-log trailer vouches for
// every record: any damage is corruption, truncation at a record boundary
// included (the manifest records that a clean close sealed this WAL).
func (m *corruptionMatrix) walClosed() {
	t := m.t
	fs := vfs.NewMem()
	db, cf := openRel(t, fs)
	ops := walWorkload(t, db, cf, m.rng, 250, 0)
	require.NoError(t, db.Close())
	name := fileOf(t, fs, "WAL")
	data, err := fs.ReadFile(name)
	require.NoError(t, err)
	chunks := walChunks(data)
	e := expectation{want: stateOf(ops), context: path.Base(name)}
	for _, d := range m.logDamages(chunks, 0, int64(len(data))) {
		m.try(fs, "WAL, closed (newest)", name, d, e)
	}
}

// walOlder: a WAL that is not the newest (its flush failed, a newer WAL
// took the writes after it): any damage, truncation included, is
// corruption.
func (m *corruptionMatrix) walOlder() {
	t := m.t
	mem := vfs.NewMem()
	// Flushes fail: the first WAL stays, closed by the rotation.
	efs := vfs.NewErrorFS(mem, vfs.ErrorOptions{Nth: 1, Persistent: true, Match: func(op vfs.Op, name string) bool {
		return op == vfs.OpCreate && fileKind(name) == "table"
	}})
	o := relOptions(efs)
	db, err := Open("/db", o)
	require.NoError(t, err)
	cf, err := db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}})
	require.NoError(t, err)
	var ops []relOp
	for i := 0; len(db.mu.wals) < 2; i++ {
		op := relOp{entries: []relEntry{set(0, fmt.Sprintf("o%04d", i), strings.Repeat("o", 900))}, sync: i%20 == 0}
		if err := applyBatch(db, cf, op); err != nil {
			break
		}
		ops = append(ops, op)
	}
	db.Close()
	names, err := mem.List("/db")
	require.NoError(t, err)
	var wals []string
	for _, n := range names {
		if fileKind(n) == "WAL" {
			wals = append(wals, "/db/"+n)
		}
	}
	require.GreaterOrEqual(t, len(wals), 2)
	name := wals[0]
	data, err := mem.ReadFile(name)
	require.NoError(t, err)
	// What the database holds: every acknowledged write (the WALs were
	// synced when rotated and closed).
	// Cut at a record boundary, an older WAL is corruption: every WAL but
	// the newest ends with its trailer (recovery seals a crashed one).
	chunks := walChunks(data)
	e := expectation{want: stateOf(ops), context: path.Base(name)}
	require.Equal(t, "harmless", func() string { o, _ := evalDamaged(mem.CrashClone(vfs.CrashOptions{}), e); return o }())
	for _, d := range m.logDamages(chunks, 0, int64(len(data))) {
		m.try(mem, "WAL, older than the newest", name, d, e)
	}
}

// tables: damage in every block kind of an L6 table and an L0 table.
func (m *corruptionMatrix) tables() {
	t := m.t
	fs, want := m.tablesFixture()
	names, err := fs.List("/db")
	require.NoError(t, err)
	for _, n := range names {
		if fileKind(n) != "table" {
			continue
		}
		m.damageTable(fs, n, want)
	}
}

// tablesFixture is a database of small blocks holding one L6 table per
// family (a full compaction) and an L0 table (a flush of puts and merges
// over them), closed, and the state it holds.
func (m *corruptionMatrix) tablesFixture() (*vfs.MemFS, relState) {
	t := m.t
	fs := vfs.NewMem()
	o := relOptions(fs)
	o.MemTableSize = 32 << 20
	o.BlockSize = 512
	db, err := Open("/db", o)
	require.NoError(t, err)
	cf, err := db.OpenColumnFamily(relCF, &ColumnFamilyOptions{Merger: appendMerger{}})
	require.NoError(t, err)
	var ops []relOp
	val := func() string { // incompressible, fixed size: equal-size blocks
		b := make([]byte, 24)
		m.rng.Read(b)
		return fmt.Sprintf("%x", b)
	}
	nKeys := 600
	if testing.Short() || relRaceEnabled {
		nKeys = 200
	}
	for i := 0; i < nKeys; i++ {
		ops = append(ops, relOp{entries: []relEntry{set(0, fmt.Sprintf("t%05d", i), val()), set(1, fmt.Sprintf("c%05d", i), val())}})
	}
	for _, op := range ops {
		require.NoError(t, applyBatch(db, cf, op))
	}
	require.NoError(t, db.Compact(nil, nil))
	for i := 0; i < nKeys; i += 7 {
		op := relOp{entries: []relEntry{set(0, fmt.Sprintf("t%05d", i), val()), merge(0, fmt.Sprintf("t%05d", i+1), "mm")}}
		require.NoError(t, applyBatch(db, cf, op))
		ops = append(ops, op)
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	m.fixtureOps = ops
	return fs, stateOf(ops)
}

// damageTable tries the damages of every block of table file n (a sample
// of its data blocks unless SIEVE_LONG=1).
func (m *corruptionMatrix) damageTable(fs *vfs.MemFS, n string, want relState) {
	t := m.t
	name := "/db/" + n
	_, num, _ := base.ParseFilename(n)
	data, err := fs.ReadFile(name)
	require.NoError(t, err)
	f, err := fs.Open(name)
	require.NoError(t, err)
	r, err := sstable.NewReader(f, int64(len(data)), sstable.ReaderOptions{FileNum: num})
	require.NoError(t, err)
	layout := r.Layout()
	r.Close()
	e := expectation{want: want, context: fmt.Sprintf("%06d", num)}
	byKind := map[string][]sstable.BlockLocation{}
	for _, b := range layout {
		byKind[b.Kind] = append(byKind[b.Kind], b)
	}
	for _, b := range layout {
		if b.Kind == "data" && len(byKind["data"]) > 4 && !relLong() && m.rng.Intn(len(byKind["data"])) > m.dataSample() {
			continue // a sample of the data blocks
		}
		target := "table " + b.Kind + " block"
		if b.Kind == "footer" {
			target = "table footer"
		}
		for _, d := range m.blockDamages(layout, b) {
			m.try(fs, target, name, d, e)
		}
	}
}

// blockDamages are the damages tried on block b of a table of the given
// layout: bit flips, zeroed bytes, a truncation, and a misplaced block.
func (m *corruptionMatrix) blockDamages(layout []sstable.BlockLocation, b sstable.BlockLocation) []damage {
	off, n := int64(b.Offset), int64(b.Length)
	ds := []damage{
		flipAt(off+n/2, uint(m.rng.Intn(8))),
		zeroAt(off, min(n, 32)),
		truncateAt(off + n/2),
	}
	if !testing.Short() && !relRaceEnabled {
		ds = append(ds, flipAt(off, uint(m.rng.Intn(8))), flipAt(off+n-1, uint(m.rng.Intn(8))), zeroAt(off, n))
	}
	// Misplaced: another block of the same length if there is one (its
	// checksum is valid where it lands), else the bytes before this
	// block.
	from := int64(-1)
	for _, o := range layout {
		if o.Offset != b.Offset && o.Length == b.Length {
			from = int64(o.Offset)
			break
		}
	}
	if from < 0 && off >= n {
		from = off - n
	}
	if from >= 0 {
		ds = append(ds, misplace(from, off, n))
	}
	return ds
}

// manifest: a manifest holding many edits (creation, column family,
// flushes, compactions), cleanly closed.
func (m *corruptionMatrix) manifest() {
	t := m.t
	fs := vfs.NewMem()
	db, cf := openRel(t, fs)
	var ops []relOp
	for round := 0; round < 4; round++ {
		ops = append(ops, walWorkload(t, db, cf, m.rng, 40, 0)...)
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Compact(nil, nil))
	ops = append(ops, walWorkload(t, db, cf, m.rng, 40, 0)...)
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	name := fileOf(t, fs, "MANIFEST")
	data, err := fs.ReadFile(name)
	require.NoError(t, err)
	chunks := walChunks(data)
	e := expectation{want: stateOf(ops), context: path.Base(name)}
	for _, d := range m.logDamages(chunks, 0, int64(len(data))) {
		m.try(fs, "MANIFEST", name, d, e)
	}
}

// current: CURRENT damaged: any error naming CURRENT or the manifest.
func (m *corruptionMatrix) current() {
	t := m.t
	fs := vfs.NewMem()
	db, cf := openRel(t, fs)
	ops := walWorkload(t, db, cf, m.rng, 30, 0)
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	const name = "/db/CURRENT"
	data, err := fs.ReadFile(name)
	require.NoError(t, err)
	e := expectation{want: stateOf(ops), current: true}
	var ds []damage
	for off := int64(0); off < int64(len(data)); off++ {
		if relLong() || off%4 == 0 {
			ds = append(ds, flipAt(off, uint(off%8)))
		}
	}
	ds = append(ds, zeroAt(0, int64(len(data))), zeroAt(3, 8), truncateAt(0), truncateAt(int64(len(data))/2),
		truncateAt(int64(len(data))-1), misplace(0, 10, 10))
	// CURRENT naming another manifest (an older, removed one).
	other := strings.Replace(string(data), "MANIFEST-", "MANIFEST-9", 1)
	ds = append(ds, damage{"misplaced block", "content of a CURRENT naming another manifest", 0, int64(len(data)),
		func(fs *vfs.MemFS, name string) error { return fs.WriteFile(name, []byte(other)) }})
	ds = append(ds, damage{"removed", "CURRENT deleted", 0, int64(len(data)),
		func(fs *vfs.MemFS, name string) error { return fs.Remove(name) }})
	for _, d := range ds {
		m.try(fs, "CURRENT", name, d, e)
	}
}

// TestCompactionStopsOnCorruption: a background compaction that reads a
// damaged block stops, the database turns read-only (writes fail with
// ErrCorruption), no output table is left behind and the version still
// names the damaged input: nothing bad is copied into new tables.
func TestCompactionStopsOnCorruption(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, L0CompactionTrigger: 100, L0StopWritesTrigger: 200, BlockSize: 512}
	db, err := Open("/db", o)
	require.NoError(t, err)
	for f := 0; f < 3; f++ {
		for i := 0; i < 300; i++ {
			require.NoError(t, db.Put([]byte(fmt.Sprintf("k%05d", i*3+f)), []byte(fmt.Sprintf("value-%d-%d", f, i)), nil))
		}
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Close())
	// Damage a data block in the middle of one L0 table.
	table := fileOf(t, fs, "table")
	data, err := fs.ReadFile(table)
	require.NoError(t, err)
	require.NoError(t, fs.FlipBit(table, int64(len(data))/3, 2))

	// A trigger of 3 L0 tables starts a background compaction at Open.
	o.L0CompactionTrigger, o.L0StopWritesTrigger = 3, 200
	db, err = Open("/db", o)
	require.NoError(t, err)
	defer db.Close()
	// A write and a flush race the compaction, which may already have
	// failed (then they fail too).
	l0 := 3
	if err := db.Put([]byte("after"), []byte("x"), nil); err != nil {
		require.ErrorIs(t, err, ErrCorruption)
	} else if err := db.Flush(); err != nil {
		require.ErrorIs(t, err, ErrCorruption)
	}
	db.mu.Lock()
	for db.flush.running {
		db.mu.cond.Wait()
	}
	db.mu.Unlock()
	db.mu.Lock()
	for db.compact.running > 0 {
		db.mu.cond.Wait()
	}
	db.mu.Unlock()
	werr := db.Put([]byte("after"), []byte("y"), nil)
	require.ErrorIs(t, werr, ErrCorruption, "writes are refused after a compaction met corruption")
	require.Contains(t, werr.Error(), strings.TrimSuffix(path.Base(table), ".sst"))
	v := db.versions.Current()
	defer v.Unref()
	live := map[string]bool{}
	for _, lv := range v.CFs {
		for _, files := range lv {
			for _, f := range files {
				live[base.FileName(base.FileTypeTable, f.FileNum)] = true
			}
		}
	}
	after, err := fs.List("/db")
	require.NoError(t, err)
	for _, n := range after {
		if fileKind(n) == "table" {
			require.True(t, live[n], "a compaction output was left behind: %s", n)
		}
	}
	if len(v.CFs[0][0]) == 4 {
		l0 = 4 // the flush got in before the failure
	}
	require.Len(t, v.CFs[0][0], l0, "the inputs are still in L0")
	for level := 1; level < len(v.CFs[0]); level++ {
		require.Empty(t, v.CFs[0][level], "nothing was written below L0")
	}
	t.Logf("writes refused with: %v", werr)
}

// TestCorruptionSilentLossCounted: evalDamaged tells a silent loss (a key
// that should be there reads as absent without an error) from a detected
// corruption, also when other reads of the same database do report one.
func TestCorruptionSilentLossCounted(t *testing.T) {
	fs := vfs.NewMem()
	o := relOptions(fs)
	o.BlockSize = 512
	db, err := Open("/db", o)
	require.NoError(t, err)
	want := newRelState()
	for i := 0; i < 300; i++ {
		k, v := fmt.Sprintf("t%05d", i), fmt.Sprintf("%0100d", i)
		require.NoError(t, db.Put([]byte(k), []byte(v), nil))
		want[0][k] = v
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	table := fileOf(t, fs, "table")
	_, num, _ := base.ParseFilename(path.Base(table))
	e := expectation{want: want, context: fmt.Sprintf("%06d", num)}
	out, msg := evalDamaged(fullCopy(fs), e)
	require.Equal(t, "harmless", out, msg)

	// A key the database never held, as if it had vanished.
	e.want = want.clone()
	e.want[0]["t00000a"] = "vanished"
	out, msg = evalDamaged(fullCopy(fs), e)
	require.Equal(t, "lost", out, msg)
	damaged := fullCopy(fs)
	data, err := damaged.ReadFile(table)
	require.NoError(t, err)
	require.NoError(t, damaged.FlipBit(table, int64(len(data))/3, 1)) // a data block
	out, msg = evalDamaged(damaged, e)
	require.Equal(t, "detected, with silent losses", out, msg)
	require.Contains(t, msg, "t00000a")
}
