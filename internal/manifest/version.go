package manifest

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sievedb/sieve/internal/base"
)

// Levels is the LSM shape of one column family: L0 sorted newest first
// (by largest sequence number, then file number), L1..L6 sorted by smallest
// key and non-overlapping.
type Levels [NumLevels][]*FileMetadata

// Version is an immutable snapshot of the live tables of every column
// family. Readers pin a version with Ref/Unref; its tables are not deleted
// while any version that includes them is referenced.
type Version struct {
	CFs map[uint32]*Levels

	// RangeDels caches, per column family ID, the DB's collected range
	// tombstones of the version's tables (this package never looks
	// inside; see the root package's versionRangeDels).
	RangeDels sync.Map

	// search holds each column family's LevelSearch, built at the first
	// LevelSearch call (levelsearch.go), not for the intermediate versions
	// of a manifest replay that no read sees.
	search atomic.Pointer[map[uint32]*LevelSearch]

	refs atomic.Int32
	// onZero is called, once, when the last reference is dropped, with the
	// files whose reference count reached zero.
	onZero func(obsolete []*FileMetadata)
}

// Ref adds a reference.
func (v *Version) Ref() { v.refs.Add(1) }

// Unref drops a reference; the last one releases the version's files.
func (v *Version) Unref() {
	n := v.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		panic("manifest: version unreferenced too often")
	}
	var obsolete []*FileMetadata
	for _, lv := range v.CFs {
		for _, files := range lv {
			for _, f := range files {
				if f.Unref() == 0 {
					obsolete = append(obsolete, f)
				}
			}
		}
	}
	if v.onZero != nil {
		v.onZero(obsolete)
	}
}

// Levels returns the levels of column family cf (nil when it has none).
func (v *Version) Levels(cf uint32) *Levels { return v.CFs[cf] }

// Apply returns the version that results from applying e's file changes to
// v. The new version has no references yet. It checks the level invariants
// and returns an error wrapping base.ErrCorruption if they break.
func (v *Version) Apply(e *VersionEdit, onZero func([]*FileMetadata)) (*Version, error) {
	nv := &Version{CFs: make(map[uint32]*Levels, len(v.CFs)), onZero: onZero}
	for id, lv := range v.CFs {
		c := *lv
		nv.CFs[id] = &c
	}
	for _, cf := range e.AddedCFs {
		if _, ok := nv.CFs[cf.ID]; !ok {
			nv.CFs[cf.ID] = &Levels{}
		}
	}
	deleted := map[uint64]DeletedFile{}
	for _, d := range e.DeletedFiles {
		deleted[d.FileNum] = d
	}
	for cfID, lv := range nv.CFs {
		for level := range lv {
			files := lv[level]
			var kept []*FileMetadata
			changed := false
			for _, f := range files {
				if d, ok := deleted[f.FileNum]; ok && d.CF == cfID && d.Level == level {
					delete(deleted, f.FileNum)
					changed = true
					continue
				}
				kept = append(kept, f)
			}
			if changed {
				lv[level] = kept
			}
		}
	}
	for _, d := range deleted {
		return nil, base.CorruptionErrorf("manifest: deleting table %s from cf %d L%d, which does not hold it", base.FileName(base.FileTypeTable, d.FileNum), d.CF, d.Level)
	}
	touched := map[*Levels]map[int]bool{}
	for _, n := range e.NewFiles {
		lv, ok := nv.CFs[n.CF]
		if !ok {
			return nil, base.CorruptionErrorf("manifest: table %s added to unknown column family %d", base.FileName(base.FileTypeTable, n.Meta.FileNum), n.CF)
		}
		lv[n.Level] = append(lv[n.Level][:len(lv[n.Level]):len(lv[n.Level])], n.Meta)
		if touched[lv] == nil {
			touched[lv] = map[int]bool{}
		}
		touched[lv][n.Level] = true
	}
	for lv, levels := range touched {
		for level := range levels {
			sortLevel(level, lv[level])
		}
	}
	for _, id := range e.DroppedCFs {
		delete(nv.CFs, id)
	}
	if err := nv.CheckLevels(); err != nil {
		return nil, err
	}
	for _, lv := range nv.CFs {
		for _, files := range lv {
			for _, f := range files {
				f.Ref()
			}
		}
	}
	return nv, nil
}

func sortLevel(level int, files []*FileMetadata) {
	if level == 0 {
		sort.Slice(files, func(i, j int) bool {
			if files[i].LargestSeq != files[j].LargestSeq {
				return files[i].LargestSeq > files[j].LargestSeq
			}
			return files[i].FileNum > files[j].FileNum
		})
		return
	}
	sort.Slice(files, func(i, j int) bool {
		return base.CompareInternal(files[i].Smallest, files[j].Smallest) < 0
	})
}

// CheckLevels verifies the version's invariants: every table's key and
// sequence ranges are well formed, no table appears twice, L0 is ordered
// newest first, and each of L1..L6 is sorted and non-overlapping in user
// keys. Violations wrap base.ErrCorruption.
func (v *Version) CheckLevels() error {
	seen := map[uint64]bool{}
	for cfID, lv := range v.CFs {
		for level, files := range lv {
			for i, f := range files {
				if seen[f.FileNum] {
					return base.CorruptionErrorf("manifest: table %s appears twice", base.FileName(base.FileTypeTable, f.FileNum))
				}
				seen[f.FileNum] = true
				if err := f.validate(); err != nil {
					return base.CorruptionErrorf("manifest: cf %d L%d: %v", cfID, level, err)
				}
				if i == 0 {
					continue
				}
				prev := files[i-1]
				if level == 0 {
					if prev.LargestSeq < f.LargestSeq {
						return base.CorruptionErrorf("manifest: cf %d L0: %s (seq %d) ordered before newer %s (seq %d)",
							cfID, base.FileName(base.FileTypeTable, prev.FileNum), prev.LargestSeq, base.FileName(base.FileTypeTable, f.FileNum), f.LargestSeq)
					}
					continue
				}
				if bytes.Compare(prev.Largest.UserKey, f.Smallest.UserKey) >= 0 {
					return base.CorruptionErrorf("manifest: cf %d L%d: %s [%s] overlaps %s [%s]",
						cfID, level, base.FileName(base.FileTypeTable, prev.FileNum), prev.Largest, base.FileName(base.FileTypeTable, f.FileNum), f.Smallest)
				}
			}
		}
	}
	return nil
}

// String renders the LSM shape for tests and logs.
func (v *Version) String() string {
	var ids []uint32
	for id := range v.CFs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var sb strings.Builder
	for _, id := range ids {
		for level, files := range v.CFs[id] {
			if len(files) == 0 {
				continue
			}
			fmt.Fprintf(&sb, "cf %d L%d:\n", id, level)
			for _, f := range files {
				fmt.Fprintf(&sb, "  %s\n", f)
			}
		}
	}
	return sb.String()
}

// SearchLargest returns the index of the first of files (sorted by key,
// disjoint: a level below L0) whose largest user key is >= key, or
// len(files): sort.Search's answer without a closure call per step, for
// the search every Get makes in every level.
func SearchLargest(files []*FileMetadata, key []byte) int {
	lo, hi := 0, len(files)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(files[m].Largest.UserKey, key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Overlapping returns the tables of level that overlap the user-key range
// [start, end] (inclusive; nil = unbounded). For L0 the range is expanded
// transitively, as a compaction of those tables must take all of them.
func (lv *Levels) Overlapping(level int, start, end []byte) []*FileMetadata {
	var out []*FileMetadata
	files := lv[level]
	if level > 0 {
		i := 0
		if start != nil {
			i = SearchLargest(files, start)
		}
		for ; i < len(files) && files[i].Overlaps(start, end); i++ {
			out = append(out, files[i])
		}
		return out
	}
	for {
		out = out[:0]
		grown := false
		for _, f := range files {
			if !f.Overlaps(start, end) {
				continue
			}
			out = append(out, f)
			if start != nil && bytes.Compare(f.Smallest.UserKey, start) < 0 {
				start, grown = f.Smallest.UserKey, true
			}
			if end != nil && bytes.Compare(f.Largest.UserKey, end) > 0 {
				end, grown = f.Largest.UserKey, true
			}
		}
		if !grown {
			return out
		}
	}
}

// NumFiles and Size summarize a level.
func (lv *Levels) NumFiles(level int) int { return len(lv[level]) }

// Size returns the total table bytes of a level.
func (lv *Levels) Size(level int) uint64 {
	var s uint64
	for _, f := range lv[level] {
		s += f.Size
	}
	return s
}
