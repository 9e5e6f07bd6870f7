package manifest

import (
	"fmt"
	"io"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/sievedb/sieve/wal"
)

// Salvaged is what Salvage could read of a database's manifest, for a
// repair: the edits before the first damage, applied.
type Salvaged struct {
	// Manifest is the file read ("" when none could be opened); Records
	// the edits applied; Damage the error that stopped the reading (nil
	// when the manifest was read to its end).
	Manifest string
	Records  int
	Damage   error
	// Complete is set when the manifest was read whole and CURRENT named
	// it.
	Complete bool

	CFs      map[uint32]ColumnFamily
	NextCFID uint32
	// Live maps each table of the version the edits build to its family
	// and level; Deleted holds the tables an edit removed (and that no
	// later edit added back).
	Live     map[uint64]NewFile
	Deleted  map[uint64]bool
	LastSeq  uint64
	LogNum   uint64
	NextFile uint64
	Ingested [][]byte
}

// Salvage reads the manifest CURRENT names (or, when CURRENT is damaged,
// the highest-numbered manifest in names, the directory's entries) up to
// its first damage, and returns the state its readable edits describe.
func Salvage(fs vfs.FS, dirname string, names []string) *Salvaged {
	s := &Salvaged{CFs: map[uint32]ColumnFamily{}, Live: map[uint64]NewFile{}, Deleted: map[uint64]bool{}}
	num, err := readCurrent(fs, dirname)
	fromCurrent := err == nil
	if err != nil {
		s.Damage = fmt.Errorf("CURRENT: %w", err)
		for _, n := range names {
			if t, m, ok := base.ParseFilename(n); ok && t == base.FileTypeManifest && m > num {
				num = m
			}
		}
		if num == 0 {
			return s
		}
	}
	s.Manifest = base.FileName(base.FileTypeManifest, num)
	readErr := s.read(fs, base.MakeFilename(dirname, base.FileTypeManifest, num), num)
	if readErr != nil {
		s.Damage = readErr
	}
	s.Complete = fromCurrent && readErr == nil
	return s
}

func (s *Salvaged) read(fs vfs.FS, name string, num uint64) error {
	f, err := fs.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return err
	}
	r := wal.NewReader(f, size, num)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var e VersionEdit
		if err := e.Decode(rec); err != nil {
			return fmt.Errorf("edit at offset %d: %w", r.Offset(), err)
		}
		s.apply(&e)
		s.Records++
	}
}

func (s *Salvaged) apply(e *VersionEdit) {
	if e.HasLastSeq {
		s.LastSeq = max(s.LastSeq, e.LastSeq)
	}
	if e.HasLogNum {
		s.LogNum = e.LogNum
	}
	if e.HasNextFileNum {
		s.NextFile = max(s.NextFile, e.NextFileNum)
	}
	e.ApplyColumnFamilies(s.CFs)
	for _, cf := range e.AddedCFs {
		s.NextCFID = max(s.NextCFID, cf.ID+1)
	}
	if e.HasNextCFID {
		s.NextCFID = max(s.NextCFID, e.NextCFID)
	}
	for _, d := range e.DeletedFiles {
		delete(s.Live, d.FileNum)
		s.Deleted[d.FileNum] = true
	}
	for _, nf := range e.NewFiles {
		s.Live[nf.Meta.FileNum] = nf
		delete(s.Deleted, nf.Meta.FileNum)
	}
	for num, nf := range s.Live {
		if _, ok := s.CFs[nf.CF]; !ok {
			delete(s.Live, num) // its family was dropped
			s.Deleted[num] = true
		}
	}
	s.Ingested = append(s.Ingested, e.Ingested...)
}
