package compaction

import (
	"bytes"
	"math"
	"sort"

	"github.com/sievedb/sieve/internal/manifest"
)

// Dynamic level sizing, as RocksDB's level_compaction_dynamic_level_bytes
// and Pebble do it. A fixed L1 target (LBaseMaxBytes, growing by
// LevelMultiplier per level) makes a small database rewrite its data
// through every level on its way to the bottom. Instead the targets are
// derived from the bottom up:
//
//   - The bottom level, L6, is expected to hold all but 1/LevelMultiplier
//     of the data. Its expected size, Bottom, is the larger of L6's actual
//     size and (M−1)/M of the whole LSM (M = LevelMultiplier), so that
//     moving data down the levels does not change the shape it aims for
//     (Pebble's choice; RocksDB uses L6 alone).
//   - Level n's natural size is Bottom / M^(6−n). The base level, where L0
//     compacts to, is the highest level whose natural size exceeds
//     LBaseMaxBytes/M; the levels above it are kept empty. While L1..L6
//     hold nothing, the base level is L6: the first flushes compact (or
//     move) straight into the bottom level.
//   - The base level's target is LBaseMaxBytes, and the targets of the
//     levels between it and L6 grow by the same factor each level,
//     (Bottom / LBaseMaxBytes)^(1/(6−base)) (at least 1), so that every
//     step down costs about the same (Pebble's smoothed multiplier).
//
// The base level moves up as soon as the bottom grows past a threshold,
// but moves down only when Bottom has shrunk by baseLevelHysteresis below
// the threshold of the level the data starts at (the first non-empty
// level), so a bottom size hovering around a threshold does not make the
// picker drain a level and refill it. Data above the base level (after the
// base moved down, or in an LSM laid out by fixed targets) is drained:
// those levels score at least 1 and compact into the first level below
// them that holds overlapping data, or the base level.

// baseLevelHysteresis is how far (as a factor) the bottom must shrink
// below a level's threshold before the base level moves down past data.
const baseLevelHysteresis = 2

// Targets is the shape a Picker aims for, derived from the current sizes
// of the levels (see Picker.Targets).
type Targets struct {
	// BaseLevel is the level L0 compacts into, 1..6. Levels 1..BaseLevel−1
	// should be empty; what they hold is drained.
	BaseLevel int
	// Bottom is the expected size of the bottom level the targets derive
	// from, in bytes (0 while L1..L6 are empty).
	Bottom float64
	// MaxBytes holds the target size of BaseLevel..L5, in bytes; 0 for L0
	// (scored by table count), for the levels above BaseLevel and for L6
	// (which has no target).
	MaxBytes [manifest.NumLevels]float64
}

// Targets computes the base level and level targets for levels.
func (p *Picker) Targets(levels *manifest.Levels) Targets {
	const bottom = manifest.NumLevels - 1
	t := Targets{BaseLevel: bottom}
	first := 0 // the first non-empty level of L1..L6
	var total uint64
	for l := 1; l < manifest.NumLevels; l++ {
		if first == 0 && len(levels[l]) > 0 {
			first = l
		}
		total += levels.Size(l)
	}
	if first == 0 {
		return t
	}
	total += levels.Size(0)
	m := float64(p.opts.LevelMultiplier)
	t.Bottom = max(float64(levels.Size(bottom)), float64(total)*(m-1)/m)
	t.BaseLevel = min(max(first, p.baseFor(t.Bottom*baseLevelHysteresis)), p.baseFor(t.Bottom))
	if t.BaseLevel == bottom {
		return t
	}
	lbase := float64(p.opts.LBaseMaxBytes)
	mult := max(1, math.Pow(t.Bottom/lbase, 1/float64(bottom-t.BaseLevel)))
	size := lbase
	for l := t.BaseLevel; l < bottom; l++ {
		t.MaxBytes[l] = size
		size *= mult
	}
	return t
}

// baseFor returns the base level for a bottom level of the given size: the
// highest level whose natural size, bottom / M^(6−level), exceeds
// LBaseMaxBytes/M (at most L1, at least L6).
func (p *Picker) baseFor(bottom float64) int {
	level := manifest.NumLevels - 1
	for level > 1 && bottom > float64(p.opts.LBaseMaxBytes) {
		level--
		bottom /= float64(p.opts.LevelMultiplier)
	}
	return level
}

// firstOverlapping returns the first level below start and above limit
// holding a table that overlaps [smallest, largest], or limit when none
// does. A compaction from start whose start-level inputs span [smallest,
// largest] may write straight into that level: the levels it skips hold
// nothing its data would have to stay above.
func firstOverlapping(levels *manifest.Levels, start, limit int, smallest, largest []byte) int {
	for l := start + 1; l < limit; l++ {
		if overlapsLevel(levels[l], smallest, largest) {
			return l
		}
	}
	return limit
}

// overlapsLevel reports whether a table of a sorted level (L1..L6) overlaps
// [smallest, largest].
func overlapsLevel(files []*manifest.FileMetadata, smallest, largest []byte) bool {
	i := sort.Search(len(files), func(i int) bool {
		return bytes.Compare(files[i].Largest.UserKey, smallest) >= 0
	})
	return i < len(files) && bytes.Compare(files[i].Smallest.UserKey, largest) <= 0
}
