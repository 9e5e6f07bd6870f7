package manifest

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/sievedb/sieve/internal/base"
)

// EditFormatVersion is the first byte of every encoded VersionEdit.
//
//	1: initial format (this file's tags).
const EditFormatVersion = 1

// Field tags of an encoded VersionEdit. Numbers are part of the format;
// never reuse one.
const (
	tagLogNum       = 1
	tagNextFileNum  = 2
	tagLastSeq      = 3
	tagDeletedFile  = 4
	tagNewFile      = 5
	tagAddCF        = 6
	tagDropCF       = 7
	tagSetCFMerger  = 8
	tagMinUnflushed = 9 // reserved, never written
	tagSealedLog    = 10
	tagIngested     = 11
	tagNextCFID     = 12
)

// maxIngestedID bounds the length of an ingested table's ID.
const maxIngestedID = 64

// NumLevels is the number of LSM levels: L0 (overlapping tables, newest
// first) and L1..L6 (each sorted and non-overlapping).
const NumLevels = 7

// DeletedFile names a table removed from a level of a column family.
type DeletedFile struct {
	CF      uint32
	Level   int
	FileNum uint64
}

// NewFile is a table added to a level of a column family.
type NewFile struct {
	CF    uint32
	Level int
	Meta  *FileMetadata
}

// ColumnFamily describes a column family in the manifest.
type ColumnFamily struct {
	ID     uint32
	Name   string
	Merger string // name of the merger; "" when none
}

// VersionEdit is one record of the manifest log: the difference between a
// version and the next. Zero-valued scalar fields are "unchanged", except
// where the matching Has* flag is set.
type VersionEdit struct {
	HasLogNum bool
	// LogNum is the number of the oldest WAL that may hold data not yet
	// in a table; older WALs are obsolete.
	LogNum         uint64
	HasNextFileNum bool
	NextFileNum    uint64
	HasLastSeq     bool
	LastSeq        uint64
	// HasSealedLog records that a clean close ended WAL SealedLog with its
	// end-of-log trailer: from then on that WAL must read as sealed.
	HasSealedLog bool
	SealedLog    uint64
	// HasNextCFID records NextCFID, the lowest column family ID never
	// used: IDs of dropped families are not handed out again (their
	// records may still be in a WAL). Written by a drop's edit and by
	// snapshot edits where it is above every live family's ID + 1.
	HasNextCFID bool
	NextCFID    uint32

	DeletedFiles []DeletedFile
	NewFiles     []NewFile
	AddedCFs     []ColumnFamily
	DroppedCFs   []uint32
	SetMergers   []ColumnFamily // ID and Merger used
	// Ingested are the IDs of the external tables an Ingest added (their
	// sieve.external.id property): the manifest remembers every one, so
	// that the same table is not ingested twice.
	Ingested [][]byte
}

// ApplyColumnFamilies applies e's column-family changes to cfs (keyed by
// ID), as recovery does: the families it adds, then those it drops, then
// the mergers it sets.
func (e *VersionEdit) ApplyColumnFamilies(cfs map[uint32]ColumnFamily) {
	for _, cf := range e.AddedCFs {
		cfs[cf.ID] = cf
	}
	for _, id := range e.DroppedCFs {
		delete(cfs, id)
	}
	for _, cf := range e.SetMergers {
		c := cfs[cf.ID]
		c.Merger = cf.Merger
		cfs[cf.ID] = c
	}
}

// RaiseNextCFID returns nextID raised past every column family ID e adds
// and to e's NextCFID.
func (e *VersionEdit) RaiseNextCFID(nextID uint32) uint32 {
	if e.HasNextCFID {
		nextID = max(nextID, e.NextCFID)
	}
	for _, cf := range e.AddedCFs {
		nextID = max(nextID, cf.ID+1)
	}
	return nextID
}

// Encode appends the edit's encoding to dst. See FORMAT.md.
func (e *VersionEdit) Encode(dst []byte) []byte {
	dst = append(dst, EditFormatVersion)
	field := func(tag uint64, payload []byte) {
		dst = binary.AppendUvarint(dst, tag)
		dst = binary.AppendUvarint(dst, uint64(len(payload)))
		dst = append(dst, payload...)
	}
	var p []byte
	if e.HasLogNum {
		field(tagLogNum, binary.AppendUvarint(p[:0], e.LogNum))
	}
	if e.HasNextFileNum {
		field(tagNextFileNum, binary.AppendUvarint(p[:0], e.NextFileNum))
	}
	if e.HasLastSeq {
		field(tagLastSeq, binary.AppendUvarint(p[:0], e.LastSeq))
	}
	if e.HasSealedLog {
		field(tagSealedLog, binary.AppendUvarint(p[:0], e.SealedLog))
	}
	if e.HasNextCFID {
		field(tagNextCFID, binary.AppendUvarint(p[:0], uint64(e.NextCFID)))
	}
	for _, cf := range e.AddedCFs {
		p = binary.AppendUvarint(p[:0], uint64(cf.ID))
		p = appendBytes(p, []byte(cf.Name))
		p = appendBytes(p, []byte(cf.Merger))
		field(tagAddCF, p)
	}
	for _, id := range e.DroppedCFs {
		field(tagDropCF, binary.AppendUvarint(p[:0], uint64(id)))
	}
	for _, cf := range e.SetMergers {
		p = binary.AppendUvarint(p[:0], uint64(cf.ID))
		p = appendBytes(p, []byte(cf.Merger))
		field(tagSetCFMerger, p)
	}
	for _, id := range e.Ingested {
		field(tagIngested, appendBytes(p[:0], id))
	}
	for _, d := range e.DeletedFiles {
		p = binary.AppendUvarint(p[:0], uint64(d.CF))
		p = binary.AppendUvarint(p, uint64(d.Level))
		p = binary.AppendUvarint(p, d.FileNum)
		field(tagDeletedFile, p)
	}
	for _, n := range e.NewFiles {
		m := n.Meta
		p = binary.AppendUvarint(p[:0], uint64(n.CF))
		p = binary.AppendUvarint(p, uint64(n.Level))
		p = binary.AppendUvarint(p, m.FileNum)
		p = binary.AppendUvarint(p, m.Size)
		p = appendBytes(p, m.Smallest.AppendEncoded(nil))
		p = appendBytes(p, m.Largest.AppendEncoded(nil))
		p = binary.AppendUvarint(p, m.SmallestSeq)
		p = binary.AppendUvarint(p, m.LargestSeq)
		field(tagNewFile, p)
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// decoder reads a version edit's fields; the caller wraps its error as
// "version edit: ...".
type decoder struct{ base.Decoder }

func (d *decoder) uvarint() uint64 { return d.Uvarint() }

func (d *decoder) bytes() []byte { return d.Bytes() }

func (d *decoder) level() int {
	l := d.uvarint()
	if d.Err == nil && l >= NumLevels {
		d.Failf("level %d out of range", l)
	}
	return int(l)
}

func (d *decoder) cf() uint32 {
	v := d.uvarint()
	if d.Err == nil && v > 1<<31 {
		d.Failf("column family id %d out of range", v)
	}
	return uint32(v)
}

func (d *decoder) ikey() base.InternalKey {
	b := d.bytes()
	if d.Err != nil {
		return base.InternalKey{}
	}
	k, ok := base.DecodeInternalKey(b)
	if !ok {
		d.Failf("bad internal key %x", b)
	}
	return base.InternalKey{UserKey: append([]byte(nil), k.UserKey...), Trailer: k.Trailer}
}

// Decode parses an encoded edit. Every failure wraps base.ErrCorruption.
func (e *VersionEdit) Decode(b []byte) error {
	*e = VersionEdit{}
	if len(b) == 0 {
		return base.CorruptionErrorf("version edit: empty")
	}
	if b[0] != EditFormatVersion {
		return base.CorruptionErrorf("version edit: unknown format version %d", b[0])
	}
	d := &decoder{base.Decoder{B: b[1:]}}
	for len(d.B) > 0 && d.Err == nil {
		tag := d.uvarint()
		payload := d.bytes()
		if d.Err != nil {
			break
		}
		f := &decoder{base.Decoder{B: payload}}
		switch tag {
		case tagLogNum:
			e.HasLogNum, e.LogNum = true, f.uvarint()
		case tagNextFileNum:
			e.HasNextFileNum, e.NextFileNum = true, f.uvarint()
		case tagLastSeq:
			e.HasLastSeq, e.LastSeq = true, f.uvarint()
			if f.Err == nil && e.LastSeq > base.SeqNumMax {
				f.Err = fmt.Errorf("last seq %d out of range", e.LastSeq)
			}
		case tagSealedLog:
			e.HasSealedLog, e.SealedLog = true, f.uvarint()
		case tagNextCFID:
			e.HasNextCFID, e.NextCFID = true, f.cf()
		case tagAddCF:
			cf := ColumnFamily{ID: f.cf()}
			cf.Name = string(f.bytes())
			cf.Merger = string(f.bytes())
			e.AddedCFs = append(e.AddedCFs, cf)
		case tagDropCF:
			e.DroppedCFs = append(e.DroppedCFs, f.cf())
		case tagSetCFMerger:
			cf := ColumnFamily{ID: f.cf()}
			cf.Merger = string(f.bytes())
			e.SetMergers = append(e.SetMergers, cf)
		case tagIngested:
			id := append([]byte{}, f.bytes()...)
			if f.Err == nil && (len(id) == 0 || len(id) > maxIngestedID) {
				f.Failf("ingested table id of %d bytes", len(id))
			}
			e.Ingested = append(e.Ingested, id)
		case tagDeletedFile:
			df := DeletedFile{CF: f.cf(), Level: f.level()}
			df.FileNum = f.uvarint()
			e.DeletedFiles = append(e.DeletedFiles, df)
		case tagNewFile:
			nf := NewFile{CF: f.cf(), Level: f.level(), Meta: &FileMetadata{}}
			m := nf.Meta
			m.FileNum = f.uvarint()
			m.Size = f.uvarint()
			m.Smallest = f.ikey()
			m.Largest = f.ikey()
			m.SmallestSeq = f.uvarint()
			m.LargestSeq = f.uvarint()
			if f.Err == nil {
				f.Err = m.validate()
			}
			e.NewFiles = append(e.NewFiles, nf)
		default:
			return base.CorruptionErrorf("version edit: unknown tag %d", tag)
		}
		if f.Err == nil && len(f.B) != 0 {
			f.Err = fmt.Errorf("%d trailing bytes", len(f.B))
		}
		if f.Err != nil {
			return base.CorruptionErrorf("version edit: field %d: %v", tag, f.Err)
		}
	}
	if d.Err != nil {
		return base.CorruptionErrorf("version edit: %v", d.Err)
	}
	return nil
}

// String renders the edit for tests and logs.
func (e *VersionEdit) String() string {
	s := ""
	if e.HasLogNum {
		s += fmt.Sprintf("log-num %d\n", e.LogNum)
	}
	if e.HasNextFileNum {
		s += fmt.Sprintf("next-file-num %d\n", e.NextFileNum)
	}
	if e.HasLastSeq {
		s += fmt.Sprintf("last-seq %d\n", e.LastSeq)
	}
	if e.HasSealedLog {
		s += fmt.Sprintf("sealed-log %d\n", e.SealedLog)
	}
	if e.HasNextCFID {
		s += fmt.Sprintf("next-cf-id %d\n", e.NextCFID)
	}
	for _, cf := range e.AddedCFs {
		s += fmt.Sprintf("add-cf %d %q merger=%q\n", cf.ID, cf.Name, cf.Merger)
	}
	for _, id := range e.DroppedCFs {
		s += fmt.Sprintf("drop-cf %d\n", id)
	}
	for _, cf := range e.SetMergers {
		s += fmt.Sprintf("set-merger %d %q\n", cf.ID, cf.Merger)
	}
	for _, id := range e.Ingested {
		s += fmt.Sprintf("ingested %x\n", id)
	}
	del := append([]DeletedFile(nil), e.DeletedFiles...)
	sort.Slice(del, func(i, j int) bool { return del[i].FileNum < del[j].FileNum })
	for _, d := range del {
		s += fmt.Sprintf("del cf=%d L%d %06d\n", d.CF, d.Level, d.FileNum)
	}
	for _, n := range e.NewFiles {
		s += fmt.Sprintf("add cf=%d L%d %s\n", n.CF, n.Level, n.Meta)
	}
	return s
}
