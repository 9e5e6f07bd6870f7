package manifest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/sievedb/sieve/wal"
)

// DefaultCFID and DefaultCFName identify the default column family, which
// every database has.
const (
	DefaultCFID   = 0
	DefaultCFName = "default"
)

// maxManifestSize is the size past which LogAndApply starts a new manifest
// holding a snapshot of the current state.
const maxManifestSize = 64 << 20

// VersionSet is the durable record of the database's shape.
type VersionSet struct {
	fs      vfs.FS
	dirname string

	mu      sync.Mutex // protects current
	current *Version

	// nextFileNum is the next file number to hand out. NextFileNum may be
	// called by any goroutine at any time (a WAL rotation under the DB's
	// mutex, a compaction output): an edit records the counter as it was
	// when the edit was written, and a file numbered at or above it that
	// a crash leaves behind is found by the directory scan at Open
	// (MarkFileNumUsed) and deleted as an orphan.
	nextFileNum atomic.Uint64

	// Fields below are owned by the LogAndApply caller (serialized).
	logNum    uint64
	lastSeq   uint64
	sealedLog uint64
	cfs       map[uint32]ColumnFamily
	// ingested holds the IDs of every external table ingested (tag 11).
	ingested map[string]bool
	// nextCFID is the lowest column family ID never used (see
	// VersionEdit.NextCFID).
	nextCFID uint32

	manifestNum  uint64
	manifestFile vfs.File
	manifest     *wal.Writer
	readOnly     bool

	onObsolete func([]*FileMetadata)
}

// Options configure a VersionSet.
type Options struct {
	// OnObsolete is called with the tables no version references any more.
	OnObsolete func([]*FileMetadata)
	// ReadOnly loads the manifest without writing a new one.
	ReadOnly bool
}

// Exists reports whether dirname holds a database (a CURRENT file).
func Exists(fs vfs.FS, dirname string) (bool, error) {
	_, err := fs.Stat(base.MakeFilename(dirname, base.FileTypeCurrent, 0))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// FirstLogNum is the number a new database reserves for its first WAL: its
// first manifest names it as the log number (so that from the start the
// manifest names a WAL that must exist, see FORMAT.md), and the manifest
// itself takes the next number.
const FirstLogNum = 1

// Create initializes a new database's manifest with the default column
// family and FirstLogNum as the log number.
func Create(fs vfs.FS, dirname string, o Options) (*VersionSet, error) {
	vs := newVersionSet(fs, dirname, o)
	vs.logNum = FirstLogNum
	vs.nextFileNum.Store(FirstLogNum + 1)
	vs.cfs[DefaultCFID] = ColumnFamily{ID: DefaultCFID, Name: DefaultCFName}
	vs.nextCFID = DefaultCFID + 1
	vs.current = &Version{CFs: map[uint32]*Levels{DefaultCFID: {}}, onZero: vs.onObsolete}
	vs.current.Ref()
	if err := vs.rotate(); err != nil {
		return nil, err
	}
	return vs, nil
}

func newVersionSet(fs vfs.FS, dirname string, o Options) *VersionSet {
	return &VersionSet{fs: fs, dirname: dirname, cfs: map[uint32]ColumnFamily{},
		onObsolete: o.OnObsolete, readOnly: o.ReadOnly}
}

// Load reads CURRENT and replays the manifest it names. It writes nothing:
// before the first LogAndApply the caller (unless read-only) calls Rotate,
// after checking the loaded state against the directory, so that a
// manifest found inconsistent is left as it was found.
func Load(fs vfs.FS, dirname string, o Options) (*VersionSet, error) {
	vs := newVersionSet(fs, dirname, o)
	num, err := readCurrent(fs, dirname)
	if err != nil {
		return nil, err
	}
	if err := vs.replay(num); err != nil {
		return nil, err
	}
	return vs, nil
}

// Rotate starts a new manifest holding a snapshot of the current state,
// points CURRENT at it and removes the previous one. REQUIRES: not
// read-only; serialized with LogAndApply.
func (vs *VersionSet) Rotate() error {
	if vs.readOnly {
		return errors.New("sieve: manifest is read-only")
	}
	return vs.rotate()
}

func (vs *VersionSet) replay(num uint64) error {
	name := base.MakeFilename(vs.dirname, base.FileTypeManifest, num)
	f, err := vs.fs.Open(name)
	if err != nil {
		return fmt.Errorf("sieve: opening manifest named by CURRENT: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return err
	}
	r := wal.NewReader(f, size, num)
	v := &Version{CFs: map[uint32]*Levels{}, onZero: vs.onObsolete}
	first := true
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("manifest %s: %w", name, err)
		}
		var e VersionEdit
		if err := e.Decode(rec); err != nil {
			return fmt.Errorf("manifest %s at offset %d: %w", name, r.Offset(), err)
		}
		if first && !(e.HasNextFileNum && len(e.AddedCFs) > 0) {
			return base.CorruptionErrorf("manifest %s: first edit is not a snapshot", name)
		}
		first = false
		vs.applyScalars(&e)
		nv, err := v.Apply(&e, vs.onObsolete)
		if err != nil {
			return fmt.Errorf("manifest %s at offset %d: %w", name, r.Offset(), err)
		}
		// Intermediate versions are never referenced; drop the file
		// references they took without reporting obsolete files.
		if v != nil {
			v.releaseSilently()
		}
		v = nv
	}
	if first {
		return base.CorruptionErrorf("manifest %s: no edits", name)
	}
	if _, ok := vs.cfs[DefaultCFID]; !ok {
		return base.CorruptionErrorf("manifest %s: no default column family", name)
	}
	for _, lv := range v.CFs {
		for _, files := range lv {
			for _, f := range files {
				if f.FileNum >= vs.nextFileNum.Load() {
					return base.CorruptionErrorf("manifest %s: table %s >= next file number %d", name, base.FileName(base.FileTypeTable, f.FileNum), vs.nextFileNum.Load())
				}
			}
		}
	}
	if vs.logNum >= vs.nextFileNum.Load() && vs.logNum != 0 {
		return base.CorruptionErrorf("manifest %s: WAL %s >= next file number %d", name, base.FileName(base.FileTypeLog, vs.logNum), vs.nextFileNum.Load())
	}
	v.Ref()
	vs.current = v
	vs.manifestNum = num
	vs.MarkFileNumUsed(num)
	return nil
}

// releaseSilently drops the file references of a version that was never
// published.
func (v *Version) releaseSilently() {
	for _, lv := range v.CFs {
		for _, files := range lv {
			for _, f := range files {
				f.Unref()
			}
		}
	}
}

func (vs *VersionSet) applyScalars(e *VersionEdit) {
	if e.HasLogNum {
		vs.logNum = e.LogNum
	}
	if e.HasNextFileNum && e.NextFileNum > 0 {
		// Only ever raised: numbers handed out since the edit was
		// written stay handed out.
		vs.MarkFileNumUsed(e.NextFileNum - 1)
	}
	if e.HasLastSeq {
		vs.lastSeq = e.LastSeq
	}
	if e.HasSealedLog {
		vs.sealedLog = e.SealedLog
	}
	for _, id := range e.Ingested {
		if vs.ingested == nil {
			vs.ingested = map[string]bool{}
		}
		vs.ingested[string(id)] = true
	}
	e.ApplyColumnFamilies(vs.cfs)
	if n := e.RaiseNextCFID(vs.nextCFID); n != vs.nextCFID {
		vs.nextCFID = n // written only by the edits that add families
	}
}

// snapshotEdit describes the whole current state as one edit.
func (vs *VersionSet) snapshotEdit() *VersionEdit {
	e := &VersionEdit{HasLogNum: true, LogNum: vs.logNum, HasNextFileNum: true, NextFileNum: vs.nextFileNum.Load(),
		HasLastSeq: true, LastSeq: vs.lastSeq, HasSealedLog: vs.sealedLog != 0, SealedLog: vs.sealedLog}
	var implied uint32
	for _, cf := range vs.cfs {
		e.AddedCFs = append(e.AddedCFs, cf)
		implied = max(implied, cf.ID+1)
	}
	if vs.nextCFID > implied {
		e.HasNextCFID, e.NextCFID = true, vs.nextCFID
	}
	for id := range vs.ingested {
		e.Ingested = append(e.Ingested, []byte(id))
	}
	for id, lv := range vs.current.CFs {
		for level, files := range lv {
			for _, f := range files {
				e.NewFiles = append(e.NewFiles, NewFile{CF: id, Level: level, Meta: f})
			}
		}
	}
	return e
}

// rotate starts a new manifest holding a snapshot of the current state and
// points CURRENT at it, then removes the previous manifest.
func (vs *VersionSet) rotate() error {
	num := vs.NextFileNum()
	name := base.MakeFilename(vs.dirname, base.FileTypeManifest, num)
	w, f, err := createManifest(vs.fs, name, num, vs.snapshotEdit())
	if err != nil {
		return err
	}
	fail := func(err error) error {
		w.Close()
		f.Close()
		vs.fs.Remove(name)
		return err
	}
	if err := vs.fs.SyncDir(vs.dirname); err != nil {
		return fail(err)
	}
	if renamed, err := setCurrent(vs.fs, vs.dirname, num, vs.NextFileNum()); err != nil {
		if renamed {
			// Only the directory sync failed: CURRENT names the new
			// manifest now (and may after a crash), so keep it.
			w.Close()
			f.Close()
			return err
		}
		return fail(err)
	}
	old, oldFile, oldNum := vs.manifest, vs.manifestFile, vs.manifestNum
	vs.manifest, vs.manifestFile, vs.manifestNum = w, f, num
	if old != nil {
		old.Close()
		oldFile.Close()
	}
	if oldNum != 0 && oldNum != num {
		// Best effort: an old manifest left behind is removed at the next
		// open's obsolete-file scan.
		if err := vs.fs.Remove(base.MakeFilename(vs.dirname, base.FileTypeManifest, oldNum)); err == nil {
			vs.fs.SyncDir(vs.dirname)
		}
	}
	return nil
}

// createManifest creates manifest num at name holding the snapshot edit
// snap, synced (not its directory), and returns it open for appending.
// On error it removes what it created.
func createManifest(fs vfs.FS, name string, num uint64, snap *VersionEdit) (*wal.Writer, vfs.File, error) {
	f, err := fs.Create(name)
	if err != nil {
		return nil, nil, err
	}
	w, err := wal.NewWriter(f, num)
	if err != nil {
		f.Close()
		fs.Remove(name)
		return nil, nil, err
	}
	if _, err = w.WriteRecord(snap.Encode(nil)); err == nil {
		err = w.Sync()
	}
	if err != nil {
		w.Close()
		f.Close()
		fs.Remove(name)
		return nil, nil, err
	}
	return w, f, nil
}

// SnapshotForCheckpoint returns the current version, with a reference the
// caller drops with Unref, and one edit describing the whole state (as the
// first record of a new manifest). REQUIRES: serialized with LogAndApply.
func (vs *VersionSet) SnapshotForCheckpoint() (*Version, *VersionEdit) {
	return vs.Current(), vs.snapshotEdit()
}

// WriteCheckpointManifest writes, in another directory dirname, manifest
// num holding only the snapshot edit snap, syncs it and its directory, and
// points dirname's CURRENT at it (synced too). snap's next file number is
// raised past num.
func WriteCheckpointManifest(fs vfs.FS, dirname string, num uint64, snap *VersionEdit) error {
	snap.HasNextFileNum, snap.NextFileNum = true, max(snap.NextFileNum, num+2)
	w, f, err := createManifest(fs, base.MakeFilename(dirname, base.FileTypeManifest, num), num, snap)
	if err != nil {
		return err
	}
	err = errors.Join(w.Close(), f.Close())
	if err == nil {
		err = fs.SyncDir(dirname)
	}
	if err != nil {
		return err
	}
	_, err = setCurrent(fs, dirname, num, num+1)
	return err
}

// currentVersion is the format version of the CURRENT file; see FORMAT.md.
const currentVersion = "v1"

// setCurrent atomically replaces CURRENT with one naming manifest num, by
// writing a temporary file, syncing it, renaming it over CURRENT and syncing
// the directory. renamed reports whether the rename was done (the error is
// then the directory sync's).
func setCurrent(fs vfs.FS, dirname string, num, tmpNum uint64) (renamed bool, err error) {
	body := fmt.Sprintf("%s %s", currentVersion, base.FileName(base.FileTypeManifest, num))
	content := fmt.Sprintf("%s %016x\n", body, xxhash.Sum64String(body))
	tmp := base.MakeFilename(dirname, base.FileTypeTemp, tmpNum)
	f, err := fs.Create(tmp)
	if err != nil {
		return false, err
	}
	if _, err := f.Write([]byte(content)); err != nil {
		f.Close()
		fs.Remove(tmp)
		return false, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		fs.Remove(tmp)
		return false, err
	}
	if err := f.Close(); err != nil {
		fs.Remove(tmp)
		return false, err
	}
	if err := fs.Rename(tmp, base.MakeFilename(dirname, base.FileTypeCurrent, 0)); err != nil {
		fs.Remove(tmp)
		return false, err
	}
	return true, fs.SyncDir(dirname)
}

// readCurrent returns the manifest number CURRENT names.
func readCurrent(fs vfs.FS, dirname string) (uint64, error) {
	name := base.MakeFilename(dirname, base.FileTypeCurrent, 0)
	f, err := fs.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, err
	}
	if size > 256 {
		return 0, base.CorruptionErrorf("%s: %d bytes, too long", name, size)
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return 0, err
	}
	s, ok := strings.CutSuffix(string(buf), "\n")
	fields := strings.Fields(s)
	if !ok || len(fields) != 3 || fields[0] != currentVersion {
		return 0, base.CorruptionErrorf("%s: malformed content %q", name, buf)
	}
	body := fields[0] + " " + fields[1]
	if fmt.Sprintf("%016x", xxhash.Sum64String(body)) != fields[2] {
		return 0, base.CorruptionErrorf("%s: checksum mismatch in %q", name, buf)
	}
	t, num, ok := base.ParseFilename(fields[1])
	if !ok || t != base.FileTypeManifest {
		return 0, base.CorruptionErrorf("%s: %q is not a manifest name", name, fields[1])
	}
	return num, nil
}

// Current returns the current version with a reference the caller must
// drop with Unref.
func (vs *VersionSet) Current() *Version {
	vs.mu.Lock()
	v := vs.current
	v.Ref()
	vs.mu.Unlock()
	return v
}

// NextFileNum allocates a file number. Safe for concurrent use, with
// LogAndApply too.
func (vs *VersionSet) NextFileNum() uint64 { return vs.nextFileNum.Add(1) - 1 }

// PeekNextFileNum returns the next number NextFileNum would hand out.
func (vs *VersionSet) PeekNextFileNum() uint64 { return vs.nextFileNum.Load() }

// MarkFileNumUsed makes sure num is never handed out again.
func (vs *VersionSet) MarkFileNumUsed(num uint64) {
	for {
		n := vs.nextFileNum.Load()
		if n > num || vs.nextFileNum.CompareAndSwap(n, num+1) {
			return
		}
	}
}

// LogNum returns the oldest WAL that may hold unflushed data.
func (vs *VersionSet) LogNum() uint64 { return vs.logNum }

// SealedLog returns the WAL that the last clean close sealed (0: none).
func (vs *VersionSet) SealedLog() uint64 { return vs.sealedLog }

// LastSeq returns the last sequence number recorded in the manifest.
func (vs *VersionSet) LastSeq() uint64 { return vs.lastSeq }

// Ingested reports whether an external table with this ID was ingested.
// REQUIRES: serialized with LogAndApply, as the other accessors.
func (vs *VersionSet) Ingested(id []byte) bool { return vs.ingested[string(id)] }

// ManifestNum returns the number of the live manifest.
func (vs *VersionSet) ManifestNum() uint64 { return vs.manifestNum }

// Writable reports whether LogAndApply may be called: the set was created,
// or loaded and rotated.
func (vs *VersionSet) Writable() bool { return vs.manifest != nil }

// NextCFID returns the lowest column family ID never used: a new family
// takes it, so that a dropped family's ID is never reused.
func (vs *VersionSet) NextCFID() uint32 { return vs.nextCFID }

// ColumnFamilies returns the recorded column families.
func (vs *VersionSet) ColumnFamilies() map[uint32]ColumnFamily {
	out := make(map[uint32]ColumnFamily, len(vs.cfs))
	for k, v := range vs.cfs {
		out[k] = v
	}
	return out
}

// LogAndApply durably records e in the manifest and installs the version
// it produces. NextFileNum is filled in from the set; LastSeq only when the
// caller set it. On error nothing is installed, and the caller must treat
// the manifest as failed (no retry: the DB goes read-only); an error from
// starting a new manifest once this one is full comes after the install.
//
// publish is called once the edit is durable with a function that makes
// the new version current; publish must call it exactly once, under
// whatever lock makes the change one atomic step for the caller's readers
// (the DB retires a flushed memtable in the same step).
// REQUIRES: calls are serialized; not read-only.
func (vs *VersionSet) LogAndApply(e *VersionEdit, publish func(install func())) error {
	if vs.readOnly {
		return errors.New("sieve: manifest is read-only")
	}
	if vs.manifest == nil {
		return errors.New("sieve: manifest: LogAndApply before Rotate")
	}
	if e.HasLastSeq && e.LastSeq < vs.lastSeq {
		e.LastSeq = vs.lastSeq
	}
	e.HasNextFileNum, e.NextFileNum = true, vs.nextFileNum.Load()
	nv, err := vs.current.Apply(e, vs.onObsolete)
	if err != nil {
		return err
	}
	if _, err := vs.manifest.WriteRecord(e.Encode(nil)); err != nil {
		nv.releaseSilently()
		return err
	}
	if err := vs.manifest.Sync(); err != nil {
		nv.releaseSilently()
		return err
	}
	vs.applyScalars(e)
	nv.Ref()
	install := func() {
		vs.mu.Lock()
		old := vs.current
		vs.current = nv
		vs.mu.Unlock()
		old.Unref()
	}
	publish(install)
	if vs.manifest.Size() > maxManifestSize {
		return vs.rotate()
	}
	return nil
}

// Close closes the manifest file and drops the set's reference to the
// current version.
func (vs *VersionSet) Close() error {
	var err error
	if vs.manifest != nil {
		err = vs.manifest.Close()
		if cerr := vs.manifestFile.Close(); err == nil {
			err = cerr
		}
		vs.manifest = nil
	}
	return err
}
