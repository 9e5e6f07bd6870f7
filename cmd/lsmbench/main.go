// Command lsmbench is sieve's benchmark and filter laboratory.
//
//	lsmbench [flags]            db_bench-style engine benchmark (default: 1M keys,
//	                            fillrandom, compact, readrandom, readmissing, seekrandom)
//	lsmbench filters [flags]    filter lab: FPR vs bits/key, FPR vs k, overfill;
//	                            tables, CSV and SVG charts
//	lsmbench sketches [flags]   sketch lab: memory per structure, Bloom/cuckoo
//	                            values as they fill and scale
//
// Every point-lookup benchmark reports its read amplification from the
// engine's own counters: tables probed per Get, filter negatives and false
// positives (the measured false-positive rate beside the policy's
// theoretical one), data blocks read and the block-cache hit rate. Run
// "lsmbench -h", "lsmbench filters -h" or "lsmbench sketches -h" for flags;
// cmd/lsmbench/README.md in the repository has examples of each.
package main

// Where things are: each program's files carry its prefix, bench_*.go the
// engine benchmark, filter_*.go the filter lab, sketch_*.go the sketch
// lab. lab.go is the skeleton both labs run on (-out, -json, -progress,
// sections, files); the unprefixed rest is shared by all three (flag
// parsing and usage, keys, number formats, statistics, progress bars, the
// machine's load, SVG charts).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program behind main, for tests: it returns the exit
// status (0 ok, 1 a benchmark or the run failed, 2 bad usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, usage := runBench, benchUsage
	if len(args) > 0 {
		switch args[0] {
		case "filters":
			cmd, usage, args = runFilters, filtersUsage, args[1:]
		case "sketches":
			cmd, usage, args = runSketches, sketchesUsage, args[1:]
		case "help":
			benchUsage(stdout)
			return 0
		}
	}
	err := cmd(ctx, args, stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "lsmbench: %v\n\n", err)
		usage(stderr)
		return 2
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "lsmbench: interrupted")
		return 1
	}
	fmt.Fprintf(stderr, "lsmbench: %v\n", err)
	return 1
}

func benchUsage(w io.Writer) {
	c := defaultConfig()
	printUsage(w, `usage: lsmbench [flags]            engine benchmark (db_bench style)
       lsmbench filters [flags]    filter lab (FPR vs bits/key, vs k, overfill; CSV + SVG)
       lsmbench sketches [flags]   sketch lab (memory per structure, Bloom/cuckoo values)

With no flags: 1,000,000 keys of 16 B with 100 B values in a temporary
directory; fillrandom, flush + compact, readrandom, readmissing, seekrandom.
Present keys are even numbers and missing keys odd ones, both scrambled, so
readmissing asks only for keys that were never written.

Benchmarks (-benchmarks, run in the order given):
  fillseq fillrandom overwrite   writes (every key once in key order / in random order; -num random puts)
  flush compact                  steps: flush the memtable; flush, then compact everything
  readrandom readmissing readhot Gets of present keys / never-written keys / a hot 1% of the keys
  seekrandom scan                SeekGE + -seek_nexts Nexts; forward walk of -reads entries
  pfadd bfadd                    -num PFAdds / BFAdds of one element through the sketch column family
                                 (sketchcol.Store; blind unless -sketch_reply), checked after

Flags:
`, newBenchFlags(&c, w), `
Examples:
  lsmbench -num=100k -benchmarks=fillseq,readrandom,readmissing -filter=cuckoo -fingerprint_bits=12
  lsmbench -db=/tmp/b -benchmarks=fillrandom,compact && lsmbench -db=/tmp/b -use_existing_db -benchmarks=readhot -threads=2
  lsmbench -json > run.json
`)
}
