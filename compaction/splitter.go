package compaction

import (
	"bytes"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
)

// SplitterOptions configure a Splitter.
type SplitterOptions struct {
	// TargetFileSize: an output table at least this large is finished
	// before the next user key. 0 means no size limit.
	TargetFileSize int64
	// MaxGrandparentOverlapBytes: an output table is finished before the
	// next user key once the grandparent tables it overlaps total more than
	// this. Default 10 × TargetFileSize (no limit when both are 0).
	MaxGrandparentOverlapBytes int64
	// Grandparents are the sorted, non-overlapping tables of the level
	// below the output level that overlap the compaction.
	Grandparents []*manifest.FileMetadata
}

// Splitter decides where a compaction cuts its output into tables: when
// the table being written reaches TargetFileSize, or when it overlaps more
// than MaxGrandparentOverlapBytes of grandparent tables (so that a later
// compaction of one output table into the next level rewrites a bounded
// amount of data, as LevelDB's ShouldStopBefore does). It never cuts
// between two versions of one user key: tables of L1..L6 must not share a
// user key, and each user key's history must stay in one table.
//
// Call order: NewSplitter, then for every output entry in order
// ShouldSplitBefore (finishing the table and starting a new one when it
// returns true) followed by adding the entry. Not safe for concurrent use.
type Splitter struct {
	opts       SplitterOptions
	started    bool   // an entry has been seen
	prevUser   []byte // user key of the previous entry (a copy)
	gp         int    // first grandparent not yet wholly before the current key
	gpOverlap  uint64 // grandparent bytes passed while writing the current table
	maxOverlap uint64
}

// NewSplitter returns a Splitter for one compaction's output.
func NewSplitter(opts SplitterOptions) *Splitter {
	if opts.MaxGrandparentOverlapBytes <= 0 {
		opts.MaxGrandparentOverlapBytes = 10 * opts.TargetFileSize
	}
	return &Splitter{opts: opts, maxOverlap: uint64(opts.MaxGrandparentOverlapBytes)}
}

// ShouldSplitBefore reports whether the current output table must be
// finished before key is added to a new one; tableSize is the current
// table's (estimated) size so far. A true answer resets the splitter's
// accounting for the new table, so call it exactly once per entry.
func (s *Splitter) ShouldSplitBefore(key base.InternalKey, tableSize uint64) bool {
	ukey := key.UserKey
	gps := s.opts.Grandparents
	for s.gp < len(gps) && bytes.Compare(gps[s.gp].Largest.UserKey, ukey) < 0 {
		if s.started {
			s.gpOverlap += gps[s.gp].Size
		}
		s.gp++
	}
	if !s.started {
		s.started = true
		s.prevUser = append(s.prevUser[:0], ukey...)
		return false
	}
	if bytes.Equal(ukey, s.prevUser) {
		return false
	}
	s.prevUser = append(s.prevUser[:0], ukey...)
	split := (s.opts.TargetFileSize > 0 && tableSize >= uint64(s.opts.TargetFileSize)) ||
		(s.maxOverlap > 0 && s.gpOverlap > s.maxOverlap)
	if split {
		s.gpOverlap = 0
	}
	return split
}
