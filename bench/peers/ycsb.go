package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The ycsb mode: YCSB's core workloads A–F (Cooper et al., "Benchmarking
// Cloud Serving Systems with YCSB", SoCC 2010) on every engine, in one
// process, on identical operation sequences.

// ycsbWorkload is one core workload's operation mix.
type ycsbWorkload struct {
	name                            string
	read, update, insert, scan, rmw float64
	// latest: records are chosen by skewedLatest (D) instead of the
	// scrambled zipfian.
	latest bool
	desc   string
}

var ycsbWorkloads = []ycsbWorkload{
	{name: "A", read: 0.5, update: 0.5, desc: "50% read, 50% update"},
	{name: "B", read: 0.95, update: 0.05, desc: "95% read, 5% update"},
	{name: "C", read: 1, desc: "100% read"},
	{name: "D", read: 0.95, insert: 0.05, latest: true, desc: "95% read latest, 5% insert"},
	{name: "E", scan: 0.95, insert: 0.05, desc: "95% scan (1..max entries), 5% insert"},
	{name: "F", read: 0.5, rmw: 0.5, desc: "50% read, 50% read-modify-write"},
}

type ycsbOptions struct {
	engines, workloads, baseline, dir, jsonFile string
	// cpuprof: a CPU profile of the phases of the workloads in profWls
	// (all when empty), each engine's clients labeled engine=<name>,
	// workload=<name> (go tool pprof -tagfocus=engine=sieve).
	cpuprof, profWls string
	// compactBefore lists workloads before which every engine flushes and
	// compacts (to measure the shape's share of a workload's cost).
	compactBefore                          string
	n, ops, threads, rounds, bits, scanMax int
	cacheMiB, theta                        float64
	seed                                   uint64
	keep, compact                          bool
	// roundsDetail: print each round's throughput and CPU, and the
	// engine's shape before it, to stderr.
	roundsDetail bool
	// warmup: untimed point reads before each round, as a fraction of
	// the round's operations (ycsbRun.warm).
	warmup float64
}

func parseYCSBFlags(args []string) (ycsbOptions, error) {
	var o ycsbOptions
	fs := flag.NewFlagSet("peers ycsb", flag.ContinueOnError)
	fs.StringVar(&o.engines, "engines", "sieve,pebble,goleveldb,badger", "engines (comma list; the -l6f variants are refused: their Get reads a reused iterator's snapshot)")
	fs.StringVar(&o.workloads, "workloads", "A,B,C,F,D,E", "workloads in the order they run on the same database (YCSB's recommended order)")
	fs.StringVar(&o.baseline, "baseline", "pebble", "engine the ratios are relative to")
	fs.StringVar(&o.dir, "dir", "", "parent directory of the databases (default: a new temp dir)")
	fs.StringVar(&o.jsonFile, "json", "", "also write the results as JSON to this file")
	fs.IntVar(&o.n, "n", 1000000, "records loaded (recordcount)")
	fs.IntVar(&o.ops, "ops", 200000, "operations per workload and engine (operationcount)")
	fs.IntVar(&o.threads, "threads", 1, "client goroutines per engine")
	fs.IntVar(&o.rounds, "rounds", 5, "chunks each workload is split into, run in rotating engine order")
	fs.Float64Var(&o.warmup, "warmup", 0, "untimed point reads before each round, as a fraction of the round's operations (the other engines' rounds leave this one's caches out of the CPU caches)")
	fs.IntVar(&o.bits, "bits", 10, "Bloom filter bits per key for every engine")
	fs.IntVar(&o.scanMax, "scan-max", 100, "longest scan of workload E (maxscanlength; lengths uniform in 1..max)")
	fs.Float64Var(&o.cacheMiB, "cache-mib", 8, "block cache MiB for every engine")
	fs.Float64Var(&o.theta, "zipf", ycsbZipfianConstant, "zipfian constant of workload D's latest distribution (A-C, E, F use YCSB's scrambled zipfian at 0.99)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the load order and of every operation sequence")
	fs.BoolVar(&o.keep, "keep", false, "keep the databases")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write a CPU profile of the workload phases (see -cpuprofile-workloads) to this file; samples are labeled engine=<name> and workload=<name> (go tool pprof -tagfocus=engine=sieve)")
	fs.StringVar(&o.compactBefore, "compact-before", "", "workloads before which every engine flushes and compacts (comma list, e.g. E: E reads what A-D left, fully compacted; the compaction counts in no workload)")
	fs.StringVar(&o.profWls, "cpuprofile-workloads", "", "workloads whose phases -cpuprofile covers (comma list; default all): the profile starts with the first and stops after the last")
	fs.BoolVar(&o.roundsDetail, "rounds-detail", false, "print each engine's shape before every round and the round's ops/s and CPU µs/op to stderr (how a workload's cost moves as compactions run: E's first round pays the seek-triggered compaction of what A-D left in L0)")
	fs.BoolVar(&o.compact, "compact", false, "flush and compact after the load (default: the workloads see the LSM as the load left it)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.n < 1 || o.ops < 1 || o.threads < 1 || o.rounds < 1 || o.scanMax < 1 {
		return o, errors.New("-n, -ops, -threads, -rounds and -scan-max must be positive")
	}
	if o.warmup < 0 || o.warmup > 10 {
		return o, errors.New("-warmup must be in [0, 10]")
	}
	if o.theta <= 0 || o.theta >= 1 {
		return o, errors.New("-zipf must be in (0, 1)")
	}
	return o, nil
}

// ycsbRun is one engine's state and figures in a ycsb run.
type ycsbRun struct {
	Name     string `json:"name"`
	Describe string `json:"describe"`
	Load     cost   `json:"load"`
	Shape    string `json:"shape_after_load"`
	ShapeEnd string `json:"shape_at_end"`
	// ShapeBefore is the shape after the compaction -compact-before ran
	// before each workload it names.
	ShapeBefore map[string]string      `json:"shape_after_compact_before,omitempty"`
	Results     map[string]*ycsbResult `json:"workloads"`
	info        engineInfo
	eng         Engine
	readers     []Reader
	// records is the number of records that may be chosen: the loaded
	// ones and those inserted since.
	records atomic.Int64
}

type ycsbResult struct {
	Ops     int64              `json:"ops"`
	Cost    cost               `json:"cost"`
	Counts  map[string]int64   `json:"op_counts"`
	Wrong   int64              `json:"wrong_results"`
	Latency map[string]float64 `json:"latency_us"`
	Stats   map[string]int64   `json:"engine_counters"`
	// Settle is the time the engine's background flushes and
	// compactions ran on after the workload's rounds (settle), outside
	// every figure.
	Settle float64 `json:"settle_seconds"`
}

func runYCSBCmd(args []string, w io.Writer) error {
	o, err := parseYCSBFlags(args)
	if err != nil {
		return err
	}
	infos, wls, err := ycsbSelect(o)
	if err != nil {
		return err
	}
	parent, cleanup, err := benchDir(options{dir: o.dir, keep: o.keep}, infos)
	if err != nil {
		return err
	}
	defer cleanup()
	start := time.Now()
	cfg := Config{CacheBytes: int64(o.cacheMiB * (1 << 20)), BitsPerKey: o.bits}
	vals := newValues(o.seed)
	order := rand.New(rand.NewPCG(o.seed, 0x10ad)).Perm(o.n)
	runs := make([]*ycsbRun, len(infos))
	for i, info := range infos {
		runs[i] = &ycsbRun{Name: info.name, info: info, Results: map[string]*ycsbResult{}}
		fmt.Fprintf(os.Stderr, "%s: load %d records\n", info.name, o.n)
		if err := runs[i].load(filepath.Join(parent, info.name), cfg, o, order, vals); err != nil {
			return fmt.Errorf("%s: %w", info.name, err)
		}
	}
	prof := &ycsbProfiler{file: o.cpuprof, only: o.profWls}
	for _, wl := range wls {
		if err := compactBefore(runs, wl, o); err != nil {
			return err
		}
		if err := prof.around(wl.name, wls, func() error { return runYCSBWorkload(runs, wl, o, vals) }); err != nil {
			prof.stop()
			return err
		}
	}
	if err := prof.stop(); err != nil {
		return err
	}
	for _, r := range runs {
		r.ShapeEnd = r.eng.Shape()
		for _, rd := range r.readers {
			rd.Close()
		}
		if err := r.eng.Close(); err != nil {
			return fmt.Errorf("%s: close: %w", r.Name, err)
		}
	}
	rep := &ycsbReport{Opts: o, Command: "peers ycsb " + strings.Join(args, " "), Workloads: wls, Engines: runs,
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel(),
		Started: start.UTC().Format(time.RFC3339), TotalSeconds: time.Since(start).Seconds()}
	rep.write(w)
	if o.jsonFile != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(o.jsonFile, append(data, '\n'), 0o644)
	}
	return nil
}

// ycsbSelect resolves -engines and -workloads.
func ycsbSelect(o ycsbOptions) ([]engineInfo, []ycsbWorkload, error) {
	infos, err := selectEngines(o.engines)
	if err != nil {
		return nil, nil, err
	}
	found := false
	for _, e := range infos {
		if strings.HasSuffix(e.name, "-l6f") {
			return nil, nil, fmt.Errorf("%s: its Get reads a reused iterator's snapshot, which would not see the workloads' writes; use pebble", e.name)
		}
		found = found || e.name == o.baseline
	}
	if !found {
		return nil, nil, fmt.Errorf("baseline %q is not among the engines", o.baseline)
	}
	var wls []ycsbWorkload
	for _, name := range strings.Split(o.workloads, ",") {
		i := slices.IndexFunc(ycsbWorkloads, func(w ycsbWorkload) bool { return strings.EqualFold(w.name, strings.TrimSpace(name)) })
		if i < 0 {
			return nil, nil, fmt.Errorf("unknown workload %q (A-F)", name)
		}
		wls = append(wls, ycsbWorkloads[i])
	}
	return infos, wls, nil
}

// load opens the engine in dir and inserts the n records in order (then
// flushes and compacts with -compact), leaving it open with a reader per
// client goroutine.
func (r *ycsbRun) load(dir string, cfg Config, o ycsbOptions, order []int, vals *values) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	r.eng = r.info.ctor()
	if err := r.eng.Open(dir, cfg); err != nil {
		return err
	}
	r.Describe = r.eng.Describe()
	runtime.GC()
	a := takeSample()
	var key []byte
	for _, i := range order {
		key = presentKey(key, i)
		if err := r.eng.Put(key, vals.value(i)); err != nil {
			return fmt.Errorf("put: %w", err)
		}
	}
	if o.compact {
		if err := r.eng.FlushCompact(); err != nil {
			return fmt.Errorf("flush+compact: %w", err)
		}
	}
	r.Load.add(a, takeSample())
	r.Shape = r.eng.Shape()
	r.records.Store(int64(o.n))
	for range o.threads {
		rd, err := r.eng.NewReader()
		if err != nil {
			return err
		}
		r.readers = append(r.readers, rd)
	}
	return nil
}

// runYCSBWorkload runs wl on every engine in -rounds interleaved rounds;
// every engine gets the same operation sequence (the same seeds per round
// and client).
func runYCSBWorkload(runs []*ycsbRun, wl ycsbWorkload, o ycsbOptions, vals *values) error {
	fmt.Fprintf(os.Stderr, "workload %s (%s): %d ops in %d rounds, %d clients\n", wl.name, wl.desc, o.ops, o.rounds, o.threads)
	scrambled := newZipfianZeta(scrambledItems, ycsbZipfianConstant, scrambledZeta)
	latest := newZipfian(o.n, o.theta)
	lat := make([][][]int64, len(runs))
	scrambledFor := make([]scrambledZipfian, len(runs))
	for i, r := range runs {
		r.Results[wl.name] = &ycsbResult{Counts: map[string]int64{}, Stats: map[string]int64{}}
		scrambledFor[i] = newScrambledZipfian(scrambled, &r.records, int(float64(o.ops)*wl.insert))
	}
	for round := 0; round < o.rounds; round++ {
		ops := o.ops*(round+1)/o.rounds - o.ops*round/o.rounds
		for k := range runs {
			i := (k + round) % len(runs)
			r := runs[i]
			var ch chooser = scrambledFor[i]
			if wl.latest {
				ch = skewedLatest{latest, &r.records}
			}
			runtime.GC()
			if o.roundsDetail {
				fmt.Fprintf(os.Stderr, "  %s %s round %d: before: %s\n", r.Name, wl.name, round, r.eng.Shape())
			}
			if err := r.warm(ch, int(float64(ops)*o.warmup), uint64(round), o, vals); err != nil {
				return fmt.Errorf("%s: workload %s: warm-up: %w", r.Name, wl.name, err)
			}
			before := r.eng.Stats()
			a := takeSample()
			l, err := r.runClients(wl, ch, ops, uint64(round), o, vals)
			b := takeSample()
			if err != nil {
				return fmt.Errorf("%s: workload %s: %w", r.Name, wl.name, err)
			}
			res := r.Results[wl.name]
			// The flushes and compactions the round's writes started
			// finish before the next engine's round, outside both.
			res.Settle += settle(r.eng).Seconds()
			if o.roundsDetail {
				var c cost
				c.add(a, b)
				fmt.Fprintf(os.Stderr, "  %s %s round %d: %d ops, %.1fk ops/s, cpu %.2f µs/op, %.3f page faults/op\n", r.Name, wl.name, round, ops, float64(ops)/c.Seconds/1e3, c.CPUSeconds*1e6/float64(ops), float64(c.Faults)/float64(ops))
			}
			res.Cost.add(a, b)
			res.Ops += int64(ops)
			for name, v := range r.eng.Stats() {
				res.Stats[name] += v - before[name]
			}
			lat[i] = append(lat[i], l...)
		}
	}
	for i, r := range runs {
		r.Results[wl.name].Latency = percentiles(lat[i])
	}
	return nil
}

// runClients runs ops operations of wl split over -threads goroutines and
// returns each client's per-op latencies (ns).
func (r *ycsbRun) runClients(wl ycsbWorkload, ch chooser, ops int, round uint64, o ycsbOptions, vals *values) ([][]int64, error) {
	res := r.Results[wl.name]
	lat := make([][]int64, o.threads)
	errs := make([]error, o.threads)
	counts := make([]map[string]int64, o.threads)
	wrong := make([]int64, o.threads)
	var wg sync.WaitGroup
	for th := range o.threads {
		n := ops*(th+1)/o.threads - ops*th/o.threads
		c := &ycsbClient{r: r, rd: r.readers[th], wl: wl, ch: ch, o: o, vals: vals, counts: map[string]int64{},
			rng: rand.New(rand.NewPCG(o.seed^0x9c5b, round<<16|uint64(th)<<8|uint64(wl.name[0])))}
		wg.Add(1)
		go pprof.Do(context.Background(), pprof.Labels("engine", r.Name, "workload", wl.name), func(context.Context) {
			defer wg.Done()
			lat[th], errs[th] = c.run(n)
			counts[th], wrong[th] = c.counts, c.wrong
		})
	}
	wg.Wait()
	for th := range o.threads {
		for k, v := range counts[th] {
			res.Counts[k] += v
		}
		res.Wrong += wrong[th]
	}
	return lat, errors.Join(errs...)
}

// warm runs n point reads of records drawn from ch, untimed and counted
// nowhere, before a round: the engines share one process, and the rounds
// of the others (hundreds of MiB of their own caches and tables) leave
// this engine's block cache, filters, indexes and memtable out of the CPU
// caches. Without it a round's first thousands of operations re-fetch
// them from memory, a fixed cost that is a larger share of a faster
// engine's shorter round. Reads only: the database, the record count and
// the operation sequence of the timed round are unchanged, and no seek
// is charged (sieve's seek-triggered flushes and compactions stay in the
// timed operations).
func (r *ycsbRun) warm(ch chooser, n int, round uint64, o ycsbOptions, vals *values) error {
	if n <= 0 {
		return nil
	}
	c := &ycsbClient{r: r, rd: r.readers[0], ch: ch, o: o, vals: vals, counts: map[string]int64{},
		rng: rand.New(rand.NewPCG(o.seed^0x3a7d, round))}
	for range n {
		if err := c.read(c.ch.next(c.rng)); err != nil {
			return err
		}
	}
	return nil
}

// ycsbClient is one client goroutine.
type ycsbClient struct {
	r        *ycsbRun
	rd       Reader
	wl       ycsbWorkload
	ch       chooser
	o        ycsbOptions
	vals     *values
	rng      *rand.Rand
	key, val []byte
	counts   map[string]int64
	wrong    int64
}

func (c *ycsbClient) run(n int) ([]int64, error) {
	lat := make([]int64, 0, n)
	for range n {
		op := c.pick()
		t0 := time.Now()
		if err := c.do(op); err != nil {
			return lat, fmt.Errorf("%s: %w", op, err)
		}
		lat = append(lat, int64(time.Since(t0)))
		c.counts[op]++
	}
	return lat, nil
}

// pick draws the next operation from the workload's mix.
func (c *ycsbClient) pick() string {
	u, wl := c.rng.Float64(), c.wl
	switch {
	case u < wl.read:
		return "read"
	case u < wl.read+wl.update:
		return "update"
	case u < wl.read+wl.update+wl.insert:
		return "insert"
	case u < wl.read+wl.update+wl.insert+wl.scan:
		return "scan"
	}
	return "readmodifywrite"
}

func (c *ycsbClient) do(op string) error {
	switch op {
	case "read":
		return c.read(c.ch.next(c.rng))
	case "update":
		i := c.ch.next(c.rng)
		c.key = presentKey(c.key, i)
		return c.r.eng.Put(c.key, c.vals.value(i+1+c.rng.IntN(numValues-1)))
	case "insert":
		// The record becomes choosable once written (records counts it).
		i := int(c.r.records.Load())
		c.key = presentKey(c.key, i)
		if err := c.r.eng.Put(c.key, c.vals.value(i)); err != nil {
			return err
		}
		c.r.records.CompareAndSwap(int64(i), int64(i+1))
		return nil
	case "scan":
		return c.scan(c.ch.next(c.rng), 1+c.rng.IntN(c.o.scanMax))
	}
	i := c.ch.next(c.rng)
	if err := c.read(i); err != nil {
		return err
	}
	return c.r.eng.Put(c.key, c.vals.value(i+1+c.rng.IntN(numValues-1)))
}

// read gets record i; a loaded record that is missing is a wrong result.
func (c *ycsbClient) read(i int) error {
	c.key = presentKey(c.key, i)
	var found bool
	var err error
	if c.val, found, err = c.rd.Get(c.key, c.val); err != nil {
		return err
	}
	if !found && i < c.o.n {
		c.wrong++
	}
	return nil
}

// scan reads up to length records from record i on, with a new iterator
// (a scan sees the latest writes, as YCSB's bindings do).
func (c *ycsbClient) scan(i, length int) error {
	it, err := c.r.eng.NewIterator()
	if err != nil {
		return err
	}
	c.key = presentKey(c.key, i)
	ok := it.Seek(c.key)
	if !ok && i < c.o.n {
		c.wrong++
	}
	for j := 0; ok && j < length; j++ {
		c.val = append(c.val[:0], it.Value()...)
		if j+1 < length {
			ok = it.Next()
		}
	}
	return it.Close()
}

// percentiles summarizes per-op latencies (ns) in µs.
func percentiles(lat [][]int64) map[string]float64 {
	var all []int64
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return nil
	}
	slices.Sort(all)
	at := func(q float64) float64 { return float64(all[min(len(all)-1, int(q*float64(len(all))))]) / 1e3 }
	return map[string]float64{"p50": at(0.50), "p99": at(0.99), "p99.9": at(0.999), "max": at(1)}
}
