package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/filter"
)

// The levels experiment (lsmbench filters -sections levels): filters in
// place, on a real multi-level LSM. Each configuration loads the same keys
// in the same shuffled order into a fresh database (small memtables and
// level targets, so several levels hold data), flushes, lets the
// compactions that are due finish, and does no final compaction; then it
// looks up absent keys and reads, per level, the filter checks and false
// positives from LevelMetrics.Filter, the data blocks read per Get, and the
// Get throughput.
//
// Configurations: uniform, Monkey and Pebble-style progressive
// allocations of Bloom filters at the same total filter memory (the
// progressive sizes 16/16/16/16/14/10/8 for L0..L6 are scaled so that, on
// the level sizes the uniform run ended with, they spend its memory), and
// Ribbon and binary fuse at about that memory.

// levelsConfig is one configuration of the levels experiment.
type levelsConfig struct {
	Name       string `json:"name"`
	Allocation string `json:"allocation"` // uniform, monkey or progressive
	Family     string `json:"family"`     // bloom, ribbon, binaryfuse
}

var levelsConfigs = map[string]levelsConfig{
	"uniform":       {"uniform", "uniform", "bloom"},
	"monkey":        {"monkey", "monkey", "bloom"},
	"progressive":   {"progressive", "progressive", "bloom"},
	"ribbon":        {"ribbon", "uniform", "ribbon"},
	"ribbon-monkey": {"ribbon-monkey", "monkey", "ribbon"},
	"fuse8":         {"fuse8", "uniform", "binaryfuse"},
}

var levelsConfigNames = []string{"uniform", "monkey", "progressive", "ribbon", "ribbon-monkey", "fuse8"}

// pebbleProgressive is Pebble's development-branch per-level Bloom sizes,
// L0..L6.
var pebbleProgressive = []float64{16, 16, 16, 16, 14, 10, 8}

// levelsLevel is one level's figures after a configuration's lookups.
type levelsLevel struct {
	Level          int     `json:"level"`
	Tables         int64   `json:"tables"`
	Bytes          int64   `json:"bytes"`
	FilterBytes    int64   `json:"filter_bytes"`
	BitsPerKey     float64 `json:"bits_per_key"`
	Checks         int64   `json:"checks"`
	FalsePositives int64   `json:"false_positives"`
	FPR            float64 `json:"fpr"`
	// FPPerGet is FalsePositives per absent Get: this level's share of
	// ΣFPR (for L0, its tables' rates added up).
	FPPerGet float64 `json:"fp_per_get"`
}

// levelsRow is one configuration's result.
type levelsRow struct {
	levelsConfig
	Policies     []string      `json:"policies"` // per level, as configured
	Levels       []levelsLevel `json:"levels"`
	FilterBytes  int64         `json:"filter_bytes"`
	BitsPerKey   float64       `json:"bits_per_key"` // all filters over all filtered keys
	SumFPR       float64       `json:"sum_fpr"`      // false-positive table reads per absent Get
	BlocksPerGet float64       `json:"data_blocks_per_absent_get"`
	GetsPerSec   float64       `json:"absent_gets_per_sec"`
	LoadSeconds  float64       `json:"load_seconds"`
	Retries      int64         `json:"build_retries"`
	Fallbacks    int64         `json:"build_fallbacks"`
}

type levelsResult struct {
	Keys       int         `json:"keys"`
	ValueSize  int         `json:"value_size"`
	Absent     int         `json:"absent_gets"`
	BitsPerKey float64     `json:"bits_per_key"`
	Rows       []levelsRow `json:"rows"`
}

func (l *filterLab) levels() (*levelsResult, error) {
	c := l.cfg
	res := &levelsResult{Keys: c.LevelsN, ValueSize: c.LevelsValueSize, Absent: c.LevelsAbsent, BitsPerKey: c.LevelsBits}
	ph := l.prog.start("filter levels", int64(len(c.LevelsConfigs)))
	defer ph.finish()
	var uniformShape []float64 // bytes per level of the first uniform run
	for _, name := range c.LevelsConfigs {
		if err := l.ctx.Err(); err != nil {
			return res, err
		}
		cfg := levelsConfigs[name]
		row, shape, err := l.levelsRun(cfg, uniformShape)
		if err != nil {
			return res, fmt.Errorf("levels %s: %w", name, err)
		}
		if cfg.Allocation == "uniform" && cfg.Family == "bloom" && uniformShape == nil {
			uniformShape = shape
		}
		res.Rows = append(res.Rows, row)
		ph.add(1)
	}
	return res, nil
}

// levelsPolicies returns the options' filter settings for cfg.
func (l *filterLab) levelsPolicies(cfg levelsConfig, shape []float64) (filter.Policy, []filter.Policy, sieve.FilterAllocation) {
	b := l.cfg.LevelsBits
	var base filter.Policy
	switch cfg.Family {
	case "ribbon":
		base = filter.Ribbon(b)
	case "binaryfuse":
		base = filter.BinaryFuse(8)
	default:
		base = filter.Bloom(b)
	}
	switch cfg.Allocation {
	case "monkey":
		return base, nil, sieve.MonkeyFilters
	case "progressive":
		scale := 1.0
		var mem, n float64
		for lv, bytes := range shape {
			mem += bytes * pebbleProgressive[lv]
			n += bytes
		}
		if mem > 0 {
			scale = b * n / mem
		}
		levels := make([]filter.Policy, len(pebbleProgressive))
		for lv, pb := range pebbleProgressive {
			levels[lv] = filter.Bloom(math.Round(100*pb*scale) / 100)
		}
		return base, levels, sieve.UniformFilters
	}
	return base, nil, sieve.UniformFilters
}

// levelsRun loads a fresh database with cfg and measures it. It returns
// the bytes per level as well.
func (l *filterLab) levelsRun(cfg levelsConfig, shape []float64) (levelsRow, []float64, error) {
	c := l.cfg
	row := levelsRow{levelsConfig: cfg}
	dir, err := os.MkdirTemp("", "lsmbench-levels-")
	if err != nil {
		return row, nil, err
	}
	defer os.RemoveAll(dir)
	base, perLevel, alloc := l.levelsPolicies(cfg, shape)
	opts := &sieve.Options{
		MemTableSize: 4 << 20, LBaseMaxBytes: 8 << 20, TargetFileSize: 2 << 20, LevelMultiplier: 10,
		FilterPolicy: base, LevelFilterPolicies: perLevel, FilterAllocation: alloc,
		MaxConcurrentCompactions: 1,
	}
	row.Policies = levelPolicyNames(base, perLevel, alloc)
	db, err := sieve.Open(dir, opts)
	if err != nil {
		return row, nil, err
	}
	defer db.Close()
	ks := keyspace{num: c.LevelsN, keySize: c.KeySize}
	start := time.Now()
	if err := l.levelsLoad(db, ks); err != nil {
		return row, nil, err
	}
	row.LoadSeconds = time.Since(start).Seconds()

	before := db.Metrics()
	start = time.Now()
	key := make([]byte, c.KeySize)
	for j := range c.LevelsAbsent {
		ks.missing(key, uint64(j))
		if _, err := db.Get(key); err != sieve.ErrNotFound {
			return row, nil, fmt.Errorf("absent key %x: %v", key, err)
		}
	}
	d := time.Since(start)
	after := db.Metrics()
	row.GetsPerSec = float64(c.LevelsAbsent) / d.Seconds()
	row.BlocksPerGet = float64(after.PointLookups.DataBlocksRead-before.PointLookups.DataBlocksRead) / float64(c.LevelsAbsent)
	row.Retries, row.Fallbacks = after.Filter.BuildRetries, after.Filter.BuildFallbacks
	return row, row.addLevels(before, after, c.LevelsAbsent), nil
}

// levelPolicyNames names each level's policy as the run configures it.
func levelPolicyNames(base filter.Policy, perLevel []filter.Policy, alloc sieve.FilterAllocation) []string {
	var names []string
	for lv := range 7 {
		p := base
		if lv < len(perLevel) && perLevel[lv] != nil {
			p = perLevel[lv]
		}
		name := p.Name()
		if alloc == sieve.MonkeyFilters {
			name = "monkey(" + name + ")"
		}
		names = append(names, name)
	}
	return names
}

// levelsLoad puts the run's keys in a shuffled order, flushes and waits
// for the compactions to finish.
func (l *filterLab) levelsLoad(db *sieve.DB, ks keyspace) error {
	c := l.cfg
	vals := newValueSource(c.LevelsValueSize, 0.5, 1)
	key := make([]byte, c.KeySize)
	for i, num := range ks.shuffledNumbers(c.Seed) {
		if err := db.Put(ks.encode(key, num), vals.value(), sieve.NoSync); err != nil {
			return err
		}
		if i%65536 == 0 && l.ctx.Err() != nil {
			return l.ctx.Err()
		}
	}
	if err := db.Flush(); err != nil {
		return err
	}
	waitForCompactions(db)
	return nil
}

// addLevels fills the row's per-level figures from the metrics before and
// after absent Gets, and returns the bytes per level.
func (row *levelsRow) addLevels(before, after *sieve.Metrics, absent int) []float64 {
	shape := make([]float64, len(after.Levels))
	var bits, fkeys float64
	for lv, m := range after.Levels {
		shape[lv] = float64(m.Size)
		if m.NumFiles == 0 {
			continue
		}
		fm := m.Filter
		checks := fm.Checks - before.Levels[lv].Filter.Checks
		fp := fm.FalsePositives - before.Levels[lv].Filter.FalsePositives
		neg := fm.Negatives - before.Levels[lv].Filter.Negatives
		ll := levelsLevel{Level: lv, Tables: m.NumFiles, Bytes: m.Size, FilterBytes: m.FilterBytes, BitsPerKey: m.FilterBitsPerKey,
			Checks: checks, FalsePositives: fp, FPPerGet: float64(fp) / float64(absent)}
		if fp+neg > 0 {
			ll.FPR = float64(fp) / float64(fp+neg)
		}
		row.Levels = append(row.Levels, ll)
		row.FilterBytes += m.FilterBytes
		row.SumFPR += ll.FPPerGet
		bits += 8 * float64(m.FilterBytes)
		if m.FilterBitsPerKey > 0 {
			fkeys += 8 * float64(m.FilterBytes) / m.FilterBitsPerKey
		}
	}
	if fkeys > 0 {
		row.BitsPerKey = bits / fkeys
	}
	return shape
}

// waitForCompactions waits until no level is due for compaction and no
// compaction has run for a moment (sieve compacts in the background).
func waitForCompactions(db *sieve.DB) {
	deadline := time.Now().Add(5 * time.Minute)
	last := int64(-1)
	for time.Now().Before(deadline) {
		m := db.Metrics()
		due := m.MemTable.Immutable > 0
		for _, lv := range m.Levels {
			due = due || lv.Score >= 1
		}
		if !due && m.Compaction.Count == last {
			return
		}
		last = m.Compaction.Count
		time.Sleep(300 * time.Millisecond)
	}
}

func printLevels(w io.Writer, r *levelsResult) {
	fmt.Fprintf(w, "4. Filters in place: %s keys (values of %d B) loaded in random order, no final compaction; %s absent Gets\n",
		commas(int64(r.Keys)), r.ValueSize, commas(int64(r.Absent)))
	fmt.Fprintf(w, "%-14s %6s %9s %8s %9s %10s %8s\n", "config", "filter", "bits/key", "ΣFPR", "blocks/Get", "Gets/s", "load s")
	for _, row := range r.Rows {
		fmt.Fprintf(w, "%-14s %6s %9.2f %8.4f %9.4f %10.0f %8.1f\n", row.Name, humanBytes(row.FilterBytes), row.BitsPerKey,
			row.SumFPR, row.BlocksPerGet, row.GetsPerSec, row.LoadSeconds)
	}
	fmt.Fprintf(w, "per level (tables, bits/key, FPR, false positives per Get):\n")
	for _, row := range r.Rows {
		var parts []string
		for _, l := range row.Levels {
			parts = append(parts, fmt.Sprintf("L%d %d×%.1fb %s %.4f", l.Level, l.Tables, l.BitsPerKey, pct(l.FPR), l.FPPerGet))
		}
		fmt.Fprintf(w, "  %-14s %s\n", row.Name, strings.Join(parts, " | "))
	}
	fmt.Fprintf(w, "ΣFPR: false-positive table reads per absent Get (each L0 table counted); blocks/Get: data blocks read per absent Get.\n")
	fmt.Fprintf(w, "progressive: Pebble's 16/16/16/16/14/10/8 bits/key (L0..L6) scaled to the uniform run's memory on its level sizes.\n\n")
}

func levelsCSV(w io.Writer, r *levelsResult) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"config", "allocation", "family", "level", "tables", "bytes", "filter_bytes", "bits_per_key", "checks", "false_positives", "fpr", "fp_per_get",
		"total_filter_bytes", "sum_fpr", "blocks_per_get", "gets_per_sec"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, row := range r.Rows {
		for _, l := range row.Levels {
			cw.Write([]string{row.Name, row.Allocation, row.Family, strconv.Itoa(l.Level), strconv.FormatInt(l.Tables, 10), strconv.FormatInt(l.Bytes, 10),
				strconv.FormatInt(l.FilterBytes, 10), f(l.BitsPerKey), strconv.FormatInt(l.Checks, 10), strconv.FormatInt(l.FalsePositives, 10), f(l.FPR), f(l.FPPerGet),
				strconv.FormatInt(row.FilterBytes, 10), f(row.SumFPR), f(row.BlocksPerGet), f(row.GetsPerSec)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// levelsChart: per-level FPR of each configuration (log scale).
func levelsChart(r *levelsResult) *chart {
	c := &chart{Title: "Per-level false-positive rate at equal filter memory", XLabel: "level",
		YLabel: "false-positive rate (log scale)", LogY: true, YFormat: fpct, XMin: -0.5, XMax: 6.5}
	markers := []string{"circle", "square", "triangle", "diamond", "circle", "square"}
	for i, row := range r.Rows {
		var pts []point
		for _, l := range row.Levels {
			if l.FPR > 0 {
				pts = append(pts, point{float64(l.Level), l.FPR})
			}
		}
		c.Series = append(c.Series, series{Name: fmt.Sprintf("%s (ΣFPR %.3f)", row.Name, row.SumFPR), Points: pts, Line: true,
			Marker: markers[i%len(markers)], Color: palette[i%len(palette)]})
	}
	return c
}
