package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The scaling mode: Gets of present keys from 1, 2, ... reader goroutines
// on the same database in the same run (read scaling; the reader counts
// take turns round by round, so that a host that speeds up or slows down
// during the run moves every count's Gets alike), then one reader
// while one writer goroutine rewrites the loaded keys as fast as it can
// (read latency under a write load), engines taking turns in rotating
// rounds; and again with the writer paced at -writer-rate Puts a second,
// the same load for every engine (an engine whose writer is faster also
// makes more flush and compaction work compete with its reader on the
// flat-out phase, which the paced one factors out).
//
// With -twin (the default) every engine is also opened a second time on a
// copy of its loaded database, and each round of a phase of two or more
// readers runs once more with the readers split over the two instances
// (reader i on instance i mod 2): the same reads, the same machine, the
// same moment, but no state of one open database (its read state, table
// cache, block cache, counters) written by both readers. Its ratio over
// one reader is the engine's read scaling without that sharing; the gap to
// the one-instance ratio is what the sharing costs.

type scalingOptions struct {
	engines, baseline, dir, threads string
	n, reads, rounds, writerRate    int
	cacheMiB                        float64
	compact, twin                   bool
	seed                            uint64
}

// scalingResult is one engine's figures in one phase.
type scalingResult struct {
	Phase   string             `json:"phase"`
	Threads int                `json:"reader_threads"`
	Ops     int64              `json:"reads"`
	Cost    cost               `json:"cost"`
	Lat     map[string]float64 `json:"read_latency_us"`
	Writes  int64              `json:"writes"`
	// Settle is the time the engine's background flushes and
	// compactions ran on after the writer's rounds (settle), outside
	// every phase's figures.
	Settle float64 `json:"settle_seconds"`
	Wrong  int64   `json:"wrong_results"`
	lat    [][]int64
}

func parseScalingFlags(args []string) (scalingOptions, []int, error) {
	var o scalingOptions
	fs := flag.NewFlagSet("peers scaling", flag.ContinueOnError)
	fs.StringVar(&o.engines, "engines", "sieve,pebble,pebble-l6f", "engines (comma list)")
	fs.StringVar(&o.baseline, "baseline", "pebble-l6f", "engine the ratios are relative to")
	fs.StringVar(&o.dir, "dir", "", "parent directory of the databases (default: a new temp dir)")
	fs.StringVar(&o.threads, "threads", "1,2", "reader goroutine counts")
	fs.IntVar(&o.n, "n", 1000000, "number of keys loaded")
	fs.IntVar(&o.reads, "reads", 0, "Gets per phase and engine (0: n/2)")
	fs.IntVar(&o.writerRate, "writer-rate", 100000, "Puts per second of the paced writer's phase (0: no such phase)")
	fs.IntVar(&o.rounds, "rounds", 5, "chunks each phase is split into, run in rotating engine order")
	fs.BoolVar(&o.twin, "twin", true, "also run each round of a phase of 2+ readers with the readers split over two instances of the engine (its database and a copy of it)")
	fs.Float64Var(&o.cacheMiB, "cache-mib", 8, "block cache MiB per engine")
	fs.BoolVar(&o.compact, "compact", true, "flush and compact after the load (false: the reads see the LSM as the load left it)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the key order, the reads and the values")
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	counts, err := parseCounts(o.threads)
	if err != nil {
		return o, nil, err
	}
	if o.n < 2 || o.rounds < 1 || o.reads < 0 || o.writerRate < 0 {
		return o, nil, errors.New("-n must be at least 2, -rounds positive, -reads and -writer-rate not negative")
	}
	if o.reads == 0 {
		o.reads = o.n / 2
	}
	return o, counts, nil
}

func runScalingCmd(args []string, w io.Writer) error {
	o, counts, err := parseScalingFlags(args)
	if err != nil {
		return err
	}
	infos, err := selectEngines(o.engines)
	if err != nil {
		return err
	}
	popts := options{n: o.n, dir: o.dir, compact: o.compact, seed: o.seed}
	parent, cleanup, err := benchDir(popts, infos)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg := Config{CacheBytes: int64(o.cacheMiB * (1 << 20)), BitsPerKey: 10}
	vals := newValues(o.seed)
	rng := rand.New(rand.NewPCG(o.seed, 0x5ca1))
	order := rng.Perm(o.n)
	start := time.Now()
	maxThreads := 1
	for _, c := range counts {
		maxThreads = max(maxThreads, c)
	}
	runs := make([]*engineRun, len(infos))
	for i, info := range infos {
		r := &engineRun{Name: info.name, info: info, dir: filepath.Join(parent, info.name), Reads: map[string]*readResult{}}
		runs[i] = r
		fmt.Fprintf(os.Stderr, "%s: load %d keys\n", info.name, o.n)
		if err := load(r, cfg, popts, order, vals); err != nil {
			return fmt.Errorf("%s: %w", info.name, err)
		}
	}
	var twins []*engineRun
	if o.twin && maxThreads > 1 {
		for _, r := range runs {
			t := &engineRun{Name: r.Name, info: r.info, dir: r.dir + "-twin"}
			if err := copyTree(r.dir, t.dir); err != nil {
				return fmt.Errorf("%s: copying the database for its twin: %w", r.Name, err)
			}
			twins = append(twins, t)
		}
	}
	for _, r := range slices.Concat(runs, twins) {
		if err := r.reopen(cfg, maxThreads); err != nil {
			return err
		}
	}
	results := map[string][]*scalingResult{}
	ceiling := map[int]*machineRate{}
	phases := make([]scalingPhase, 0, len(counts)+1)
	for _, c := range counts {
		phases = append(phases, scalingPhase{name: fmt.Sprintf("readrandom, %d reader(s)", c), threads: c})
	}
	phases = append(phases, scalingPhase{name: "readrandom, 1 reader + 1 writer", threads: 1, writer: true})
	if o.writerRate > 0 {
		phases = append(phases, scalingPhase{name: fmt.Sprintf("readrandom, 1 reader + 1 writer at %s Puts/s", fmtCount(o.writerRate)), threads: 1, writer: true, rate: o.writerRate})
	}
	// The phases of readers alone run interleaved, a round of each in
	// every round, so that the readers-to-one-reader ratios compare Gets
	// made in the same stretch of time; the writer phases run one after
	// the other, after them.
	var groups [][]scalingPhase
	for _, ph := range phases {
		if ph.writer || len(groups) == 0 {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], ph)
	}
	for _, g := range groups {
		idxs := make([][]int, len(g))
		mrs := make([]*machineRate, len(g))
		for j, ph := range g {
			idxs[j] = make([]int, o.reads)
			for i := range idxs[j] {
				idxs[j][i] = rng.IntN(o.n)
			}
			if !ph.writer {
				mrs[j] = &machineRate{}
				ceiling[ph.threads] = mrs[j]
			}
		}
		if err := runScalingPhases(runs, twins, g, idxs, o, vals, results, mrs); err != nil {
			return err
		}
	}
	for _, r := range slices.Concat(twins, runs) {
		if err := r.close(); err != nil {
			return err
		}
	}
	writeScalingReport(w, o, runs, phases, results, ceiling, time.Since(start), args)
	return nil
}

type scalingPhase struct {
	name    string
	threads int
	writer  bool
	rate    int // the writer's Puts per second; 0: as fast as it can
}

// runScalingPhases runs phases phs (phs[j] reading idxs[j]) on every
// engine in o.rounds rounds: in each round every engine in turn (the
// order rotating from round to round) runs its chunk of each phase (the
// phases' order rotating too), and then, for each phase with a machine
// calibration mrs[j], the machine's round at that many goroutines. With
// twins (runs[i]'s second instance is twins[i]) a phase of several
// readers and no writer runs each engine's round a second time with the
// readers split over the two instances, into results[twinKey(name)].
func runScalingPhases(runs, twins []*engineRun, phs []scalingPhase, idxs [][]int, o scalingOptions, vals *values, results map[string][]*scalingResult, mrs []*machineRate) error {
	split := func(ph scalingPhase) bool { return len(twins) > 0 && ph.threads > 1 && !ph.writer }
	res := make(map[string][]*scalingResult) // per engine (and twin), per phase of phs
	for j, ph := range phs {
		fmt.Fprintf(os.Stderr, "%s: %d Gets in %d rounds\n", ph.name, len(idxs[j]), o.rounds)
		for _, r := range runs {
			names := []string{r.Name}
			if split(ph) {
				names = append(names, twinKey(r.Name))
			}
			for _, name := range names {
				sr := &scalingResult{Phase: ph.name, Threads: ph.threads}
				if name != r.Name {
					sr.Phase += ", two instances"
				}
				results[name] = append(results[name], sr)
				if res[name] == nil {
					res[name] = make([]*scalingResult, len(phs))
				}
				res[name][j] = sr
			}
		}
	}
	for round := 0; round < o.rounds; round++ {
		for k := range runs {
			i := (k + round) % len(runs)
			r := runs[i]
			for jj := range phs {
				j := (jj + round) % len(phs)
				ph := phs[j]
				idx := idxs[j]
				lo, hi := len(idx)*round/o.rounds, len(idx)*(round+1)/o.rounds
				runtime.GC()
				if err := scalingRound(r, ph, idx[lo:hi], o.n, vals, res[r.Name][j]); err != nil {
					return fmt.Errorf("%s: %s: %w", r.Name, ph.name, err)
				}
				if !split(ph) {
					continue
				}
				// The same reads, reader th on instance th mod 2.
				both := *r
				both.readers = make([]Reader, ph.threads)
				for th := range both.readers {
					if both.readers[th] = r.readers[th]; th%2 == 1 {
						both.readers[th] = twins[i].readers[th]
					}
				}
				runtime.GC()
				if err := scalingRound(&both, ph, idx[lo:hi], o.n, vals, res[twinKey(r.Name)][j]); err != nil {
					return fmt.Errorf("%s: %s, two instances: %w", r.Name, ph.name, err)
				}
			}
		}
		for jj := range phs {
			j := (jj + round) % len(phs)
			if mrs[j] != nil {
				mrs[j].round(phs[j].threads, machineSteps)
			}
		}
	}
	for _, rs := range res {
		for _, sr := range rs {
			if sr != nil {
				sr.Lat = percentiles(sr.lat)
			}
		}
	}
	return nil
}

// twinKey is where an engine's rounds on two instances are kept in the
// results.
func twinKey(name string) string { return name + " (two instances)" }

// copyTree copies the regular files of directory src, recursively, into
// a new directory dst (a closed database, for its twin).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
}

// scalingRound runs one round of ph on r: the reads split over the reader
// goroutines (each timing every Get with one clock read), and with
// ph.writer a goroutine rewriting loaded keys (their own values, so every
// read stays checkable) until the readers are done.
func scalingRound(r *engineRun, ph scalingPhase, idx []int, n int, vals *values, res *scalingResult) error {
	var wg sync.WaitGroup
	var stop atomic.Bool
	var writes atomic.Int64
	var werr error
	started := make(chan struct{})
	a := takeSample()
	if !ph.writer {
		close(started)
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			var key []byte
			wrng := rand.New(rand.NewPCG(uint64(len(idx)), uint64(idx[0])))
			t0 := time.Now()
			for !stop.Load() {
				if w := writes.Load(); ph.rate > 0 {
					if ahead := time.Duration(w)*time.Second/time.Duration(ph.rate) - time.Since(t0); ahead > 0 {
						time.Sleep(ahead)
					}
				}
				i := wrng.IntN(n)
				key = presentKey(key, i)
				if werr = r.eng.Put(key, vals.value(i)); werr != nil {
					return
				}
				writes.Add(1)
				if first {
					// The readers start once the writer is writing.
					close(started)
					first = false
				}
			}
		}()
	}
	select {
	case <-started:
	case <-waitDone(&wg):
		// The writer failed before its first write: werr says why.
	}
	lats := make([][]int64, ph.threads)
	wrongs := make([]int64, ph.threads)
	errs := make([]error, ph.threads)
	var rg sync.WaitGroup
	for th := range ph.threads {
		part := idx[len(idx)*th/ph.threads : len(idx)*(th+1)/ph.threads]
		rg.Add(1)
		go func() {
			defer rg.Done()
			lats[th], wrongs[th], errs[th] = timedGets(r.readers[th], part, vals)
		}()
	}
	rg.Wait()
	stop.Store(true)
	wg.Wait()
	b := takeSample()
	if ph.writer {
		res.Settle += settle(r.eng).Seconds()
	}
	res.Cost.add(a, b)
	res.Ops += int64(len(idx))
	res.Writes += writes.Load()
	res.lat = append(res.lat, lats...)
	for th := range wrongs {
		res.Wrong += wrongs[th]
	}
	return errors.Join(append(errs, werr)...)
}

// machineRate is the machine's calibration for one reader count: the
// rate at which that many goroutines do machineWork, which shares nothing
// between them, measured in the same rounds as the engines' Gets. Its
// ratio at two goroutines over one is the most any read path can scale on
// this machine at that moment: on a virtual machine whose host is busy
// (or whose vCPUs are one core's hyperthreads) it is well under 2.
type machineRate struct {
	steps   int64
	seconds float64
}

// machineSteps is the work of one calibration round, split over its
// goroutines: about 0.1 s of one core.
const machineSteps = 200_000_000

// round runs steps of machineWork split over threads goroutines.
func (m *machineRate) round(threads int, steps int) {
	var wg sync.WaitGroup
	t0 := time.Now()
	for th := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			machineSink.Add(machineWork(steps*(th+1)/threads - steps*th/threads))
		}()
	}
	wg.Wait()
	m.seconds += time.Since(t0).Seconds()
	m.steps += int64(steps)
}

// rate returns the steps per second measured.
func (m *machineRate) rate() float64 {
	if m == nil || m.seconds == 0 {
		return 0
	}
	return float64(m.steps) / m.seconds
}

var machineSink atomic.Uint64

// machineWork is a dependent chain of multiplies and loads from a private
// 256 KiB table (in the core's L2, as a Get's hot index and filter lines
// are): CPU work whose goroutines share no memory that is written.
func machineWork(steps int) uint64 {
	tab := make([]uint64, 1<<15)
	for i := range tab {
		tab[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	x := uint64(1)
	for range steps {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= tab[(x>>20)&(1<<15-1)]
	}
	return x
}

// waitDone returns a channel closed once wg's goroutines are done.
func waitDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

// timedGets gets presentKey(i) for each i of idx and checks the value,
// recording each Get's latency in ns (one clock read per Get: the time
// since the previous Get ended).
func timedGets(rd Reader, idx []int, vals *values) (lat []int64, wrong int64, err error) {
	lat = make([]int64, 0, len(idx))
	var k, val []byte
	var found bool
	prev := time.Now()
	for _, i := range idx {
		k = presentKey(k, i)
		if val, found, err = rd.Get(k, val); err != nil {
			return lat, wrong, err
		}
		now := time.Now()
		lat = append(lat, int64(now.Sub(prev)))
		prev = now
		if !found || !bytes.Equal(val, vals.value(i)) {
			wrong++
		}
	}
	return lat, wrong, nil
}

func writeScalingReport(w io.Writer, o scalingOptions, runs []*engineRun, phases []scalingPhase, results map[string][]*scalingResult, ceiling map[int]*machineRate, total time.Duration, args []string) {
	fmt.Fprintf(w, "bench/peers scaling  N=%d  keys=%dB  values=%dB  cache=%.1fMiB  bloom=10 bits/key  reads/phase=%d  rounds=%d  seed=%d  compact=%v\n",
		o.n, keyLen, valueLen, o.cacheMiB, o.reads, o.rounds, o.seed, o.compact)
	fmt.Fprintf(w, "%s, GOMAXPROCS=%d, %s; total %.0fs\ncommand: peers scaling %s\n\n", runtime.Version(), runtime.GOMAXPROCS(0), cpuModel(), total.Seconds(), strings.Join(args, " "))
	for _, r := range runs {
		fmt.Fprintf(w, "  %-12s %s\n  %-12s loaded: %s\n  %-12s after:  %s\n", r.Name, r.Describe, "", r.Shape, "", r.ShapeReads)
	}
	base := results[o.baseline]
	cols := []string{"metric"}
	for _, r := range runs {
		cols = append(cols, r.Name)
	}
	var t table
	t.add(cols...)
	add := func(label string, val func(*scalingResult) float64, format func(float64) string, ratio bool) {
		for p := range phases {
			row := []string{phases[p].name + ": " + label}
			for _, r := range runs {
				v := val(results[r.Name][p])
				cell := format(v)
				if ratio && base != nil && val(base[p]) > 0 {
					cell += fmt.Sprintf(" (%.2fx)", v/val(base[p]))
				}
				row = append(row, cell)
			}
			t.add(row...)
		}
	}
	opsPerSec := func(s *scalingResult) float64 { return float64(s.Ops) / s.Cost.Seconds }
	add("Gets/s", opsPerSec, func(v float64) string { return fmt.Sprintf("%.1fk", v/1e3) }, true)
	add("process CPU us/Get (the writer's included)", func(s *scalingResult) float64 { return s.Cost.CPUSeconds * 1e6 / float64(s.Ops) }, f2, false)
	add("process page faults/Get (the writer's included)", func(s *scalingResult) float64 { return float64(s.Cost.Faults) / float64(s.Ops) }, func(v float64) string { return fmt.Sprintf("%.3f", v) }, false)
	for _, q := range []string{"p50", "p99", "p99.9"} {
		add(q+" us", func(s *scalingResult) float64 { return s.Lat[q] }, f1, false)
	}
	add("CPU steal % (host)", func(s *scalingResult) float64 { return s.Cost.StealPercent() }, f1, false)
	add("wrong results", func(s *scalingResult) float64 { return float64(s.Wrong) }, f0, false)
	for _, row := range scalingSummary(runs, phases, results, ceiling, opsPerSec) {
		t.add(row...)
	}
	t.write(w)
}

// scalingSummary gives each engine's read scaling (Gets/s at each reader
// count over one reader), the machine's (machineRate: the same for every
// engine, so one value a row) and the writer's effect on the reader's p99.
func scalingSummary(runs []*engineRun, phases []scalingPhase, results map[string][]*scalingResult, ceiling map[int]*machineRate, opsPerSec func(*scalingResult) float64) [][]string {
	var rows [][]string
	for p := 1; p < len(phases) && !phases[p].writer; p++ {
		row := []string{fmt.Sprintf("Gets/s, %d readers / 1 reader", phases[p].threads)}
		for _, r := range runs {
			row = append(row, f2(opsPerSec(results[r.Name][p])/opsPerSec(results[r.Name][0])))
		}
		rows = append(rows, row)
		if tw := results[twinKey(runs[0].Name)]; len(tw) > 0 {
			row := []string{fmt.Sprintf("Gets/s, %d readers on two instances / 1 reader, same rounds", phases[p].threads)}
			for _, r := range runs {
				for _, t := range results[twinKey(r.Name)] {
					if t.Threads == phases[p].threads {
						cell := f2(opsPerSec(t) / opsPerSec(results[r.Name][0]))
						if t.Wrong > 0 {
							cell += fmt.Sprintf(" (%d wrong results)", t.Wrong)
						}
						row = append(row, cell)
					}
				}
			}
			rows = append(rows, row)
		}
		if one, many := ceiling[phases[0].threads].rate(), ceiling[phases[p].threads].rate(); one > 0 && many > 0 {
			row := []string{fmt.Sprintf("machine (no shared memory), %d goroutines / %d, same rounds", phases[p].threads, phases[0].threads)}
			for range runs {
				row = append(row, f2(many/one))
			}
			rows = append(rows, row)
		}
	}
	for w, ph := range phases {
		if !ph.writer {
			continue
		}
		what := "the writer"
		if ph.rate > 0 {
			what = "the paced writer (" + fmtCount(ph.rate) + " Puts/s)"
		}
		row := []string{"p99, with " + what + " / without"}
		wrow := []string{"Puts/s of " + what + " beside the reader"}
		srow := []string{"background work after " + what + "'s rounds, s"}
		for _, r := range runs {
			res := results[r.Name]
			row = append(row, f2(res[w].Lat["p99"]/res[0].Lat["p99"]))
			wrow = append(wrow, fmt.Sprintf("%.1fk", float64(res[w].Writes)/res[w].Cost.Seconds/1e3))
			srow = append(srow, f2(res[w].Settle))
		}
		rows = append(rows, row, wrow, srow)
	}
	return rows
}

// fmtCount writes n as 100k when it is a whole number of thousands.
func fmtCount(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
