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
	inputs := map[uint64]bool{}
	var moved float64
	if c != nil {
		for _, f := range c.Inputs[0] {
			inputs[f.FileNum] = true
			moved += float64(f.Size)
		}
	}
	var entries, budget []float64
	target := -1
	add := func(runLevel int, bytes float64) {
		b, ok := filter.BitsPerKeyOf(st.policyFor(runLevel))
		if !ok {
			return // a run without a sized filter takes no part
		}
		entries, budget = append(entries, bytes), append(budget, b)
	}
	for _, f := range lv[0] {
		if !inputs[f.FileNum] {
			add(0, float64(f.Size))
		}
	}
	if level == 0 {
		est := float64(db.opts.MemTableSize)
		if n := db.metrics.flushes.Load(); n > 0 {
			est = float64(db.metrics.flushBytes.Load()) / float64(n)
		}
		target = len(entries)
		add(0, est)
	}
	for l := 1; l < manifest.NumLevels; l++ {
		var bytes float64
		for _, f := range lv[l] {
			if !inputs[f.FileNum] {
				bytes += float64(f.Size)
			}
		}
		if l == level {
			bytes += moved
			target = len(entries)
		} else if bytes == 0 {
			continue
		}
		add(l, bytes)
	}
	if target < 0 || target >= len(entries) {
		return p
	}
	bits := filter.MonkeyBitsPerKey(entries, budget, s, monkeyMinBits, monkeyMaxBits)
	return filter.Resize(p, bits[target])
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
	return countingBuilder{Builder: b, m: p.m}
}

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
