package sieve

import (
	"fmt"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/sstable"
)

// CheckInvariants verifies the database's structure: the current version's
// level invariants (L1+ sorted and non-overlapping, seqnums consistent) and,
// when verifyTables is set, every live table's blocks, checksums and key
// order, and that each table's key and seqnum ranges match the manifest.
// Tests call it after every scenario; it is also a tool for users who
// suspect damage. Errors wrap ErrCorruption.
func (db *DB) CheckInvariants(verifyTables bool) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	v := db.versions.Current()
	defer v.Unref()
	if err := v.CheckLevels(); err != nil {
		return err
	}
	if !verifyTables {
		return nil
	}
	for _, lv := range v.CFs {
		for _, files := range lv {
			for _, f := range files {
				if err := db.verifyTable(f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (db *DB) verifyTable(f *manifest.FileMetadata) error {
	e, err := db.tables.get(f)
	if err != nil {
		return err
	}
	defer db.tables.release(e)
	if err := e.r.Verify(); err != nil {
		return err
	}
	smallest, largest, lo, hi := sstable.TableBounds(e.r.Properties(), e.r.RangeDels())
	if lo != f.SmallestSeq || hi != f.LargestSeq ||
		string(smallest.UserKey) != string(f.Smallest.UserKey) || string(largest.UserKey) != string(f.Largest.UserKey) {
		return fmt.Errorf("%w: table %s: properties and range tombstones [%s-%s] seqs [%d-%d] differ from the manifest's %s",
			ErrCorruption, base.FileName(base.FileTypeTable, f.FileNum), smallest, largest, lo, hi, f)
	}
	return nil
}
