package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The syncwrite mode: writers that wait for durability (PutSync), from 1,
// 4 and 16 goroutines, so group commit shows: ops/s and, where the engine
// counts them, WAL fsyncs per op.

type syncOptions struct {
	engines, baseline, dir, threads string
	ops, rounds                     int
	seed                            uint64
}

type syncResult struct {
	Threads   int     `json:"threads"`
	Ops       int64   `json:"ops"`
	Cost      cost    `json:"cost"`
	Syncs     int64   `json:"wal_syncs"`      // -1: not exposed
	WriteCall float64 `json:"write_syscalls"` // in all; the report divides by Ops
}

func runSyncWriteCmd(args []string, w io.Writer) error {
	var o syncOptions
	fs := flag.NewFlagSet("peers syncwrite", flag.ContinueOnError)
	fs.StringVar(&o.engines, "engines", "sieve,pebble,goleveldb,badger", "engines (comma list)")
	fs.StringVar(&o.baseline, "baseline", "pebble", "engine the ratios are relative to")
	fs.StringVar(&o.dir, "dir", "", "parent directory of the databases (default: a new temp dir under $TMPDIR: the disk measured)")
	fs.StringVar(&o.threads, "threads", "1,4,16", "writer goroutine counts")
	fs.IntVar(&o.ops, "ops", 20000, "synchronous Puts per writer count and engine")
	fs.IntVar(&o.rounds, "rounds", 5, "chunks each writer count's Puts are split into, run in rotating engine order")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the values")
	if err := fs.Parse(args); err != nil {
		return err
	}
	counts, err := parseCounts(o.threads)
	if err != nil {
		return err
	}
	if o.ops < 1 || o.rounds < 1 {
		return errors.New("-ops and -rounds must be positive")
	}
	infos, err := selectEngines(o.engines)
	if err != nil {
		return err
	}
	parent, cleanup, err := benchDir(options{dir: o.dir}, infos)
	if err != nil {
		return err
	}
	defer cleanup()
	vals := newValues(o.seed)
	engines := make([]Engine, len(infos))
	for i, info := range infos {
		engines[i] = info.ctor()
		if err := engines[i].Open(filepath.Join(parent, info.name), Config{CacheBytes: 8 << 20, BitsPerKey: 10, SyncWrites: true}); err != nil {
			return fmt.Errorf("%s: %w", info.name, err)
		}
		defer engines[i].Close()
	}
	results := map[string][]syncResult{}
	next := 0
	for _, threads := range counts {
		fmt.Fprintf(os.Stderr, "%d writers: %d synchronous Puts per engine in %d rounds\n", threads, o.ops, o.rounds)
		for _, info := range infos {
			results[info.name] = append(results[info.name], syncResult{Threads: threads, Syncs: -1})
		}
		for round := 0; round < o.rounds; round++ {
			ops := o.ops*(round+1)/o.rounds - o.ops*round/o.rounds
			for k := range infos {
				i := (k + round) % len(infos)
				res := &results[infos[i].name][len(results[infos[i].name])-1]
				if err := syncRound(engines[i], res, next, ops, threads, vals); err != nil {
					return fmt.Errorf("%s: %w", infos[i].name, err)
				}
			}
			next += ops
		}
	}
	writeSyncReport(w, o, infos, counts, results, parent)
	return nil
}

// syncRound runs ops PutSyncs of keys from first on, split over threads
// goroutines, and adds their cost to res.
func syncRound(eng Engine, res *syncResult, first, ops, threads int, vals *values) error {
	runtime.GC()
	before := eng.Stats()
	a := takeSample()
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for th := range threads {
		lo, hi := first+ops*th/threads, first+ops*(th+1)/threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			var key []byte
			for i := lo; i < hi && errs[th] == nil; i++ {
				key = presentKey(key, i)
				errs[th] = eng.PutSync(key, vals.value(i))
			}
		}()
	}
	wg.Wait()
	b := takeSample()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	res.Ops += int64(ops)
	res.Cost.add(a, b)
	res.WriteCall += float64(b.syscw - a.syscw)
	if s, ok := eng.Stats()[statWALSyncs]; ok {
		res.Syncs = max(res.Syncs, 0) + s - before[statWALSyncs]
	}
	return nil
}

func writeSyncReport(w io.Writer, o syncOptions, infos []engineInfo, counts []int, results map[string][]syncResult, dir string) {
	fmt.Fprintf(w, "bench/peers syncwrite  ops=%d per writer count  keys=%dB  values=%dB  dir=%s\n%s, GOMAXPROCS=%d, %s; %s\n",
		o.ops, keyLen, valueLen, dir, runtime.Version(), runtime.GOMAXPROCS(0), cpuModel(), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "each Put is a batch of one that returns once durable (sieve Sync, pebble Sync, goleveldb WriteOptions.Sync, badger WithSyncWrites); %d rounds per writer count, engines in rotating order\n\n", o.rounds)
	var t table
	head := []string{"writers"}
	for _, e := range infos {
		head = append(head, e.name)
	}
	t.add(head...)
	for i, threads := range counts {
		base := results[o.baseline]
		cells := []string{fmt.Sprintf("%d: ops/s", threads)}
		for _, e := range infos {
			r := results[e.name][i]
			v := rate(r.Ops, r.Cost.Seconds)
			c := fmtRate(v)
			if base != nil {
				c += fmt.Sprintf(" (%.2fx)", v/rate(base[i].Ops, base[i].Cost.Seconds))
			}
			cells = append(cells, c)
		}
		t.add(cells...)
		syncs := []string{fmt.Sprintf("%d: WAL fsyncs/op", threads)}
		calls := []string{fmt.Sprintf("%d: write syscalls/op", threads)}
		for _, e := range infos {
			r := results[e.name][i]
			if r.Syncs < 0 {
				syncs = append(syncs, "-")
			} else {
				syncs = append(syncs, fmt.Sprintf("%.3f", float64(r.Syncs)/float64(r.Ops)))
			}
			calls = append(calls, fmt.Sprintf("%.2f", r.WriteCall/float64(r.Ops)))
		}
		t.add(syncs...)
		t.add(calls...)
	}
	t.write(w)
}

// parseCounts parses -threads: a comma list of positive goroutine counts.
func parseCounts(list string) ([]int, error) {
	var counts []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-threads: %q is not a positive count", s)
		}
		counts = append(counts, n)
	}
	return counts, nil
}
