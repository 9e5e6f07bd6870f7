package sieve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"sync/atomic"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/sstable"
)

// ErrBadExternalTable marks every refusal of an Ingest input: not an
// external table, empty, keys out of order, a corrupt block (then also
// ErrCorruption), overlapping another input, or already ingested.
var ErrBadExternalTable = errors.New("sieve: bad external table")

// Ingest adds the external tables at paths (NewExternalTableWriter) to
// the default column family atomically: one manifest edit makes all of
// their keys visible at once, with one sequence number newer than every
// write before, so that a snapshot older than the Ingest sees none of
// them. See ColumnFamily.Ingest.
func (db *DB) Ingest(paths []string) error { return db.ingest(manifest.DefaultCFID, paths) }

// Ingest adds the external tables at paths to the family atomically.
//
// Every input is checked before anything changes (format, checksums of
// every block, key order, only Sets, inputs not overlapping each other,
// not ingested before: the manifest remembers every external table's
// ID); a refusal wraps ErrBadExternalTable. Then, holding the commit
// pipeline (writes wait until Ingest returns):
//
//   - if no snapshot is open and nothing in the family overlaps any
//     input, the inputs are copied into the database directory as they
//     are, their keys at sequence number 0 (no reader can tell them from
//     newer ones; the tables keep the filter and prefixes they were
//     written with);
//   - otherwise the memtables are flushed and each input is rewritten into
//     the directory with the Ingest's one sequence number in every key,
//     through the table writer (its level's filter policy, the family's
//     prefixes), so it is newer than every write before and invisible to
//     older snapshots.
//
// Tables are fsynced, then the directory, before the edit names them.
// Each lands in the lowest level where no table (and no running
// compaction's output) overlaps its key range. A crash recovers to before
// the Ingest or after it. The input files are left as they are.
// An Ingest into a dropped family fails with ErrColumnFamilyDropped (one
// that races the drop is dropped with the family, like a write).
func (cf *ColumnFamily) Ingest(paths []string) error {
	if err := cf.check(); err != nil {
		return err
	}
	return cf.db.ingest(cf.id, paths)
}

// ingestInput is one validated external table.
type ingestInput struct {
	path              string
	r                 *sstable.Reader
	id                []byte
	smallest, largest []byte // user keys
	outs              *tableOutput
	// exLo, exHi: the part [exLo, exHi) of an IngestAndExcise's range
	// this input's tables delete (nil: a plain Ingest; ingest_excise.go)
	exLo, exHi []byte
}

// ingestCounters are Metrics.Ingest's counters.
type ingestCounters struct {
	count, copied, tables, keys, bytes atomic.Int64
}

// IngestMetrics count Ingest calls and what they added.
type IngestMetrics struct {
	// Count is the number of successful Ingest calls, Copied those that
	// took the copy path (keys at sequence number 0: see
	// ColumnFamily.Ingest); Tables the tables they added (a rewritten
	// input larger than TargetFileSize is split), Keys and Bytes their
	// keys and table bytes.
	Count, Copied, Tables, Keys, Bytes int64
}

// String is the ingest line of Metrics.String.
func (m IngestMetrics) String() string {
	return fmt.Sprintf("ingest: %d calls (%d copied), %d tables, %d keys, %s", m.Count, m.Copied, m.Tables, m.Keys, humanBytes(m.Bytes))
}

func (c *ingestCounters) load() IngestMetrics {
	return IngestMetrics{Count: c.count.Load(), Copied: c.copied.Load(), Tables: c.tables.Load(), Keys: c.keys.Load(), Bytes: c.bytes.Load()}
}

func (db *DB) ingest(cf uint32, paths []string) error {
	return db.ingestExcise(context.Background(), cf, paths, nil)
}

// ingestExcise is Ingest, or IngestAndExcise when ex is not nil; it stops
// with ctx's error between input tables, removing what it wrote.
func (db *DB) ingestExcise(ctx context.Context, cf uint32, paths []string, ex *exciseSpan) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := db.checkOpen(); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if len(paths) == 0 {
		return nil
	}
	ins, err := db.openIngestInputs(paths)
	defer closeIngestInputs(ins)
	if err != nil {
		return err
	}
	db.commit.acquire()
	defer db.commit.release()
	if err := db.checkOpen(); err != nil {
		return err
	}
	db.mu.Lock()
	bgErr := db.mu.bgErr
	db.mu.Unlock()
	if bgErr != nil {
		return bgErr
	}
	if err := db.checkNotIngested(ins); err != nil {
		return err
	}
	if db.cfs.get(cf) == nil {
		return fmt.Errorf("%w: id %d", ErrColumnFamilyDropped, cf)
	}
	if ex != nil {
		if err := ex.assign(ins); err != nil {
			return err
		}
	} else if done, err := db.ingestByCopy(cf, ins); done {
		return err
	}
	if err := db.flushForIngest(); err != nil {
		return err
	}
	seq := db.logSeq + 1
	if seq > base.SeqNumMax {
		return fmt.Errorf("sieve: sequence numbers exhausted")
	}
	if err := db.rewriteInputs(ctx, cf, ins, seq); err != nil {
		return err
	}
	if err := db.installIngest(cf, ins, seq); err != nil {
		return err
	}
	db.logSeq = seq
	return nil
}

// openIngestInputs opens and checks every input, and checks that they do
// not overlap; it returns them sorted by key (and those it opened, to be
// closed, on an error).
func (db *DB) openIngestInputs(paths []string) ([]*ingestInput, error) {
	var ins []*ingestInput
	ids := map[string]string{}
	for _, p := range paths {
		in, err := db.openIngestInput(p)
		if err != nil {
			return ins, ingestInputErr(p, err)
		}
		ins = append(ins, in)
		if prev, ok := ids[string(in.id)]; ok {
			return ins, fmt.Errorf("%w: ingest %s: the same table as %s", ErrBadExternalTable, p, prev)
		}
		ids[string(in.id)] = p
	}
	sort.Slice(ins, func(i, j int) bool { return bytes.Compare(ins[i].smallest, ins[j].smallest) < 0 })
	for i := 1; i < len(ins); i++ {
		if bytes.Compare(ins[i].smallest, ins[i-1].largest) <= 0 {
			return ins, fmt.Errorf("%w: ingest: %s [%q, %q] overlaps %s [%q, %q]", ErrBadExternalTable,
				ins[i].path, ins[i].smallest, ins[i].largest, ins[i-1].path, ins[i-1].smallest, ins[i-1].largest)
		}
	}
	return ins, nil
}

// ingestInputErr is the refusal of the input at path for err, naming the
// input once: the file system's errors carry the path already.
func ingestInputErr(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return fmt.Errorf("%w: ingest: %w", ErrBadExternalTable, err)
	}
	return fmt.Errorf("%w: ingest %s: %w", ErrBadExternalTable, path, err)
}

// openIngestInput opens the external table at path and verifies it whole:
// its properties say it is an external table of Sets at sequence number
// 0, and every block's checksum and every key's order hold.
func (db *DB) openIngestInput(path string) (*ingestInput, error) {
	f, err := db.fs.Open(path)
	if err != nil {
		return nil, err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := sstable.NewReader(f, size, sstable.ReaderOptions{Policies: db.cfs.policies()})
	if err != nil {
		f.Close()
		return nil, err
	}
	in := &ingestInput{path: path, r: r}
	p := r.Properties()
	switch {
	case p.ExternalID == "":
		err = errors.New("not an external table (no sieve.external.id property)")
	case p.NumEntries == 0:
		err = errors.New("holds no keys")
	case p.NumSets != p.NumEntries || p.LargestSeq != 0:
		err = fmt.Errorf("holds entries other than Sets at sequence number 0 (%d sets of %d, largest seq %d)", p.NumSets, p.NumEntries, p.LargestSeq)
	case !r.RangeDels().Empty():
		err = errors.New("holds range tombstones")
	default:
		err = r.Verify()
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	in.id = []byte(p.ExternalID)
	in.smallest, in.largest = p.SmallestKey.UserKey, p.LargestKey.UserKey
	return in, nil
}

func closeIngestInputs(ins []*ingestInput) {
	for _, in := range ins {
		in.r.Close()
	}
}

// checkNotIngested refuses inputs the manifest records as ingested.
// REQUIRES: the commit pipeline (Ingests are serialized by it).
func (db *DB) checkNotIngested(ins []*ingestInput) error {
	db.versionMu.Lock()
	defer db.versionMu.Unlock()
	for _, in := range ins {
		if db.versions.Ingested(in.id) {
			return fmt.Errorf("%w: ingest %s: already ingested (the manifest records its sieve.external.id)", ErrBadExternalTable, in.path)
		}
	}
	return nil
}

// flushForIngest flushes every memtable and waits for it. Ingest's
// sequence number must be above every write in a WAL that recovery would
// replay (it refuses a batch numbered below the manifest's last sequence
// number), and a key in a memtable would shadow the ingested table's.
// REQUIRES: the commit pipeline, so that no write arrives meanwhile.
func (db *DB) flushForIngest() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.bgErr != nil {
		return db.mu.bgErr
	}
	if !db.mu.mem.empty() {
		if err := db.rotateMemLocked(); err != nil {
			return err
		}
	}
	return db.waitFlushedLocked(math.MaxUint64)
}

// rewriteInputs copies each input into tables of the database directory
// (cut at TargetFileSize), every key a Set at seq, each table fsynced,
// then the directory. The level each is written for (its filter policy)
// is the one the current version gives; installIngest places them again.
func (db *DB) rewriteInputs(ctx context.Context, cf uint32, ins []*ingestInput, seq uint64) error {
	for _, in := range ins {
		if err := ctx.Err(); err != nil {
			abandonIngest(ins)
			return err
		}
		in.outs = &tableOutput{db: db, cf: cf, level: db.ingestLevelNow(cf, in)}
		in.exciseInto(in.outs, seq)
		if err := db.rewriteInput(in, seq); err != nil {
			abandonIngest(ins)
			if errors.Is(err, ErrCorruption) {
				return fmt.Errorf("%w: ingest %s: %w", ErrBadExternalTable, in.path, err)
			}
			return fmt.Errorf("sieve: ingest %s: %w", in.path, err)
		}
	}
	if err := db.fs.SyncDir(db.dirname); err != nil {
		abandonIngest(ins)
		return err
	}
	return nil
}

func abandonIngest(ins []*ingestInput) {
	for _, in := range ins {
		if in.outs != nil {
			in.outs.abandon()
		}
	}
}

func (db *DB) rewriteInput(in *ingestInput, seq uint64) error {
	it := in.r.NewIter(nil, nil)
	out := in.outs
	var n uint64
	var err error
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		if out.w == nil {
			if err = out.start(); err != nil {
				break
			}
		}
		k := it.Key()
		if err = out.add(base.MakeInternalKey(k.UserKey, seq, base.KindSet), it.Value()); err != nil {
			break
		}
		n++
		if int64(out.w.EstimatedSize()) >= db.opts.TargetFileSize {
			err = out.finish(false)
		}
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err == nil && out.w != nil {
		err = out.finish(true)
	}
	if err == nil && n != in.r.Properties().NumEntries {
		err = base.CorruptionErrorf("read %d entries, the properties say %d", n, in.r.Properties().NumEntries)
	}
	return err
}

// ingestLevelNow is the level the current version gives in.
func (db *DB) ingestLevelNow(cf uint32, in *ingestInput) int {
	v := db.versions.Current()
	defer v.Unref()
	lv := v.Levels(cf)
	if lv == nil {
		return 0
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	lo, hi := in.bounds()
	return db.ingestLevelLocked(cf, lv, lo, hi)
}

// ingestLevelLocked returns the lowest level into which a table of user
// keys [lo, hi] can go: every level from L0 down to it holds no table
// overlapping the range, and no running compaction writes an overlapping
// output into it. L0 when L0 overlaps (the table is then L0's newest).
// REQUIRES: db.mu held.
func (db *DB) ingestLevelLocked(cf uint32, lv *manifest.Levels, lo, hi []byte) int {
	level := 0
	for l := 0; l < manifest.NumLevels; l++ {
		if len(lv.Overlapping(l, lo, hi)) > 0 || db.compactionWritesLocked(cf, l, lo, hi) {
			break
		}
		level = l
	}
	return level
}

// compactionWritesLocked reports whether a running compaction of cf
// writes level with outputs that may overlap [lo, hi]. REQUIRES: db.mu.
func (db *DB) compactionWritesLocked(cf uint32, level int, lo, hi []byte) bool {
	for c, id := range db.compact.active {
		if id == cf && c.OutputLevel == level &&
			bytes.Compare(c.Smallest, hi) <= 0 && bytes.Compare(lo, c.Largest) <= 0 {
			return true
		}
	}
	return false
}

// installIngest places the rewritten (or, seq 0, copied) tables and
// records them, the inputs' IDs and seq in one manifest edit, publishing
// seq in the same step. New compactions are held back from choosing the
// version until the edit is in (one picked meanwhile could write into a
// level the tables take), and so are new snapshots (the copy path's
// tables must not appear under one).
func (db *DB) installIngest(cf uint32, ins []*ingestInput, seq uint64) error {
	db.mu.Lock()
	db.compact.ingesting = true
	db.mu.Unlock()
	defer func() {
		db.mu.Lock()
		db.compact.ingesting = false
		db.mu.cond.Broadcast()
		db.maybeScheduleCompactionLocked()
		db.mu.Unlock()
	}()
	db.versionMu.Lock()
	defer db.versionMu.Unlock()
	edit, stats, err := db.ingestEdit(cf, ins, seq)
	if err != nil {
		abandonIngest(ins)
		return err
	}
	// On an error the DB is read-only and the tables are left for the
	// next Open to delete if the edit did not make it.
	return db.logAndApplyLocked(edit, func() {
		if seq > 0 {
			db.visibleSeq.Store(seq)
		} else {
			db.mu.dataGen++ // keys at seq 0: open iterators must not refresh onto them
			db.metrics.ingest.copied.Add(1)
		}
		m := &db.metrics
		m.ingest.count.Add(1)
		m.ingest.tables.Add(int64(len(edit.NewFiles)))
		m.ingest.keys.Add(stats.keys)
		m.ingest.bytes.Add(stats.bytes)
		for _, nf := range edit.NewFiles {
			m.levelBytesIn[nf.Level].Add(int64(nf.Meta.Size))
		}
	})
}

type ingestStats struct{ keys, bytes int64 }

// ingestEdit builds the edit of an Ingest from the version it will apply
// to. REQUIRES: versionMu held.
func (db *DB) ingestEdit(cf uint32, ins []*ingestInput, seq uint64) (*manifest.VersionEdit, ingestStats, error) {
	var st ingestStats
	v := db.versions.Current()
	defer v.Unref()
	lv := v.Levels(cf)
	if lv == nil {
		return nil, st, fmt.Errorf("sieve: ingest: column family %d does not exist", cf)
	}
	edit := &manifest.VersionEdit{HasLastSeq: seq > 0, LastSeq: seq}
	db.mu.Lock()
	defer db.mu.Unlock()
	if seq == 0 && !db.copyAllowedLocked(cf, lv, ins) {
		return nil, st, errIngestOverlap
	}
	for _, in := range ins {
		lo, hi := in.bounds()
		level := db.ingestLevelLocked(cf, lv, lo, hi)
		for _, m := range in.outs.metas {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFile{CF: cf, Level: level, Meta: m})
			st.bytes += int64(m.Size)
		}
		edit.Ingested = append(edit.Ingested, in.id)
		st.keys += int64(in.r.Properties().NumEntries)
	}
	return edit, st, nil
}
