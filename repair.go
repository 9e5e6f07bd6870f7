package sieve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
)

// RepairReport says what Repair kept and what it set aside.
type RepairReport struct {
	// Manifest is the old manifest Repair read ("" when none), Records the
	// edits it could read, and ManifestDamage what stopped it ("" when it
	// read the manifest whole).
	Manifest       string
	Records        int
	ManifestDamage string
	// Tables are the tables kept, by file name, with their family and
	// level in the new manifest.
	Tables []RepairedTable
	// SetAside are the files moved to the lost/ folder, with why.
	SetAside []SetAsideFile
	// WAL is what the replay of the WALs into tables dropped.
	WAL WALRecoveryReport
	// LastSeq is the new manifest's last sequence number (at least every
	// kept entry's); NewManifest its file name.
	LastSeq     uint64
	NewManifest string
	// Compacted names the column families Repair compacted because the
	// tables it placed from their contents alone could shadow newer
	// versions of a key in the read order; Warnings what it could not do.
	Compacted []string
	Warnings  []string
}

// RepairedTable is a table Repair kept.
type RepairedTable struct {
	File    string
	CF      uint32
	Level   int
	Entries uint64
	// FromManifest is set when its family and level come from the old
	// manifest (otherwise: L0, family inferred).
	FromManifest bool
}

// SetAsideFile is a file Repair moved to lost/.
type SetAsideFile struct {
	File, To, Reason string
}

func (r *RepairReport) String() string {
	var b strings.Builder
	if r.Manifest == "" {
		fmt.Fprintf(&b, "old manifest: none readable (%s)\n", r.ManifestDamage)
	} else {
		fmt.Fprintf(&b, "old manifest: %s, %d edits read", r.Manifest, r.Records)
		if r.ManifestDamage != "" {
			fmt.Fprintf(&b, ", then damage: %s", r.ManifestDamage)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "kept %d tables:\n", len(r.Tables))
	for _, t := range r.Tables {
		src := "from the old manifest"
		if !t.FromManifest {
			src = "placed by repair"
		}
		fmt.Fprintf(&b, "  %s  cf %d  L%d  %d entries  (%s)\n", t.File, t.CF, t.Level, t.Entries, src)
	}
	fmt.Fprintf(&b, "%s\n", r.WAL.String())
	fmt.Fprintf(&b, "set aside %d files in %s/:\n", len(r.SetAside), LostDir)
	for _, s := range r.SetAside {
		fmt.Fprintf(&b, "  %s -> %s: %s\n", s.File, s.To, s.Reason)
	}
	for _, c := range r.Compacted {
		fmt.Fprintf(&b, "compacted column family %s to restore the read order\n", c)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	fmt.Fprintf(&b, "new manifest: %s, last sequence number %d\n", r.NewManifest, r.LastSeq)
	return b.String()
}

// Repair is RepairContext without a context.
func Repair(dir string, opts *Options) (*RepairReport, error) {
	return RepairContext(context.Background(), dir, opts)
}

// RepairContext rebuilds the manifest of the database in dir from the files
// it can read, as LevelDB's RepairDB does, so that a database Open refuses
// with ErrCorruption opens again. It never deletes a file it could not
// read: such files go to dir/lost/.
//
//   - The old manifest is read up to its first damage (CURRENT's, or the
//     highest-numbered one when CURRENT is damaged): its column families
//     (names, IDs, mergers) are kept, and so is the family and level of
//     each table it names.
//   - Every table is read whole and checked (sstable.Reader.Verify:
//     checksums, block structure, key order, properties); one that fails
//     goes to lost/. One that an edit read had removed goes there too (a
//     compaction's input left behind), so that old versions do not return.
//     A table the readable edits do not name goes to L0 of the family its
//     sieve.column.family property records (a family the edits do not
//     name is recreated as "recovered-ID"); a table written before tables
//     recorded their family goes to the default family when the readable
//     edits name no other, and to lost/ otherwise.
//   - The new manifest (synced, then its directory, then CURRENT the same
//     way) holds the kept tables, every family, and a last sequence number
//     at least every kept entry's. The damaged manifest goes to lost/.
//   - The WALs the old manifest does not mark obsolete are then replayed
//     and flushed into tables by Open with opts.WALRecovery, where the
//     default (tolerate-corrupted-tail) means skip-damaged for a repair:
//     damaged records are dropped, copies of damaged WALs kept in lost/.
//     Older WALs go to lost/.
//   - If a table placed in L0 from its contents alone could hide a newer
//     version of one of its keys in another table, its family is compacted
//     (which orders versions by sequence number); a family whose merger
//     opts does not supply cannot be, and a warning says so.
//
// What may be lost: the contents of damaged tables and damaged WAL records
// (synced writes included); a key deleted by a compaction whose manifest
// edit was lost may come back. ctx is checked between files; a cancelled
// repair before the new manifest leaves the database as it was, apart from
// the files already moved to lost/.
func RepairContext(ctx context.Context, dir string, opts *Options) (*RepairReport, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rp := &repairer{ctx: ctx, fs: o.FS, dir: dir, opts: o, rep: &RepairReport{}}
	lock, err := rp.fs.Lock(base.MakeFilename(dir, base.FileTypeLock, 0))
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("%w: %s: %v", ErrLocked, dir, err)
		}
		return nil, fmt.Errorf("sieve: repair: locking %s: %w", dir, err)
	}
	err = rp.rebuild()
	lock.Close()
	if err != nil {
		return rp.rep, err
	}
	if err := rp.replayWALs(); err != nil {
		return rp.rep, err
	}
	return rp.rep, nil
}

// repairer is one Repair's state.
type repairer struct {
	ctx     context.Context
	fs      vfs.FS
	dir     string
	opts    *Options
	rep     *RepairReport
	salv    *manifest.Salvaged
	names   []string
	kept    []manifest.NewFile
	maxNum  uint64
	maxSeq  uint64
	logs    []uint64
	inferOK map[uint32]bool // families with a table placed by repair
	placed  map[uint64]bool // tables placed by repair
}

// rebuild checks the tables and writes the new manifest.
func (rp *repairer) rebuild() error {
	names, err := rp.fs.List(rp.dir)
	if err != nil {
		return err
	}
	rp.names = names
	rp.salv = manifest.Salvage(rp.fs, rp.dir, names)
	rp.rep.Manifest, rp.rep.Records = rp.salv.Manifest, rp.salv.Records
	if rp.salv.Damage != nil {
		rp.rep.ManifestDamage = rp.salv.Damage.Error()
	}
	if len(rp.salv.CFs) == 0 {
		rp.salv.CFs[manifest.DefaultCFID] = manifest.ColumnFamily{ID: manifest.DefaultCFID, Name: manifest.DefaultCFName}
	}
	rp.inferOK, rp.placed = map[uint32]bool{}, map[uint64]bool{}
	for _, name := range names {
		if err := rp.ctx.Err(); err != nil {
			return err
		}
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		rp.maxNum = max(rp.maxNum, num)
		switch t {
		case base.FileTypeTable:
			err = rp.table(name, num)
		case base.FileTypeLog:
			err = rp.wal(name, num)
		}
		if err != nil {
			return err
		}
	}
	return rp.writeManifest()
}

func (rp *repairer) setAside(name, reason string) error {
	to, err := setAside(rp.fs, rp.dir, name, false)
	if err != nil {
		return err
	}
	rp.rep.SetAside = append(rp.rep.SetAside, SetAsideFile{File: name, To: to, Reason: reason})
	rp.opts.Logger.Warn("repair set a file aside", "file", name, "to", to, "reason", reason)
	return nil
}

// table checks one table and keeps it or sets it aside.
func (rp *repairer) table(name string, num uint64) error {
	meta, entries, cfProp, err := rp.checkTable(name, num)
	if err != nil {
		return rp.setAside(name, "unreadable: "+err.Error())
	}
	nf, known := rp.salv.Live[num]
	cfID, perr := strconv.ParseUint(cfProp, 10, 31)
	switch {
	case !known && rp.salv.Deleted[num]:
		return rp.setAside(name, "obsolete: a manifest edit removed it (a compaction's input left behind)")
	case !known && perr == nil:
		nf = manifest.NewFile{CF: uint32(cfID), Level: 0}
		if _, ok := rp.salv.CFs[nf.CF]; !ok {
			// A family the readable edits do not name: recreated under a
			// name of its own (its merger is unknown).
			rp.salv.CFs[nf.CF] = manifest.ColumnFamily{ID: nf.CF, Name: fmt.Sprintf("recovered-%d", nf.CF)}
			rp.salv.NextCFID = max(rp.salv.NextCFID, nf.CF+1)
		}
	case !known && (rp.salv.Records == 0 || len(rp.salv.CFs) > 1):
		return rp.setAside(name, "its column family is unknown (no readable manifest edit names it, and it was written before tables recorded their family)")
	case !known:
		nf = manifest.NewFile{CF: manifest.DefaultCFID, Level: 0}
	}
	if !known {
		rp.inferOK[nf.CF], rp.placed[num] = true, true
	}
	nf.Meta = meta
	rp.kept = append(rp.kept, nf)
	rp.maxSeq = max(rp.maxSeq, meta.LargestSeq)
	rp.rep.Tables = append(rp.rep.Tables, RepairedTable{File: name, CF: nf.CF, Level: nf.Level, Entries: entries, FromManifest: known})
	return nil
}

// checkTable opens and verifies a table and returns its metadata.
func (rp *repairer) checkTable(name string, num uint64) (m *manifest.FileMetadata, entries uint64, cf string, err error) {
	f, err := rp.fs.Open(base.MakeFilename(rp.dir, base.FileTypeTable, num))
	if err != nil {
		return nil, 0, "", err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, 0, "", err
	}
	r, err := sstable.NewReader(f, size, sstable.ReaderOptions{FileNum: num, Policies: rp.opts.policies()})
	if err != nil {
		f.Close()
		return nil, 0, "", err
	}
	defer r.Close()
	if err := r.Verify(); err != nil {
		return nil, 0, "", err
	}
	p := r.Properties()
	if p.NumEntries == 0 && r.RangeDels().Empty() {
		return nil, 0, "", errors.New("holds no entries")
	}
	m = &manifest.FileMetadata{FileNum: num, Size: uint64(size)}
	m.Smallest, m.Largest, m.SmallestSeq, m.LargestSeq = sstable.TableBounds(p, r.RangeDels())
	m.Smallest, m.Largest = m.Smallest.Clone(), m.Largest.Clone()
	return m, p.NumEntries, p.ColumnFamily, nil
}

// wal keeps a WAL for replay, or sets aside one the old manifest marks
// obsolete (its writes are in tables).
func (rp *repairer) wal(name string, num uint64) error {
	if rp.salv.Records > 0 && num < rp.salv.LogNum {
		return rp.setAside(name, "obsolete: older than the manifest's log number (its writes are in tables)")
	}
	rp.logs = append(rp.logs, num)
	return nil
}

// unordered reports the families where a table placed by repair could be
// read before an older table holding a newer version of one of its keys,
// or after a table holding an older one.
func (rp *repairer) unordered() []uint32 {
	byCF := map[uint32][]manifest.NewFile{}
	for _, nf := range rp.kept {
		byCF[nf.CF] = append(byCF[nf.CF], nf)
	}
	var out []uint32
	for cf, files := range byCF {
		if rp.inferOK[cf] && !readOrderSafe(files, rp.placed) {
			out = append(out, cf)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// readOrderSafe reports whether, for every two tables whose key ranges
// overlap, the one read first (lower level; in L0 the larger largest
// sequence number) holds only newer entries than the other.
func readOrderSafe(files []manifest.NewFile, placed map[uint64]bool) bool {
	first := func(a, b manifest.NewFile) bool {
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		if a.Meta.LargestSeq != b.Meta.LargestSeq {
			return a.Meta.LargestSeq > b.Meta.LargestSeq
		}
		return a.Meta.FileNum > b.Meta.FileNum
	}
	for i, a := range files {
		for _, b := range files[i+1:] {
			if !a.Meta.Overlaps(b.Meta.Smallest.UserKey, b.Meta.Largest.UserKey) {
				continue
			}
			if !placed[a.Meta.FileNum] && !placed[b.Meta.FileNum] {
				continue // both where the old manifest had them
			}
			x, y := a, b
			if !first(a, b) {
				x, y = b, a
			}
			if x.Meta.SmallestSeq <= y.Meta.LargestSeq && (x.Meta.LargestSeq > 0 || y.Meta.LargestSeq > 0) {
				return false
			}
		}
	}
	return true
}

// writeManifest sets the damaged manifest and CURRENT aside (copies: a
// readable prefix is still there to read) and writes the new manifest.
func (rp *repairer) writeManifest() error {
	if err := rp.ctx.Err(); err != nil {
		return err
	}
	salv := rp.salv
	if salv.Manifest != "" && !salv.Complete {
		if err := rp.keepCopy(salv.Manifest, "damaged manifest: "+rp.rep.ManifestDamage); err != nil {
			return err
		}
	}
	if salv.Manifest == "" || !salv.Complete {
		for _, n := range rp.names {
			if t, _, ok := base.ParseFilename(n); ok && t == base.FileTypeCurrent {
				if err := rp.keepCopy(n, "CURRENT replaced by repair"); err != nil {
					return err
				}
			}
		}
	}
	num := max(rp.maxNum, salv.NextFile) + 1
	rp.rep.LastSeq = max(salv.LastSeq, rp.maxSeq)
	snap := &manifest.VersionEdit{HasLogNum: true, HasNextFileNum: true, NextFileNum: num + 2,
		HasLastSeq: true, LastSeq: rp.rep.LastSeq, NewFiles: rp.kept}
	if len(rp.logs) > 0 {
		snap.LogNum = rp.logs[0]
	}
	for _, cf := range salv.CFs {
		snap.AddedCFs = append(snap.AddedCFs, cf)
	}
	sort.Slice(snap.AddedCFs, func(i, j int) bool { return snap.AddedCFs[i].ID < snap.AddedCFs[j].ID })
	snap.RaiseNextCFID(salv.NextCFID)
	seen := map[string]bool{}
	for _, id := range salv.Ingested {
		if !seen[string(id)] {
			seen[string(id)] = true
			snap.Ingested = append(snap.Ingested, id)
		}
	}
	if err := manifest.WriteCheckpointManifest(rp.fs, rp.dir, num, snap); err != nil {
		return fmt.Errorf("sieve: repair: writing the new manifest: %w", err)
	}
	rp.rep.NewManifest = base.FileName(base.FileTypeManifest, num)
	rp.opts.Logger.Warn("repair wrote a new manifest", "manifest", rp.rep.NewManifest, "tables", len(rp.kept), "last_seq", rp.rep.LastSeq)
	return nil
}

// keepCopy puts a copy of name in lost/ and reports it.
func (rp *repairer) keepCopy(name, reason string) error {
	to, err := setAside(rp.fs, rp.dir, name, true)
	if err != nil {
		return err
	}
	rp.rep.SetAside = append(rp.rep.SetAside, SetAsideFile{File: name, To: to, Reason: reason + " (a copy; the original is replaced)"})
	return nil
}

// replayWALs opens the repaired database, which replays the WALs, flushes
// them into tables, compacts the families whose read order repair could
// not vouch for, and closes it.
func (rp *repairer) replayWALs() error {
	o := *rp.opts
	if o.WALRecovery == WALRecoveryTolerateCorruptedTail {
		o.WALRecovery = WALRecoverySkipDamaged
	}
	o.ErrorIfExists, o.ReadOnly = false, false
	db, err := Open(rp.dir, &o)
	if err != nil {
		return fmt.Errorf("sieve: repair: opening the repaired database: %w", err)
	}
	rp.rep.WAL = db.walRecovery
	err = db.Flush()
	for _, cf := range rp.unordered() {
		if err != nil {
			break
		}
		if err = rp.ctx.Err(); err != nil {
			break
		}
		name := rp.salv.CFs[cf].Name
		if !db.compactable(cf) {
			rp.rep.Warnings = append(rp.rep.Warnings, fmt.Sprintf("column family %q needs compacting (its merger %q was not supplied): until then a read may find an older version of a key", name, rp.salv.CFs[cf].Merger))
			continue
		}
		if err = db.compactCF(cf, nil, nil); err == nil {
			rp.rep.Compacted = append(rp.rep.Compacted, name)
		}
	}
	return errors.Join(err, db.Close())
}
