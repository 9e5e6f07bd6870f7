package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/sievedb/sieve"
)

// runBench is the engine benchmark: parse flags, open the database, run
// the benchmarks in order, report. It returns a *usageError for bad flags
// and errFailed when a benchmark failed (the report says which).
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseBenchFlags(args, stderr)
	if err != nil {
		return err
	}
	dir, cleanup, err := prepareDir(&cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	db, err := sieve.Open(dir, cfg.options())
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	cpuStart := cpuTime()
	rep := &benchReport{
		Schema: jsonSchema, Config: &cfg, Policy: cfg.policy().Name(),
		Env: newEnv(dir, cfg.DB != ""), Results: []result{},
	}
	text := !cfg.JSON && !cfg.CSV
	tr := textReport{w: stdout}
	if text {
		tr.header(&cfg, rep.Env, rep.Policy)
	}
	b := &bench{
		cfg: cfg, db: db, ks: keyspace{num: cfg.Num, keySize: cfg.KeySize}, ctx: ctx,
		prog: newProgress(cfg.Progress, !text, stdout, stderr), clockNs: rep.Env.ClockCostNs,
	}
	stopProfile, err := startCPUProfile(cfg.CPUProfile)
	if err != nil {
		db.Close()
		return err
	}
	for _, name := range cfg.Benchmarks {
		if ctx.Err() != nil {
			break
		}
		r := b.run(name)
		rep.Failed = rep.Failed || r.Error != ""
		rep.Results = append(rep.Results, r)
		if text {
			tr.result(&r)
		}
	}
	stopProfile()
	m := db.Metrics()
	rep.LSM = shapeOf(m)
	rep.WallSeconds = time.Since(rep.Env.Started).Seconds()
	rep.Env.CPUSeconds = (cpuTime() - cpuStart).Seconds()
	rep.Env.LoadAvgEnd = loadAverage()
	if err := db.Close(); err != nil {
		rep.Failed = true
		fmt.Fprintf(stderr, "lsmbench: close: %v\n", err)
	}
	err = rep.write(&cfg, tr, m)
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case rep.Failed:
		return errFailed
	}
	return nil
}

// write writes the finished report in the format cfg asks for: JSON, CSV,
// or the text footer (the LSM's shape, the metrics with -stats, the wall and
// CPU time) under the header and results tr has written.
func (rep *benchReport) write(cfg *config, tr textReport, m *sieve.Metrics) error {
	switch {
	case cfg.JSON:
		return writeJSON(tr.w, rep)
	case cfg.CSV:
		return writeCSV(tr.w, rep.Results)
	}
	stats := ""
	if cfg.Stats {
		stats = m.String()
	}
	tr.footer(rep.LSM, stats)
	fmt.Fprintf(tr.w, "\nwall time %s, CPU time %s, load average %.1f at the end\n",
		seconds(rep.WallSeconds), seconds(rep.Env.CPUSeconds), rep.Env.LoadAvgEnd)
	if warn := busyWarning(rep.Env.LoadAvgEnd); warn != "" {
		fmt.Fprintf(tr.w, "warning: %s\n", warn)
	}
	return nil
}

// startCPUProfile starts a CPU profile into path ("" for none) and returns
// the function that ends it.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

var errFailed = errors.New("a benchmark failed (see the report)")

func newEnv(dir string, kept bool) *envInfo {
	return &envInfo{
		Version:   "1",
		GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Started: time.Now(), ClockCostNs: clockCost(), DBDir: dir, DBKept: kept,
		LoadAvgStart: loadAverage(),
	}
}

// prepareDir returns the database directory and what to do with it at the
// end. Without -db it is a new temporary directory, removed at the end.
// With -db it is kept; it must be new or empty unless -use_existing_db, so
// that a benchmark never mixes into (or clobbers) data it did not write.
func prepareDir(c *config) (dir string, cleanup func(), err error) {
	if c.DB == "" {
		dir, err := os.MkdirTemp("", "lsmbench-")
		if err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	entries, err := os.ReadDir(c.DB)
	switch {
	case c.UseExistingDB && err != nil:
		return "", nil, fmt.Errorf("-use_existing_db: %w", err)
	case !c.UseExistingDB && err == nil && len(entries) > 0:
		return "", nil, usagef("-db %s is not empty: pass -use_existing_db to benchmark the database in it, or name a new directory", c.DB)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", nil, err
	}
	return c.DB, func() {}, nil
}
