package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
)

// lsmbench filters: the filter laboratory. Three experiments on the filter
// package alone (no database):
//
//   - sweep: every policy × size on n keys — measured FPR beside the
//     policy's theory, bytes/key, build ns/key, probe ns for hits and misses.
//   - k: a classic Bloom filter at a fixed m/n for k = 1..kmax — the
//     fraction of bits set and the FPR, minimal at k = (m/n)·ln 2.
//   - overfill: a standalone Bloom filter sized for n at rate p holding
//     more and more keys (1% becomes 44% at 3n), beside a cuckoo filter of
//     the same capacity, which refuses keys instead.
//
// Tables go to stdout (or one JSON document with -json); CSV files and SVG
// charts go to -out.

type filterLabConfig struct {
	N          int       `json:"n"`
	Probes     int       `json:"probes"`
	KeySize    int       `json:"key_size"`
	Policies   []string  `json:"policies"`
	Bits       []float64 `json:"bits_per_key"`
	FPBits     []int     `json:"fingerprint_bits"`
	FuseBits   []int     `json:"fuse_fingerprint_bits"`
	RibbonBits []float64 `json:"ribbon_bits_per_key"`
	KBits      float64   `json:"k_sweep_bits_per_key"`
	KMax       int       `json:"k_max"`
	Overfill   []float64 `json:"overfill"`
	OverfillP  float64   `json:"overfill_rate"`
	Sections   []string  `json:"sections"`
	// The levels experiment (filter_levels.go).
	LevelsN         int      `json:"levels_keys"`
	LevelsValueSize int      `json:"levels_value_size"`
	LevelsAbsent    int      `json:"levels_absent_gets"`
	LevelsBits      float64  `json:"levels_bits_per_key"`
	LevelsConfigs   []string `json:"levels_configs"`
	labOutput
	Seed uint64 `json:"seed"`
}

func defaultFilterLabConfig() filterLabConfig {
	return filterLabConfig{
		N: 1_000_000, Probes: 1_000_000, KeySize: 16,
		Policies:   []string{"bloom", "standardbloom", "cuckoo", "binaryfuse", "ribbon"},
		Bits:       []float64{2, 4, 6, 8, 10, 12, 14, 16, 20},
		FPBits:     []int{4, 6, 8, 10, 12, 14, 16},
		FuseBits:   []int{8, 16},
		RibbonBits: []float64{2, 3.5, 5, 6, 7, 8, 10, 12, 14, 16, 20},
		KBits:      10, KMax: 16,
		Overfill:  []float64{0.5, 1, 1.5, 2, 2.5, 3},
		OverfillP: 0.01,
		Sections:  []string{"sweep", "k", "overfill"},
		LevelsN:   2_000_000, LevelsValueSize: 64, LevelsAbsent: 200_000, LevelsBits: 10,
		LevelsConfigs: levelsConfigNames,
		Seed:          1, labOutput: labOutput{Progress: "auto"},
	}
}

func newFilterFlags(c *filterLabConfig, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lsmbench filters", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Var((*countFlag)(&c.N), "n", "keys per filter (`n`)")
	fs.Var((*countFlag)(&c.Probes), "probes", "absent keys probed per filter (`n`)")
	fs.IntVar(&c.KeySize, "key_size", c.KeySize, "key size in `bytes` (>= 8)")
	fs.Func("policies", "`list` of policies for the sweep: bloom, standardbloom, cuckoo, binaryfuse, ribbon (default all)", func(s string) error {
		return setList(&c.Policies, s, []string{"bloom", "standardbloom", "cuckoo", "binaryfuse", "ribbon"})
	})
	fs.Func("ribbon_bits", "bits per key `list` for ribbon, each 1..30 (default 2,3.5,5,6,7,8,10,12,14,16,20)", func(s string) error {
		v, err := parseFloats(s, 1, 30)
		c.RibbonBits = v
		return err
	})
	fs.Func("bits", "bits per key `list` for bloom and standardbloom (default 2,4,6,8,10,12,14,16,20)", func(s string) error {
		v, err := parseFloats(s, 1, 64)
		c.Bits = v
		return err
	})
	fs.Func("fingerprint_bits", "fingerprint bits `list` for cuckoo, each 4..16 (default 4,6,8,10,12,14,16)", func(s string) error {
		v, err := parseFloats(s, 4, 16)
		if err != nil {
			return err
		}
		var fps []int
		for _, f := range v {
			if f != float64(int(f)) {
				return fmt.Errorf("%v is not a whole number of bits", f)
			}
			fps = append(fps, int(f))
		}
		c.FPBits = fps
		return nil
	})
	fs.Float64Var(&c.KBits, "k_bits", c.KBits, "m/n (`bits` per key) of the k-sweep")
	fs.IntVar(&c.KMax, "k_max", c.KMax, "largest k of the k-sweep (`k`)")
	fs.Func("overfill", "`list` of fills (keys held / capacity) for the overfill experiment (default 0.5,1,1.5,2,2.5,3)", func(s string) error {
		v, err := parseFloats(s, 0.01, 100)
		c.Overfill = v
		return err
	})
	fs.Float64Var(&c.OverfillP, "overfill_rate", c.OverfillP, "target false-positive `rate` the overfilled filter is sized for")
	fs.Func("sections", "`list` of experiments to run: sweep, k, overfill, levels (default sweep,k,overfill; levels loads databases)", func(s string) error {
		return setList(&c.Sections, s, []string{"sweep", "k", "overfill", "levels"})
	})
	fs.Var((*countFlag)(&c.LevelsN), "levels_n", "keys loaded into each database of the levels experiment (`n`)")
	fs.IntVar(&c.LevelsValueSize, "levels_value_size", c.LevelsValueSize, "value size in `bytes` of the levels experiment")
	fs.Var((*countFlag)(&c.LevelsAbsent), "levels_absent", "absent keys looked up per database (`n`)")
	fs.Float64Var(&c.LevelsBits, "levels_bits", c.LevelsBits, "bits per key of the uniform filters (`bits`): the memory every levels configuration gets")
	fs.Func("levels_configs", "`list` of levels configurations: uniform, monkey, progressive, ribbon, ribbon-monkey, fuse8 (default all; progressive scales to the first uniform run)", func(s string) error {
		return setList(&c.LevelsConfigs, s, levelsConfigNames)
	})
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "`seed` (the keys themselves are fixed; see the engine benchmark)")
	c.labOutput.flags(fs)
	return fs
}

func parseFilterFlags(args []string, out io.Writer) (filterLabConfig, error) {
	c := defaultFilterLabConfig()
	fs := newFilterFlags(&c, out)
	if err := c.labOutput.parse(fs, args); err != nil {
		return c, err
	}
	switch {
	case c.N < 1:
		return c, usagef("-n must be at least 1")
	case c.Probes < 1:
		return c, usagef("-probes must be at least 1")
	case c.LevelsN < 1 || c.LevelsAbsent < 1:
		return c, usagef("-levels_n and -levels_absent must be at least 1")
	case c.LevelsValueSize < 1 || c.LevelsValueSize > 1<<20:
		return c, usagef("-levels_value_size must be in [1, 1 MiB], got %d", c.LevelsValueSize)
	case !(c.LevelsBits >= 1 && c.LevelsBits <= 30):
		return c, usagef("-levels_bits must be in [1, 30], got %v", c.LevelsBits)
	case c.KeySize < 8 || c.KeySize > 1<<16:
		return c, usagef("-key_size must be in [8, 65536], got %d", c.KeySize)
	case !(c.KBits >= 1 && c.KBits <= 64):
		return c, usagef("-k_bits must be in [1, 64], got %v", c.KBits)
	case c.KMax < 1 || c.KMax > 64:
		return c, usagef("-k_max must be in [1, 64], got %d", c.KMax)
	case !(c.OverfillP > 0 && c.OverfillP < 1):
		return c, usagef("-overfill_rate must be in (0, 1), got %v", c.OverfillP)
	}
	if err := checkProgress(c.Progress); err != nil {
		return c, err
	}
	slices.Sort(c.Overfill)
	return c, nil
}

// filterLabReport is the -json document of lsmbench filters.
type filterLabReport struct {
	Schema   string           `json:"schema"`
	Config   *filterLabConfig `json:"config"`
	Sweep    []sweepRow       `json:"sweep,omitempty"`
	KSweep   *kSweep          `json:"k_sweep,omitempty"`
	Overfill *overfill        `json:"overfill,omitempty"`
	Levels   *levelsResult    `json:"levels,omitempty"`
	labFiles
}

func runFilters(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFilterFlags(args, stderr)
	if err != nil {
		return err
	}
	lab := &filterLab{cfg: c, ctx: ctx, prog: newProgress(c.Progress, c.JSON, stdout, stderr)}
	rep := &filterLabReport{Schema: "sieve.lsmbench.filters.v1", Config: &lab.cfg, labFiles: labFiles{Files: []string{}}}
	return runLab(ctx, stdout, labSpec{
		name: "filters", out: &lab.cfg.labOutput, sections: c.Sections,
		prepare: lab.makeKeys,
		header: func(w io.Writer) {
			fmt.Fprintf(w, "filter lab: %s keys of %d B per filter, %s absent keys probed per filter\n\n",
				commas(int64(c.N)), c.KeySize, commas(int64(c.Probes)))
		},
		section: func(s string) (func(io.Writer), error) {
			var err error
			switch s {
			case "sweep":
				rep.Sweep, err = lab.sweep()
				return func(w io.Writer) { printSweep(w, rep.Sweep) }, err
			case "k":
				rep.KSweep = lab.kSweep()
				return func(w io.Writer) { printKSweep(w, rep.KSweep) }, nil
			case "overfill":
				rep.Overfill, err = lab.overfill()
				return func(w io.Writer) { printOverfill(w, rep.Overfill) }, err
			case "levels":
				rep.Levels, err = lab.levels()
				return func(w io.Writer) { printLevels(w, rep.Levels) }, err
			}
			return nil, nil
		},
		write:  func(dir string) ([]string, error) { return writeFilterFiles(dir, rep) },
		report: rep, tail: &rep.labFiles,
	})
}

func filtersUsage(w io.Writer) {
	c := defaultFilterLabConfig()
	printUsage(w, `usage: lsmbench filters [flags]

The filter laboratory (no database): a sweep of policies × bits/key on n keys
(measured FPR and its 95% interval beside theory, bytes/key, build and probe
cost), a k-sweep of a classic Bloom filter at fixed m/n, and the overfill
experiment. Writes filters_*.csv and fpr_vs_bits.svg, fpr_vs_k.svg,
overfill.svg to -out.

Flags:
`, newFilterFlags(&c, w), "")
}
