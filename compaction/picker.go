package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/sievedb/sieve/internal/manifest"
)

// PickerOptions configure a Picker. Zero fields take the defaults of
// sieve.Options, noted per field.
type PickerOptions struct {
	// L0CompactionTrigger is the L0 table count at which L0's score
	// reaches 1. Default 4.
	L0CompactionTrigger int
	// LBaseMaxBytes is the target size of the base level, the level L0
	// compacts into; a level is used as the base level once the bottom
	// level is large enough for its share to exceed LBaseMaxBytes /
	// LevelMultiplier (see Targets). Default 64 MiB.
	LBaseMaxBytes int64
	// LevelMultiplier is the expected size ratio of the bottom level to the
	// level above it, and so on up to the base level (the targets between
	// the base level and the bottom are smoothed). Default 10.
	LevelMultiplier int
	// TargetFileSize is the size of compaction output tables. Default 4 MiB.
	TargetFileSize int64
	// MaxGrandparentOverlapBytes bounds how much of the level below its
	// output level one output table (or a trivially moved table) may
	// overlap. Default 10 × TargetFileSize.
	MaxGrandparentOverlapBytes int64
	// MaxExpandedBytes bounds the input size up to which a compaction
	// takes more start-level tables when that does not add output-level
	// tables. Default 25 × TargetFileSize.
	MaxExpandedBytes int64
}

// WithDefaults returns o with its zero fields set to their defaults.
func (o PickerOptions) WithDefaults() PickerOptions {
	if o.L0CompactionTrigger <= 0 {
		o.L0CompactionTrigger = 4
	}
	if o.LBaseMaxBytes <= 0 {
		o.LBaseMaxBytes = 64 << 20
	}
	if o.LevelMultiplier <= 0 {
		o.LevelMultiplier = 10
	}
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = 4 << 20
	}
	if o.MaxGrandparentOverlapBytes <= 0 {
		o.MaxGrandparentOverlapBytes = 10 * o.TargetFileSize
	}
	if o.MaxExpandedBytes <= 0 {
		o.MaxExpandedBytes = 25 * o.TargetFileSize
	}
	return o
}

// ErrInputsCompacting is returned by PickManual when a table it must take
// is already an input of a running compaction, or its output would overlap
// what a running compaction writes into the same level (SetOutputBusy);
// wait for that one to finish and pick again.
var ErrInputsCompacting = errors.New("compaction: inputs are already being compacted")

// Picker chooses leveled compactions for one column family: every level
// has a score, the level with the highest score of at least 1 compacts
// first, and within a level Ln (n >= 1) tables are taken round-robin by a
// cursor key, so every part of the key space is compacted in turn. Level
// targets are sized dynamically from the bottom level up (see Targets):
// L0 compacts into the base level, each level from the base level down
// into the next, and a level above the base level that holds data drains
// into the first level below it that overlaps, or the base level.
//
// A Picker reads Levels and the Compacting flags of their tables, and
// keeps its cursors; it changes nothing else. REQUIRES: the caller
// serializes Pick and PickManual and holds the lock that guards Compacting
// (the DB mutex), and marks the returned compaction's inputs Compacting
// under that same lock before calling the Picker again. Targets, Scores
// and LevelMaxBytes read only the options and the tables' sizes and key
// ranges, which never change: they may be called at any time, from any
// goroutine (for metrics, say).
type Picker struct {
	opts   PickerOptions
	cursor [manifest.NumLevels][]byte // largest user key of the last compaction picked at each level
	busy   func(level int, smallest, largest []byte) bool
}

// SetOutputBusy gives the Picker busy, which reports whether a running
// compaction writes level with outputs that may overlap [smallest,
// largest] (user keys, both inclusive). The Compacting flags do not cover
// that: a compaction's output tables may span a gap between its inputs,
// in which another compaction with no input in common writes (a move into
// L6 between two L6 tables an in-place L6 compaction rewrites, say), and
// the two outputs would overlap in one level. Pick skips a candidate whose
// output range busy reports, PickManual returns ErrInputsCompacting for
// it. busy is called under the lock that serializes Pick; nil (the
// default) means that no compaction the Picker returned is still running.
func (p *Picker) SetOutputBusy(busy func(level int, smallest, largest []byte) bool) { p.busy = busy }

// NewPicker returns a Picker with the given options (zero fields take
// their defaults).
func NewPicker(opts PickerOptions) *Picker {
	return &Picker{opts: opts.WithDefaults()}
}

// Options returns the picker's options, defaults applied.
func (p *Picker) Options() PickerOptions { return p.opts }

// LevelMaxBytes returns LBaseMaxBytes × LevelMultiplier^(level−1), the
// target of level (1..6) under fixed level sizing with L1 as the base
// level.
//
// Deprecated: the Picker sizes levels dynamically and no longer uses this;
// Targets gives the targets it uses.
func (p *Picker) LevelMaxBytes(level int) float64 {
	return float64(p.opts.LBaseMaxBytes) * math.Pow(float64(p.opts.LevelMultiplier), float64(level-1))
}

// Scores returns the compaction score of every level: for L0 the table
// count divided by L0CompactionTrigger; for the base level through L5 the
// level's size divided by its target (Targets); for a non-empty level
// above the base level, which must be drained, 1 + min(size /
// LBaseMaxBytes, 1), so draining goes before an L0 at its trigger but not
// before one holding twice its trigger. The bottom level, L6, scores 0. A
// level with score >= 1 needs a compaction.
func (p *Picker) Scores(levels *manifest.Levels) [manifest.NumLevels]float64 {
	return p.scores(levels, p.Targets(levels))
}

func (p *Picker) scores(levels *manifest.Levels, t Targets) [manifest.NumLevels]float64 {
	var s [manifest.NumLevels]float64
	s[0] = float64(len(levels[0])) / float64(p.opts.L0CompactionTrigger)
	for l := 1; l < manifest.NumLevels-1; l++ {
		size := float64(levels.Size(l))
		switch {
		case l >= t.BaseLevel:
			s[l] = size / t.MaxBytes[l]
		case len(levels[l]) > 0:
			s[l] = 1 + min(size/float64(p.opts.LBaseMaxBytes), 1)
		}
	}
	return s
}

// Pick returns the compaction to run next, or nil when no level scores
// 1 or more, or every candidate would take a table that is already
// compacting. Levels are tried by descending score (ties: the upper level
// first).
func (p *Picker) Pick(levels *manifest.Levels) *Compaction {
	t := p.Targets(levels)
	scores := p.scores(levels, t)
	var order []int
	for l := 0; l < manifest.NumLevels-1; l++ {
		if scores[l] >= 1 {
			order = append(order, l)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return scores[order[i]] > scores[order[j]] })
	for _, l := range order {
		var c *Compaction
		switch {
		case l == 0:
			c = p.pickL0(levels, t.BaseLevel)
		case l < t.BaseLevel: // drain
			c = p.pickLevel(levels, l, t.BaseLevel)
		default:
			c = p.pickLevel(levels, l, l+1)
		}
		if c != nil {
			c.Score = scores[l]
			return c
		}
	}
	return nil
}

// PickL0 picks a compaction of L0 into the base level whatever L0's
// score (a seek-triggered compaction), or nil when every L0 table is
// compacting or the output would conflict with a running compaction.
func (p *Picker) PickL0(levels *manifest.Levels) *Compaction {
	if len(levels[0]) == 0 {
		return nil
	}
	c := p.pickL0(levels, p.Targets(levels).BaseLevel)
	if c != nil {
		c.Score = 0
	}
	return c
}

// pickL0 takes the oldest L0 table that is not compacting and every L0
// table overlapping it transitively, into the first level down to the
// base level that holds overlapping data (normally the base level itself,
// with its tables that overlap them).
func (p *Picker) pickL0(levels *manifest.Levels, baseLevel int) *Compaction {
	files := levels[0]
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if f.Compacting {
			continue
		}
		in0 := levels.Overlapping(0, f.Smallest.UserKey, f.Largest.UserKey)
		smallest, largest := keyRange(in0, nil)
		output := firstOverlapping(levels, 0, baseLevel, smallest, largest)
		if c := p.setup(levels, 0, output, in0); c != nil {
			return c
		}
	}
	return nil
}

// pickLevel takes the first table of level after the level's cursor (wrapping
// around), skipping tables whose compaction would conflict with a running
// one, and advances the cursor past the compaction's start-level inputs.
// The output is the first level below level, up to limit, that holds data
// overlapping the table: limit is level+1 for the base level and below,
// and the base level for a level being drained.
func (p *Picker) pickLevel(levels *manifest.Levels, level, limit int) *Compaction {
	files := levels[level]
	start := 0
	if cur := p.cursor[level]; cur != nil {
		start = sort.Search(len(files), func(i int) bool {
			return bytes.Compare(files[i].Largest.UserKey, cur) > 0
		})
	}
	for t := 0; t < len(files); t++ {
		f := files[(start+t)%len(files)]
		if f.Compacting {
			continue
		}
		output := firstOverlapping(levels, level, limit, f.Smallest.UserKey, f.Largest.UserKey)
		if c := p.setup(levels, level, output, []*manifest.FileMetadata{f}); c != nil {
			_, largest := keyRange(c.Inputs[0], nil)
			p.cursor[level] = append(p.cursor[level][:0], largest...)
			return c
		}
	}
	return nil
}

// setup completes a compaction from its start-level inputs in0: it adds
// the output-level tables overlapping them, takes more start-level tables
// if the combined range covers them without adding output-level tables
// (and the inputs stay under MaxExpandedBytes, and the levels between
// start and output still hold nothing overlapping), and finds the
// grandparents. It returns nil if any input is compacting, or if a running
// compaction writes the output level in its key range (SetOutputBusy).
//
// REQUIRES: no level strictly between start and output holds a table
// overlapping in0's key range. That is what makes skipping them safe: the
// data moved past them is newer than anything they will hold in that range,
// since a table can only arrive there from a compaction whose inputs
// overlap in0's (and so conflict with this one) — see the package doc.
func (p *Picker) setup(levels *manifest.Levels, start, output int, in0 []*manifest.FileMetadata) *Compaction {
	if anyCompacting(in0) {
		return nil
	}
	var in1 []*manifest.FileMetadata
	if output != start {
		smallest, largest := keyRange(in0, nil)
		in1 = levels.Overlapping(output, smallest, largest)
		if anyCompacting(in1) {
			return nil
		}
	}
	if len(in1) > 0 {
		smallest, largest := keyRange(in0, in1)
		exp0 := levels.Overlapping(start, smallest, largest)
		if len(exp0) > len(in0) && !anyCompacting(exp0) &&
			totalSize(exp0)+totalSize(in1) < uint64(p.opts.MaxExpandedBytes) {
			es, el := keyRange(exp0, nil)
			if len(levels.Overlapping(output, es, el)) == len(in1) &&
				firstOverlapping(levels, start, output, es, el) == output {
				in0 = exp0
			}
		}
	}
	c := &Compaction{StartLevel: start, OutputLevel: output, Inputs: [2][]*manifest.FileMetadata{in0, in1}, opts: p.opts}
	c.Smallest, c.Largest = keyRange(in0, in1)
	if output+1 < manifest.NumLevels {
		c.Grandparents = levels.Overlapping(output+1, c.Smallest, c.Largest)
	}
	c.IsMove = start != output && len(in0) == 1 && len(in1) == 0 &&
		totalSize(c.Grandparents) <= uint64(p.opts.MaxGrandparentOverlapBytes)
	if p.busy != nil && p.busy(output, c.Smallest, c.Largest) {
		return nil
	}
	return c
}

// PickManual returns one step of db.Compact: the compaction of level's
// tables overlapping the user-key range [start, end] (both inclusive; nil
// = unbounded) into the first level below it that holds data overlapping
// them, or into the bottom level, L6, when none does — empty levels are
// skipped rather than written through. For L0 the tables are taken
// transitively. db.Compact calls it for L0 (until it returns nil), then
// L1, ... L5 in turn, running each result before picking the next, so the
// range ends up in L6. level may be L6 itself: that compaction rewrites
// L6's tables in place (dropping what no snapshot needs), which the DB may
// do or skip.
//
// It returns nil, nil when level holds nothing in the range, and
// ErrInputsCompacting when a table it needs is compacting. The result is
// never a trivial move: it either merges with data in its output level or
// writes the bottom level, so the range is always rewritten, and
// garbage-collected, where it lands.
func (p *Picker) PickManual(levels *manifest.Levels, level int, start, end []byte) (*Compaction, error) {
	if level < 0 || level >= manifest.NumLevels {
		return nil, fmt.Errorf("compaction: manual compaction of level %d out of range", level)
	}
	in0 := levels.Overlapping(level, start, end)
	if len(in0) == 0 {
		return nil, nil
	}
	output := level
	if level < manifest.NumLevels-1 {
		smallest, largest := keyRange(in0, nil)
		output = firstOverlapping(levels, level, manifest.NumLevels-1, smallest, largest)
	}
	c := p.setup(levels, level, output, in0)
	if c == nil {
		return nil, ErrInputsCompacting
	}
	c.Manual, c.IsMove = true, false
	return c, nil
}
