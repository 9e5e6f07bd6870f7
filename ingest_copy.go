package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/memtable"
)

// The copy path of Ingest (RocksDB's rule for a global sequence number of
// 0): when no snapshot is open and nothing in the family — no memtable
// entry, no table — overlaps any input's key range, no reader can tell
// the ingested keys' sequence number, so the inputs are copied into the
// database as they are, their keys at sequence number 0, without a flush
// or a rewrite, and the Ingest takes no sequence number. Later writes
// are newer, as they must be; readers pinned before the edit do not see
// the tables, readers after see them whole; new snapshots wait while the
// tables are installed.

// errIngestOverlap makes Ingest fall back from the copy path to the
// rewrite path: something began to overlap (or a snapshot opened) while
// the inputs were copied.
var errIngestOverlap = errors.New("sieve: ingest: overlap appeared")

// ingestByCopy runs the copy path if it applies. It reports whether the
// Ingest is done (err is then its outcome). REQUIRES: the commit pipeline.
func (db *DB) ingestByCopy(cf uint32, ins []*ingestInput) (bool, error) {
	if !db.copyAllowed(cf, ins) {
		return false, nil
	}
	for _, in := range ins {
		in.outs = &tableOutput{db: db, cf: cf}
		if err := db.copyInput(in); err != nil {
			abandonIngest(ins)
			return true, fmt.Errorf("sieve: ingest %s: %w", in.path, err)
		}
	}
	if err := db.fs.SyncDir(db.dirname); err != nil {
		abandonIngest(ins)
		return true, err
	}
	err := db.installIngest(cf, ins, 0)
	if errors.Is(err, errIngestOverlap) {
		for _, in := range ins {
			in.outs = nil // abandoned by installIngest
		}
		return false, nil
	}
	return true, err
}

// copyAllowed reports whether the copy path applies now.
func (db *DB) copyAllowed(cf uint32, ins []*ingestInput) bool {
	v := db.versions.Current()
	defer v.Unref()
	lv := v.Levels(cf)
	if lv == nil {
		return false
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.copyAllowedLocked(cf, lv, ins)
}

// copyAllowedLocked: no snapshot is open, and no memtable of cf (its
// entries or its range tombstones, whose sequence numbers are above the
// copy's 0) and no table of lv (whose bounds cover its tombstones)
// overlaps an input.
// REQUIRES: db.mu held.
func (db *DB) copyAllowedLocked(cf uint32, lv *manifest.Levels, ins []*ingestInput) bool {
	if len(db.mu.snapshots.seqs) > 0 {
		return false
	}
	groups := append([]*memGroup{db.mu.mem}, db.mu.imm...)
	for _, in := range ins {
		for l := 0; l < manifest.NumLevels; l++ {
			if len(lv.Overlapping(l, in.smallest, in.largest)) > 0 {
				return false
			}
		}
		for _, g := range groups {
			if memOverlaps(g.table(cf), in.smallest, in.largest) {
				return false
			}
		}
	}
	return true
}

// memOverlaps reports whether t (nil: none) holds an entry or a range
// tombstone in [lo, hi].
func memOverlaps(t *memtable.MemTable, lo, hi []byte) bool {
	if t == nil {
		return false
	}
	if len(t.RangeDels().Clip(lo, append(bytes.Clone(hi), 0))) > 0 {
		return true
	}
	if t.Empty() {
		return false
	}
	it := t.NewIter(nil, nil)
	defer it.Close()
	return it.SeekGE(lo) && bytes.Compare(it.Key().UserKey, hi) <= 0
}

// copyInput copies in's file into a new table of the database directory,
// fsynced, and records its metadata (keys at sequence number 0).
func (db *DB) copyInput(in *ingestInput) error {
	src, err := db.fs.Open(in.path)
	if err != nil {
		return err
	}
	defer src.Close()
	size, err := src.Size()
	if err != nil {
		return err
	}
	out := in.outs
	num := db.versions.NextFileNum()
	dst, err := db.fs.Create(base.MakeFilename(db.dirname, base.FileTypeTable, num))
	if err != nil {
		return err
	}
	out.files = append(out.files, num)
	_, err = io.CopyBuffer(dst, io.NewSectionReader(src, 0, size), make([]byte, 1<<20))
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	p := in.r.Properties()
	out.metas = append(out.metas, &manifest.FileMetadata{FileNum: num, Size: uint64(size),
		Smallest: p.SmallestKey.Clone(), Largest: p.LargestKey.Clone()})
	return nil
}
