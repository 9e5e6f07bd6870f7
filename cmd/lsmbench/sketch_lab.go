package main

import (
	"context"
	"flag"
	"io"
	"slices"
)

// lsmbench sketches: the sketch laboratory, on the values of the sketch
// column family (sketchcol) and the filter package's standalone filters:
//
//   - memory: what remembering n IDs costs in each structure at rate p
//     (exact set, sorted array, Bloom, cuckoo, bitmap, HyperLogLog), the
//     table of DESIGN.md for the user's own n and p;
//   - bloom: a plain Bloom filter filling past its capacity, beside
//     sketchcol's scalable Bloom value (RedisBloom's stacking) and its
//     non-scaling variant (which refuses);
//   - cuckoo: a fixed cuckoo filter filling up to ErrFull, then deleting
//     half its keys; sketchcol's scalable cuckoo value growing;
//   - hll: HyperLogLog relative error against cardinality, with the 0.81%
//     standard-error band;
//   - store: the three sketches written through the sketch column family
//     (sketchcol.Store) into a temporary database and compacted: stored
//     bytes, equality with the in-memory values, ingest rate, answers;
//   - counters: Count-Min and Top-K memory and accuracy on a Zipfian
//     stream, and CMS.INCRBY/TOPK.ADD through the Store, replied against
//     blind (sketch_counters.go).
//
// The first four sections exercise the values directly, without a
// database; the engine benchmarks pfadd and bfadd (lsmbench -benchmarks)
// measure the Store under load.

type sketchLabConfig struct {
	N         int      `json:"n"`
	Rate      float64  `json:"rate"`
	Capacity  int      `json:"capacity"`
	Probes    int      `json:"probes"`
	KeySize   int      `json:"key_size"`
	HLLMax    int      `json:"hll_max"`
	HLLTrials int      `json:"hll_trials"`
	Sections  []string `json:"sections"`
	labOutput
}

var sketchSections = []string{"memory", "bloom", "cuckoo", "hll", "store", "counters"}

func defaultSketchLabConfig() sketchLabConfig {
	return sketchLabConfig{N: 100_000_000, Rate: 0.01, Capacity: 100_000, Probes: 1_000_000, KeySize: 16,
		HLLMax: 1_000_000, HLLTrials: 20, Sections: slices.Clone(sketchSections),
		labOutput: labOutput{Progress: "auto"}}
}

func newSketchFlags(c *sketchLabConfig, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lsmbench sketches", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Var((*countFlag)(&c.N), "n", "distinct IDs for the memory table (`n`)")
	fs.Float64Var(&c.Rate, "p", c.Rate, "false-positive `rate` the filters are sized for")
	fs.Var((*countFlag)(&c.Capacity), "capacity", "capacity of the Bloom and cuckoo values that are filled (`n`)")
	fs.Var((*countFlag)(&c.Probes), "probes", "absent keys probed per measurement (`n`)")
	fs.IntVar(&c.KeySize, "key_size", c.KeySize, "ID size in `bytes` (>= 8)")
	fs.Var((*countFlag)(&c.HLLMax), "hll_max", "largest cardinality of the HLL sweep (`n`)")
	fs.IntVar(&c.HLLTrials, "hll_trials", c.HLLTrials, "independent HLL sketches per cardinality (`n`)")
	fs.Func("sections", "`list` of experiments: memory, bloom, cuckoo, hll, store, counters (default all)", func(s string) error {
		return setList(&c.Sections, s, sketchSections)
	})
	c.labOutput.flags(fs)
	return fs
}

func parseSketchFlags(args []string, out io.Writer) (sketchLabConfig, error) {
	c := defaultSketchLabConfig()
	fs := newSketchFlags(&c, out)
	if err := c.labOutput.parse(fs, args); err != nil {
		return c, err
	}
	switch {
	case c.N < 1:
		return c, usagef("-n must be at least 1")
	case !(c.Rate > 0 && c.Rate < 1):
		return c, usagef("-p must be in (0, 1), got %v", c.Rate)
	case c.Capacity < 100:
		return c, usagef("-capacity must be at least 100")
	case c.Probes < 1:
		return c, usagef("-probes must be at least 1")
	case c.KeySize < 8 || c.KeySize > 1<<16:
		return c, usagef("-key_size must be in [8, 65536], got %d", c.KeySize)
	case c.HLLMax < 1:
		return c, usagef("-hll_max must be at least 1")
	case c.HLLTrials < 1 || c.HLLTrials > 10000:
		return c, usagef("-hll_trials must be in [1, 10000], got %d", c.HLLTrials)
	}
	return c, checkProgress(c.Progress)
}

// sketchLabReport is the -json document of lsmbench sketches.
type sketchLabReport struct {
	Schema string           `json:"schema"`
	Config *sketchLabConfig `json:"config"`
	Memory []memoryRow      `json:"memory,omitempty"`
	Bloom  *bloomScaling    `json:"bloom,omitempty"`
	Cuckoo *cuckooLoad      `json:"cuckoo,omitempty"`
	HLL    *hllSweep        `json:"hll,omitempty"`
	Store  *storeRun        `json:"store,omitempty"`
	// Counters is Count-Min and Top-K (sketch_counters.go).
	Counters *countersRun `json:"counters,omitempty"`
	// Missing lists what the lab cannot measure yet (nothing now; kept
	// for the schema).
	Missing []string `json:"not_yet_available"`
	labFiles
}

func runSketches(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseSketchFlags(args, stderr)
	if err != nil {
		return err
	}
	lab := &sketchLab{cfg: c, ctx: ctx, prog: newProgress(c.Progress, c.JSON, stdout, stderr)}
	rep := &sketchLabReport{Schema: "sieve.lsmbench.sketches.v1", Config: &lab.cfg, Missing: []string{},
		labFiles: labFiles{Files: []string{}}}
	return runLab(ctx, stdout, labSpec{
		name: "sketches", out: &lab.cfg.labOutput, sections: c.Sections,
		section: func(s string) (func(io.Writer), error) {
			var err error
			switch s {
			case "memory":
				rep.Memory = lab.memory()
				return func(w io.Writer) { printMemory(w, &lab.cfg, rep.Memory) }, nil
			case "bloom":
				rep.Bloom, err = lab.bloomScaling()
				return func(w io.Writer) { printBloomScaling(w, rep.Bloom) }, err
			case "cuckoo":
				rep.Cuckoo, err = lab.cuckooLoad()
				return func(w io.Writer) { printCuckooLoad(w, rep.Cuckoo) }, err
			case "hll":
				rep.HLL = lab.hllSweep()
				return func(w io.Writer) { printHLL(w, rep.HLL) }, nil
			case "store":
				rep.Store, err = lab.storeSketches()
				return func(w io.Writer) { printStore(w, rep.Store) }, err
			case "counters":
				rep.Counters, err = lab.counters()
				return func(w io.Writer) { printCounters(w, rep.Counters) }, err
			}
			return nil, nil
		},
		write:  func(dir string) ([]string, error) { return writeSketchFiles(dir, rep) },
		report: rep, tail: &rep.labFiles,
	})
}

func sketchesUsage(w io.Writer) {
	c := defaultSketchLabConfig()
	printUsage(w, `usage: lsmbench sketches [flags]

The sketch laboratory: memory per structure for n IDs at rate p; Bloom values
past capacity (a plain filter drifts, sketchcol's scalable value stacks,
a non-scaling one refuses); cuckoo values to ErrFull, deleting, and growing;
HyperLogLog relative error against cardinality with the 0.81% band; the same
sketches written through the sketch column family (sketchcol.Store) into a
temporary database and compacted; Count-Min and Top-K memory and accuracy on
a Zipfian stream, and CMS.INCRBY/TOPK.ADD throughput replied against blind.
Writes CSV and SVG to -out.

Flags:
`, newSketchFlags(&c, w), "")
}
