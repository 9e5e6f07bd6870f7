package compaction

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
)

// Compaction describes one picked compaction: the tables it reads, the
// level it writes, and the grandparent tables that bound its outputs. It
// refers to the FileMetadata of the version it was picked from; the caller
// keeps that version referenced until the compaction is installed or
// abandoned.
type Compaction struct {
	// StartLevel is the level whose tables are compacted; OutputLevel is
	// the level written: StartLevel+1 for the base level and below; for
	// L0, a level being drained and a manual compaction, the first level
	// below StartLevel that holds data overlapping Inputs[0] (or the base
	// level, or L6 for a manual one), the levels in between holding nothing
	// there; StartLevel itself for a manual compaction of the bottom level.
	StartLevel, OutputLevel int
	// Inputs[0] are the start-level tables (L0: newest first, as in the
	// version); Inputs[1] the output-level tables they overlap (sorted).
	Inputs [2][]*manifest.FileMetadata
	// Grandparents are the tables of OutputLevel+1 overlapping the
	// compaction's key range; the Splitter bounds each output table's
	// overlap with them.
	Grandparents []*manifest.FileMetadata
	// IsMove marks a trivial move: Inputs[0] is one table, Inputs[1] is
	// empty and the grandparent overlap is small, so the table is moved to
	// OutputLevel by a manifest edit without being rewritten.
	IsMove bool
	// Manual marks a compaction picked by PickManual.
	Manual bool
	// Score is the start level's score when picked (0 for manual ones).
	Score float64
	// Smallest and Largest bound the user keys of all inputs (inclusive).
	Smallest, Largest []byte

	opts PickerOptions // of the Picker that picked it
}

// InputFiles returns every input table: Inputs[0] then Inputs[1].
func (c *Compaction) InputFiles() []*manifest.FileMetadata {
	out := make([]*manifest.FileMetadata, 0, len(c.Inputs[0])+len(c.Inputs[1]))
	out = append(out, c.Inputs[0]...)
	return append(out, c.Inputs[1]...)
}

// InputBytes returns the total size of the input tables.
func (c *Compaction) InputBytes() uint64 { return totalSize(c.Inputs[0]) + totalSize(c.Inputs[1]) }

// NewInputIter returns the merged input of the compaction: one LevelIter
// per L0 input table (each opens its table lazily), one over the other
// start-level inputs, one over the output-level inputs, newest data first.
// Feed it to NewIter. The caller owns the result (NewIter takes it over).
func (c *Compaction) NewInputIter(open TableOpener) *MergingIter {
	return c.newInputIter(open, IterOptions{})
}

func (c *Compaction) newInputIter(open TableOpener, o IterOptions) *MergingIter {
	var children []base.InternalIterator
	if c.StartLevel == 0 {
		for _, f := range c.Inputs[0] {
			children = append(children, NewLevelIter(o, []*manifest.FileMetadata{f}, open))
		}
	} else if len(c.Inputs[0]) > 0 {
		children = append(children, NewLevelIter(o, c.Inputs[0], open))
	}
	if len(c.Inputs[1]) > 0 {
		children = append(children, NewLevelIter(o, c.Inputs[1], open))
	}
	return NewMergingIter(o, children...)
}

// Edit returns the version edit that installs the compaction in column
// family cf: it deletes every input table from its level (Inputs[0] from
// StartLevel, Inputs[1] from OutputLevel) and adds outputs to OutputLevel.
// For a trivial move, outputs is Inputs[0]: the table is deleted from
// StartLevel and added, unchanged, to OutputLevel.
func (c *Compaction) Edit(cf uint32, outputs []*manifest.FileMetadata) *manifest.VersionEdit {
	edit := &manifest.VersionEdit{
		DeletedFiles: make([]manifest.DeletedFile, 0, len(c.Inputs[0])+len(c.Inputs[1])),
		NewFiles:     make([]manifest.NewFile, 0, len(outputs)),
	}
	for i, files := range c.Inputs {
		level := c.StartLevel
		if i == 1 {
			level = c.OutputLevel
		}
		for _, f := range files {
			edit.DeletedFiles = append(edit.DeletedFiles, manifest.DeletedFile{CF: cf, Level: level, FileNum: f.FileNum})
		}
	}
	for _, f := range outputs {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFile{CF: cf, Level: c.OutputLevel, Meta: f})
	}
	return edit
}

// NewSplitter returns the output splitter for this compaction, with the
// picker's TargetFileSize and MaxGrandparentOverlapBytes.
func (c *Compaction) NewSplitter() *Splitter {
	o := c.opts.WithDefaults() // a Compaction not made by a Picker gets the defaults
	return NewSplitter(SplitterOptions{
		TargetFileSize:             o.TargetFileSize,
		MaxGrandparentOverlapBytes: o.MaxGrandparentOverlapBytes,
		Grandparents:               c.Grandparents,
	})
}

// String renders the compaction for logs and tests, e.g.
// "L1->L2 score=1.20 [000012] + [000020 000021] gp=[000031]".
func (c *Compaction) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "L%d->L%d", c.StartLevel, c.OutputLevel)
	switch {
	case c.Manual:
		sb.WriteString(" manual")
	default:
		fmt.Fprintf(&sb, " score=%.2f", c.Score)
	}
	if c.IsMove {
		sb.WriteString(" move")
	}
	fmt.Fprintf(&sb, " %s + %s", fileNums(c.Inputs[0]), fileNums(c.Inputs[1]))
	if len(c.Grandparents) > 0 {
		fmt.Fprintf(&sb, " gp=%s", fileNums(c.Grandparents))
	}
	return sb.String()
}

func fileNums(files []*manifest.FileMetadata) string {
	parts := make([]string, len(files))
	for i, f := range files {
		parts[i] = fmt.Sprintf("%06d", f.FileNum)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func totalSize(files []*manifest.FileMetadata) uint64 {
	var n uint64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// keyRange returns the smallest and largest user keys of the files of both
// slices (nil, nil when there are none).
func keyRange(a, b []*manifest.FileMetadata) (smallest, largest []byte) {
	for _, files := range [2][]*manifest.FileMetadata{a, b} {
		for _, f := range files {
			if smallest == nil || bytes.Compare(f.Smallest.UserKey, smallest) < 0 {
				smallest = f.Smallest.UserKey
			}
			if largest == nil || bytes.Compare(f.Largest.UserKey, largest) > 0 {
				largest = f.Largest.UserKey
			}
		}
	}
	return smallest, largest
}

func anyCompacting(files []*manifest.FileMetadata) bool {
	for _, f := range files {
		if f.Compacting {
			return true
		}
	}
	return false
}

// NewElider returns an ElideTombstone predicate for a compaction writing
// outputLevel of levels: it reports whether no table of a deeper level
// covers ukey. levels must stay unchanged while the predicate is in use
// (a Version's Levels never change). Tables only move deeper while a
// compaction runs, and never into its key range below its output level,
// so an answer computed from the version the compaction was picked from
// stays right until it finishes.
//
// The predicate keeps a cursor per level, so ascending calls (as Iter
// makes them) cost amortized O(1) comparisons; any order is correct.
func NewElider(levels *manifest.Levels, outputLevel int) func(ukey []byte) bool {
	var cursors [manifest.NumLevels]int
	return func(ukey []byte) bool {
		for l := outputLevel + 1; l < manifest.NumLevels; l++ {
			files := levels[l]
			if l == 0 {
				for _, f := range files {
					if f.Overlaps(ukey, ukey) {
						return false
					}
				}
				continue
			}
			i := cursors[l]
			if i > len(files) || (i > 0 && bytes.Compare(files[i-1].Largest.UserKey, ukey) >= 0) {
				i = 0 // ukey went backwards: search afresh
			}
			if i < len(files) && bytes.Compare(files[i].Largest.UserKey, ukey) < 0 {
				i += sort.Search(len(files)-i, func(j int) bool {
					return bytes.Compare(files[i+j].Largest.UserKey, ukey) >= 0
				})
			}
			cursors[l] = i
			if i < len(files) && bytes.Compare(files[i].Smallest.UserKey, ukey) <= 0 {
				return false
			}
		}
		return true
	}
}
