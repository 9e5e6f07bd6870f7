package sieve

import (
	"fmt"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/manifest"
)

// FilterAllocation chooses how many bits per key each new table's filter
// gets (Options.FilterAllocation).
type FilterAllocation int

const (
	// UniformFilters builds every table with its level's policy as
	// configured (the default).
	UniformFilters FilterAllocation = iota
	// MonkeyFilters resizes the level's policy for each new table from the
	// current level sizes (Dayan et al., "Monkey", SIGMOD 2017): an absent
	// key's lookup probes every L0 table and one table per deeper level,
	// so its expected false-positive table reads are the sum of those
	// runs' rates, and for a fixed memory that sum is least when each
	// run's rate is proportional to its entries. Smaller levels (and L0
	// tables) get more bits per key, the bottom level fewer, and the total
	// filter memory is what the configured sizes would use
	// (filter.MonkeyBitsPerKey has the closed form). Continuous families
	// (Bloom, StandardBloom, Ribbon) get the computed size; binary fuse
	// and cuckoo the nearest they have; None and other policies are left
	// as they are.
	MonkeyFilters
)

// String returns the allocation's name ("uniform", "monkey").
func (a FilterAllocation) String() string {
	switch a {
	case UniformFilters:
		return "uniform"
	case MonkeyFilters:
		return "monkey"
	}
	return fmt.Sprintf("FilterAllocation(%d)", int(a))
}

// filterPolicyFor returns the policy of a table of cf written into level
// by c (nil for a flush), wrapped so that its builder's retries and
// fallbacks are counted.
func (db *DB) filterPolicyFor(cf uint32, level int, c *compaction.Compaction) filter.Policy {
	st := db.cfs.get(cf)
	if st == nil {
		return nil
	}
	p := st.policyFor(level)
	if p == nil {
		return nil
	}
	if db.opts.FilterAllocation == MonkeyFilters {
		p = db.monkeyPolicy(st, p, level, c)
	}
	return countingPolicy{Policy: p, m: &db.metrics}
}

// Bounds of a Monkey size, in bits per key.
const (
	monkeyMinBits = 1
	monkeyMaxBits = 30
)

// monkeyPolicy resizes p, the policy of level, for the table being
// written. The runs are the current version's L0 tables (one each) and
// deeper levels, by bytes (a proxy for entries); a flush adds its table
// as a new L0 run of the average flushed size, and a compaction moves its
// start-level inputs into its output level.
func (db *DB) monkeyPolicy(st *cfState, p filter.Policy, level int, c *compaction.Compaction) filter.Policy {
	s := filter.AllocationSlope(p)
	if s == 0 {
		return p
	}
	rs := db.loadReadState()
	defer rs.unref()
	lv := rs.version.Levels(st.id)
	if lv == nil {
		return p
	}
	r := &monkeyRuns{db: db, st: st, lv: lv, inputs: map[uint64]bool{}, target: -1}
	if c != nil {
		for _, f := range c.Inputs[0] {
			r.inputs[f.FileNum] = true
			r.moved += float64(f.Size)
		}
	}
	if level == 0 {
		r.addL0()
	}
	r.addDeeper(level)
	if r.target < 0 || r.target >= len(r.entries) {
		return p
	}
	bits := filter.MonkeyBitsPerKeyProbed(r.entries, r.probed, r.budget, s, monkeyMinBits, monkeyMaxBits)
	return filter.Resize(p, bits[r.target])
}

// monkeyRuns gathers the runs a Monkey allocation spreads a budget over:
// per run its entries (bytes), the fraction of lookups that probe it and
// the bits per key its level's policy would give it; target is the index
// of the run the table being written belongs to.
type monkeyRuns struct {
	db                      *DB
	st                      *cfState
	lv                      *manifest.Levels
	inputs                  map[uint64]bool // the compaction's start-level inputs
	moved                   float64         // their bytes, which move to the output level
	entries, probed, budget []float64
	target                  int
}

func (r *monkeyRuns) add(runLevel int, bytes, prob float64) {
	b, ok := filter.BitsPerKeyOf(r.st.policyFor(runLevel))
	if !ok {
		return // a run without a sized filter takes no part
	}
	r.entries, r.probed, r.budget = append(r.entries, bytes), append(r.probed, prob), append(r.budget, b)
}

// coverage estimates the fraction of lookups that probe a run of files:
// a lookup probes a run only if the key falls in one of its tables'
// ranges, and the fraction of the bottom level's tables that the run's
// tables overlap estimates that (the bottom level spreads like the keys).
func (r *monkeyRuns) coverage(files []*manifest.FileMetadata) float64 {
	bottom := r.lv[manifest.NumLevels-1]
	if len(bottom) == 0 || len(files) == 0 {
		return 1
	}
	hit := make(map[uint64]bool)
	for _, f := range files {
		for _, g := range r.lv.Overlapping(manifest.NumLevels-1, f.Smallest.UserKey, f.Largest.UserKey) {
			hit[g.FileNum] = true
		}
	}
	return max(float64(len(hit))/float64(len(bottom)), 1/float64(len(bottom)))
}

// addL0 adds, for an L0 table being sized, the L0 tables as runs one by
// one (at most L0CompactionTrigger of them: more only wait for a
// compaction that is due), then the new table at the average flushed size.
// A deeper table is sized against the deeper levels only: L0's tables come
// and go within seconds, and charging their extra bits to a deeper table,
// which lives much longer, would leave the deeper levels short of
// uniform's memory once L0 has drained.
func (r *monkeyRuns) addL0() {
	l0 := 0
	for _, f := range r.lv[0] {
		if !r.inputs[f.FileNum] && l0 < r.db.opts.L0CompactionTrigger-1 {
			r.add(0, float64(f.Size), r.coverage([]*manifest.FileMetadata{f}))
			l0++
		}
	}
	est := float64(r.db.opts.MemTableSize)
	if n := r.db.metrics.flushes.Load(); n > 0 {
		est = float64(r.db.metrics.flushBytes.Load()) / float64(n)
	}
	r.target = len(r.entries)
	r.add(0, est, 1)
}

// addDeeper adds the levels below L0. Levels from the base level down
// count at least the size the picker aims them at (dynamic level sizing:
// the bottom holds (M−1)/M of the data, the levels above it shrink
// geometrically). Their momentary sizes alone would size a table written
// into a level that has just received a compaction's data, while the
// bottom has not yet grown, with too few bits, and every level's tables
// would end up with less memory than uniform's. Levels above the base
// (being drained) and a database whose levels are all empty count their
// current sizes. The output level counts as probed by every lookup: its
// tables are the ones being rewritten.
func (r *monkeyRuns) addDeeper(level int) {
	t := r.db.pickerForScores().Targets(r.lv)
	for l := 1; l < manifest.NumLevels; l++ {
		var bytes float64
		for _, f := range r.lv[l] {
			if !r.inputs[f.FileNum] {
				bytes += float64(f.Size)
			}
		}
		if l == level {
			bytes += r.moved
		}
		if t.Bottom > 0 && l >= t.BaseLevel {
			aim := t.MaxBytes[l]
			if l == manifest.NumLevels-1 {
				aim = t.Bottom
			}
			bytes = max(bytes, aim) // a level over its target (a backlog) is as large as it is
		}
		prob := 1.0
		if l < manifest.NumLevels-1 && l != level {
			prob = r.coverage(r.lv[l])
		}
		if l == level {
			r.target = len(r.entries)
		} else if bytes == 0 {
			continue
		}
		r.add(l, bytes, prob)
	}
}

// countingPolicy counts its builders' construction retries and fallbacks
// (binary fuse, Ribbon) in the DB's filter metrics.
type countingPolicy struct {
	filter.Policy
	m *dbMetrics
}

func (p countingPolicy) NewBuilder() filter.Builder {
	b := p.Policy.NewBuilder()
	if _, ok := b.(filter.BuildReporter); !ok {
		return b
	}
	if hb, ok := b.(filter.HashBuilder); ok {
		return countingHashBuilder{countingBuilder{Builder: b, m: p.m}, hb}
	}
	return countingBuilder{Builder: b, m: p.m}
}

// countingHashBuilder is a countingBuilder over a builder that takes
// hashes (the prefix entries of SeekPrefixGE's filters).
type countingHashBuilder struct {
	countingBuilder
	hb filter.HashBuilder
}

func (b countingHashBuilder) AddHash(h uint64) { b.hb.AddHash(h) }

type countingBuilder struct {
	filter.Builder
	m *dbMetrics
}

func (b countingBuilder) Finish() []byte {
	out := b.Builder.Finish()
	r := b.Builder.(filter.BuildReporter).LastBuild()
	b.m.filterBuildRetries.Add(int64(r.Retries))
	if r.FellBack {
		b.m.filterBuildFallbacks.Add(1)
	}
	return out
}
