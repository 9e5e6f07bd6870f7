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
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

type options struct {
	engines  string
	n        int
	cacheMiB float64
	bits     int
	rounds   int
	seed     uint64
	dir      string
	keep     bool
	jsonFile string
	baseline string
	compact  bool
	threads  int
	keys     string
	cpuprof  string
	reads    int
	reuse    bool
}

// subcommands are the modes other than the default benchmark.
var subcommands = map[string]func(args []string, w io.Writer) error{
	"filter":    runFilterCmd,
	"ycsb":      runYCSBCmd,
	"syncwrite": runSyncWriteCmd,
	"scaling":   runScalingCmd,
}

func main() {
	var o options
	flag.StringVar(&o.engines, "engines", "default", "engines: default, all, or a comma list ("+engineNames()+")")
	flag.IntVar(&o.n, "n", 1000000, "number of keys loaded")
	flag.Float64Var(&o.cacheMiB, "cache-mib", 8, "block cache MiB for every engine")
	flag.IntVar(&o.bits, "bits", 10, "Bloom filter bits per key for every engine")
	flag.IntVar(&o.rounds, "rounds", 5, "chunks each read workload is split into, run in rotating engine order")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the load order, the read keys and the values")
	flag.StringVar(&o.dir, "dir", "", "parent directory of the databases (default: a new temp dir)")
	flag.BoolVar(&o.keep, "keep", false, "keep the databases")
	flag.StringVar(&o.jsonFile, "json", "", "also write the results as JSON to this file")
	flag.StringVar(&o.baseline, "baseline", "", "engine the ratios are relative to (default: pebble-l6f if selected, else the first engine)")
	flag.BoolVar(&o.compact, "compact", true, "flush and compact before the reads (false: reads see the LSM as the load left it)")
	flag.StringVar(&o.keys, "keys", "seq", "key scheme: seq (absent keys adjacent to present ones) or scattered")
	flag.IntVar(&o.threads, "threads", 1, "concurrent reader goroutines per engine in the read workloads")
	flag.IntVar(&o.reads, "reads", 0, "operations of each read workload (0: n/2 readrandom and readmissing, n/10 seekrandom)")
	flag.BoolVar(&o.reuse, "reuse", false, "with -dir: an engine whose directory holds a database an earlier -keep run loaded with the same -n, -seed and -keys is not loaded again (its fill figures are then 0)")
	flag.StringVar(&o.cpuprof, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: peers [flags]      run the benchmark\n       peers list         list the engines\n       peers filter [-n N] [-bits B] [-keys seq|scattered|both]   filter micro-benchmark\n       peers ycsb [-n N] [-ops N] [-threads T] [-workloads A,B,...]   YCSB A-F\n       peers syncwrite [-threads 1,4,16] [-ops N]   synchronous writers (group commit)\n")
		flag.PrintDefaults()
	}
	if len(os.Args) > 1 {
		if cmd, ok := subcommands[os.Args[1]]; ok {
			if err := cmd(os.Args[2:], os.Stdout); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					os.Exit(2)
				}
				fmt.Fprintf(os.Stderr, "peers %s: %v\n", os.Args[1], err)
				os.Exit(1)
			}
			return
		}
	}
	flag.Parse()
	if flag.Arg(0) == "list" {
		for _, e := range sortedEngines() {
			def := ""
			if e.inDefault {
				def = " (default)"
			}
			fmt.Printf("%-14s %s%s\n", e.name, e.summary, def)
		}
		return
	}
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := profiled(o.cpuprof, func() error { return run(o, os.Args[1:]) }); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// engineRun is one engine's state and figures in a run.
type engineRun struct {
	Name     string `json:"name"`
	Describe string `json:"describe"`
	// Shape is the LSM after FlushCompact (or after the load, with
	// -compact=false), before it is closed.
	Shape   string `json:"shape"`
	Fill    cost   `json:"fill"`
	Compact cost   `json:"flush_compact"`
	// WriteAmp is the engine's own figure, if it has one.
	WriteAmp    *float64 `json:"engine_write_amp,omitempty"`
	UserBytes   int64    `json:"user_bytes"`
	DiskCompact int64    `json:"disk_after_compact_bytes"`
	TablesComp  int64    `json:"tables_after_compact_bytes"`
	DiskRest    int64    `json:"disk_at_rest_bytes"`
	TablesRest  int64    `json:"tables_at_rest_bytes"`
	ShapeReads  string   `json:"shape_after_reads"`
	// OpenSeconds is the wall time of the reopen before the reads;
	// RSSAfterReads the process's resident set after this engine's reads
	// (process-wide: earlier engines' memory may not have been returned;
	// run one engine per process for its own figure).
	OpenSeconds   float64 `json:"open_seconds"`
	RSSAfterReads int64   `json:"rss_after_reads_bytes"`
	// RSSAnon and RSSFile split it: anonymous memory (heap, caches) and
	// file pages mapped into the process (sieve memory-maps its tables:
	// page-cache pages it touched, which the kernel can reclaim).
	RSSAnon int64                  `json:"rss_anon_after_reads_bytes"`
	RSSFile int64                  `json:"rss_file_after_reads_bytes"`
	Reads   map[string]*readResult `json:"reads"`

	info    engineInfo
	eng     Engine
	dir     string
	readers []Reader   // one per thread
	iters   []Iterator // one per thread, reused by seekrandom
}

type readResult struct {
	Ops   int64            `json:"ops"`
	Cost  cost             `json:"cost"`
	Stats map[string]int64 `json:"engine_counters"`
	Wrong int64            `json:"wrong_results"`
}

type workload struct {
	name string
	// idx are the operations' key indexes.
	idx []int
	// run runs idx on reader thread th and returns the wrong results.
	run func(r *engineRun, th int, idx []int) (wrong int64, err error)
}

var readWorkloads = []string{"readrandom", "readmissing", "seekrandom"}

const seekNexts = 10

func run(o options, args []string) error {
	infos, baseline, err := checkOptions(&o)
	if err != nil {
		return err
	}
	parent, cleanup, err := benchDir(o, infos)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg := Config{CacheBytes: int64(o.cacheMiB * (1 << 20)), BitsPerKey: o.bits}
	vals := newValues(o.seed)
	rng := rand.New(rand.NewPCG(o.seed, 0x10ad))
	order := rng.Perm(o.n)
	start := time.Now()

	runs := make([]*engineRun, len(infos))
	for i, info := range infos {
		r := &engineRun{Name: info.name, info: info, dir: filepath.Join(parent, info.name), Reads: map[string]*readResult{}}
		runs[i] = r
		if o.reuse && loadedBefore(r.dir, o) {
			fmt.Fprintf(os.Stderr, "%s: reusing the database loaded in %s\n", info.name, r.dir)
			continue
		}
		if err := os.RemoveAll(r.dir); err != nil {
			return err
		}
		os.Remove(loadMarker(r.dir))
		fmt.Fprintf(os.Stderr, "%s: load %d keys\n", info.name, o.n)
		if err := load(r, cfg, o, order, vals); err != nil {
			return fmt.Errorf("%s: %w", info.name, err)
		}
		if err := markLoaded(r.dir, o); err != nil {
			return err
		}
	}
	// Reopen every engine: each starts the reads with a cold cache.
	for _, r := range runs {
		if err := r.reopen(cfg, o.threads); err != nil {
			return err
		}
	}
	for _, w := range makeWorkloads(o.n, o.reads, rng, vals) {
		if err := runWorkload(runs, w, o); err != nil {
			return err
		}
	}
	for _, r := range runs {
		if err := r.close(); err != nil {
			return err
		}
	}
	rep := &report{
		Opts: o, Baseline: baseline, Command: "peers " + strings.Join(args, " "),
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel(),
		Started: start.UTC().Format(time.RFC3339), TotalSeconds: time.Since(start).Seconds(),
		Engines: runs,
	}
	rep.writeText(os.Stdout)
	if o.jsonFile != "" {
		return rep.writeJSON(o.jsonFile)
	}
	return nil
}

// checkOptions validates o (raising rounds and threads to at least one),
// selects its engines and names the baseline: -baseline, else pebble-l6f
// when it runs, else the first engine.
func checkOptions(o *options) ([]engineInfo, string, error) {
	if o.n < 2 {
		return nil, "", fmt.Errorf("-n must be at least 2")
	}
	o.rounds, o.threads = max(o.rounds, 1), max(o.threads, 1)
	switch o.keys {
	case "seq":
	case "scattered":
		scatteredKeys = true
	default:
		return nil, "", fmt.Errorf("-keys must be seq or scattered")
	}
	if int64(o.n)*1000 >= 1e13 {
		return nil, "", fmt.Errorf("-n too large for 13-digit keys")
	}
	infos, err := selectEngines(o.engines)
	if err != nil {
		return nil, "", err
	}
	if len(infos) == 0 {
		return nil, "", fmt.Errorf("no engines selected")
	}
	baseline, found := o.baseline, false
	if baseline == "" {
		baseline = infos[0].name
	}
	for _, e := range infos {
		if o.baseline == "" && e.name == "pebble-l6f" {
			baseline = e.name
		}
		found = found || e.name == baseline
	}
	if !found {
		return nil, "", fmt.Errorf("baseline %q is not among the engines", baseline)
	}
	return infos, baseline, nil
}

// benchDir returns the directory the engines' databases go under (-dir, or
// a new temporary one) and a cleanup that removes them unless -keep.
func benchDir(o options, infos []engineInfo) (string, func(), error) {
	parent := o.dir
	if parent == "" {
		var err error
		if parent, err = os.MkdirTemp("", "peers-"); err != nil {
			return "", nil, err
		}
	} else if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, err
	}
	cleanup := func() {
		if o.keep {
			return
		}
		for _, e := range infos {
			os.RemoveAll(filepath.Join(parent, e.name))
			os.Remove(loadMarker(filepath.Join(parent, e.name)))
		}
		if o.dir == "" {
			os.RemoveAll(parent)
		}
	}
	return parent, cleanup, nil
}

// reopen opens the loaded engine again (a cold cache) with a reader and an
// iterator per thread.
func (r *engineRun) reopen(cfg Config, threads int) error {
	r.eng = r.info.ctor()
	start := time.Now()
	if err := r.eng.Open(r.dir, cfg); err != nil {
		return fmt.Errorf("%s: reopen: %w", r.Name, err)
	}
	r.OpenSeconds = time.Since(start).Seconds()
	for th := 0; th < threads; th++ {
		rd, err := r.eng.NewReader()
		if err != nil {
			return fmt.Errorf("%s: reader: %w", r.Name, err)
		}
		it, err := r.eng.NewIterator()
		if err != nil {
			return fmt.Errorf("%s: iterator: %w", r.Name, err)
		}
		r.readers, r.iters = append(r.readers, rd), append(r.iters, it)
	}
	return nil
}

// runWorkload runs w on every engine in o.rounds interleaved rounds, the
// engines' order rotating each round, and records cost and counters.
func runWorkload(runs []*engineRun, w workload, o options) error {
	fmt.Fprintf(os.Stderr, "%s: %d ops in %d rounds\n", w.name, len(w.idx), o.rounds)
	for _, r := range runs {
		r.Reads[w.name] = &readResult{Stats: map[string]int64{}}
	}
	for round := 0; round < o.rounds; round++ {
		lo, hi := len(w.idx)*round/o.rounds, len(w.idx)*(round+1)/o.rounds
		for k := range runs {
			r := runs[(k+round)%len(runs)]
			res := r.Reads[w.name]
			runtime.GC()
			before := r.eng.Stats()
			a := takeSample()
			err := runThreads(r, w, w.idx[lo:hi], o.threads, res)
			b := takeSample()
			if err != nil {
				return fmt.Errorf("%s: %s: %w", r.Name, w.name, err)
			}
			res.Cost.add(a, b)
			res.Ops += int64(hi - lo)
			for name, v := range r.eng.Stats() {
				res.Stats[name] += v - before[name]
			}
		}
	}
	return nil
}

// close records the read-time shape, closes the readers, iterators and
// engine, and measures the disk at rest.
func (r *engineRun) close() error {
	r.ShapeReads = r.eng.Shape()
	r.RSSAfterReads, r.RSSAnon, r.RSSFile = processRSS()
	for th := range r.iters {
		if err := r.iters[th].Close(); err != nil {
			return fmt.Errorf("%s: iterator close: %w", r.Name, err)
		}
		if err := r.readers[th].Close(); err != nil {
			return fmt.Errorf("%s: reader close: %w", r.Name, err)
		}
	}
	if err := r.eng.Close(); err != nil {
		return fmt.Errorf("%s: close: %w", r.Name, err)
	}
	r.DiskRest, r.TablesRest = diskUsage(r.dir)
	return nil
}

// getEach gets key(i) for each i of idx with rd and returns how many
// answers right says are wrong.
func getEach(rd Reader, idx []int, key func(dst []byte, i int) []byte, right func(i int, val []byte, found bool) bool) (wrong int64, err error) {
	var k, val []byte
	var found bool
	for _, i := range idx {
		k = key(k, i)
		if val, found, err = rd.Get(k, val); err != nil {
			return wrong, err
		}
		if !right(i, val, found) {
			wrong++
		}
	}
	return wrong, nil
}

// runThreads splits idx between the reader threads and waits for them.
func runThreads(r *engineRun, w workload, idx []int, threads int, res *readResult) error {
	if threads == 1 {
		wrong, err := w.run(r, 0, idx)
		res.Wrong += wrong
		return err
	}
	var wg sync.WaitGroup
	wrongs := make([]int64, threads)
	errs := make([]error, threads)
	for th := 0; th < threads; th++ {
		part := idx[len(idx)*th/threads : len(idx)*(th+1)/threads]
		wg.Add(1)
		go func() {
			defer wg.Done()
			wrongs[th], errs[th] = w.run(r, th, part)
		}()
	}
	wg.Wait()
	for th := range wrongs {
		res.Wrong += wrongs[th]
	}
	return errors.Join(errs...)
}

// load runs fillrandom and flush+compact on a fresh database, then closes it.
func load(r *engineRun, cfg Config, o options, order []int, vals *values) error {
	r.eng = r.info.ctor()
	if err := r.eng.Open(r.dir, cfg); err != nil {
		return err
	}
	r.Describe = r.eng.Describe()
	runtime.GC()
	var key []byte
	a := takeSample()
	for _, i := range order {
		key = presentKey(key, i)
		if err := r.eng.Put(key, vals.value(i)); err != nil {
			return fmt.Errorf("put: %w", err)
		}
	}
	b := takeSample()
	r.Fill.add(a, b)
	r.UserBytes = int64(len(order)) * (keyLen + valueLen)
	if o.compact {
		a = takeSample()
		if err := r.eng.FlushCompact(); err != nil {
			return fmt.Errorf("flush+compact: %w", err)
		}
		b = takeSample()
		r.Compact.add(a, b)
	}
	if wa, ok := r.eng.WriteAmp(); ok {
		r.WriteAmp = &wa
	}
	r.Shape = r.eng.Shape()
	a = takeSample()
	if err := r.eng.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	b = takeSample()
	// Close may write (badger flushes its memtables; -compact=false leaves
	// them for Close in most engines): it counts as compaction writes.
	r.Compact.WriteBytes += b.wchr - a.wchr
	r.DiskCompact, r.TablesComp = diskUsage(r.dir)
	r.eng = nil
	return nil
}

func makeWorkloads(n, reads int, rng *rand.Rand, vals *values) []workload {
	idx := func(count, max int) []int {
		if reads > 0 {
			count = reads
		}
		s := make([]int, count)
		for i := range s {
			s[i] = rng.IntN(max)
		}
		return s
	}
	return []workload{
		{name: "readrandom", idx: idx(n/2, n), run: func(r *engineRun, th int, idx []int) (int64, error) {
			return getEach(r.readers[th], idx, presentKey, func(i int, val []byte, found bool) bool {
				return found && bytes.Equal(val, vals.value(i))
			})
		}},
		{name: "readmissing", idx: idx(n/2, n-1), run: func(r *engineRun, th int, idx []int) (int64, error) {
			return getEach(r.readers[th], idx, absentKey, func(_ int, _ []byte, found bool) bool { return !found })
		}},
		{name: "seekrandom", idx: idx(max(n/10, 1), n), run: func(r *engineRun, th int, idx []int) (wrong int64, err error) {
			var seek, want []byte
			it := r.iters[th]
			for _, i := range idx {
				seek = presentKey(seek, i)
				ok := it.Seek(seek)
				for step := 0; ; step++ {
					if i+step >= n {
						if ok {
							wrong++
						}
						break
					}
					want = presentKey(want, i+step)
					if !ok || !bytes.Equal(it.Key(), want) || !bytes.Equal(it.Value(), vals.value(i+step)) {
						wrong++
						break
					}
					if step == seekNexts {
						break
					}
					ok = it.Next()
				}
			}
			return wrong, nil
		}},
	}
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(data), "\n") {
		if name, val, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(val)
		}
	}
	return runtime.GOARCH
}

// profiled runs f, under a CPU profile written to file when file is set.
func profiled(file string, f func() error) error {
	if file == "" {
		return f()
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return err
	}
	err = f()
	pprof.StopCPUProfile()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// processRSS is the process's resident set size (VmRSS) and its
// anonymous and file-backed parts (RssAnon, RssFile), 0 if unknown.
func processRSS() (rss, anon, file int64) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var kb int64
		fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
		switch name {
		case "VmRSS":
			rss = kb << 10
		case "RssAnon":
			anon = kb << 10
		case "RssFile":
			file = kb << 10
		}
	}
	return rss, anon, file
}

// loadMarker is the file a load leaves beside an engine's directory (see
// -reuse; not inside it, which is the engine's): the parameters the
// database was loaded with.
func loadMarker(dir string) string { return dir + ".peers-loaded" }

func loadSignature(o options) string {
	return fmt.Sprintf("n=%d seed=%d keys=%s\n", o.n, o.seed, o.keys)
}

func markLoaded(dir string, o options) error {
	return os.WriteFile(loadMarker(dir), []byte(loadSignature(o)), 0o644)
}

func loadedBefore(dir string, o options) bool {
	data, err := os.ReadFile(loadMarker(dir))
	return err == nil && string(data) == loadSignature(o)
}
