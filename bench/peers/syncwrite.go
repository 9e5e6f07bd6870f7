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
	ops                             int
	seed                            uint64
}

type syncResult struct {
	Threads   int     `json:"threads"`
	Ops       int64   `json:"ops"`
	Cost      cost    `json:"cost"`
	Syncs     int64   `json:"wal_syncs"` // -1: not exposed
	WriteCall float64 `json:"write_syscalls_per_op"`
}

func runSyncWriteCmd(args []string, w io.Writer) error {
	var o syncOptions
	fs := flag.NewFlagSet("peers syncwrite", flag.ContinueOnError)
	fs.StringVar(&o.engines, "engines", "sieve,pebble,goleveldb,badger", "engines (comma list)")
	fs.StringVar(&o.baseline, "baseline", "pebble", "engine the ratios are relative to")
	fs.StringVar(&o.dir, "dir", "", "parent directory of the databases (default: a new temp dir under $TMPDIR: the disk measured)")
	fs.StringVar(&o.threads, "threads", "1,4,16", "writer goroutine counts")
	fs.IntVar(&o.ops, "ops", 20000, "synchronous Puts per writer count and engine")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the values")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var counts []int
	for _, s := range strings.Split(o.threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-threads: %q is not a positive count", s)
		}
		counts = append(counts, n)
	}
	if o.ops < 1 {
		return errors.New("-ops must be positive")
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
	results := map[string][]syncResult{}
	for _, info := range infos {
		fmt.Fprintf(os.Stderr, "%s: synchronous writes\n", info.name)
		res, err := syncWrites(info, filepath.Join(parent, info.name), counts, o.ops, vals)
		if err != nil {
			return fmt.Errorf("%s: %w", info.name, err)
		}
		results[info.name] = res
	}
	writeSyncReport(w, o, infos, counts, results, parent)
	return nil
}

// syncWrites opens a fresh engine and, for each writer count, runs ops
// PutSyncs of new keys split over that many goroutines.
func syncWrites(info engineInfo, dir string, counts []int, ops int, vals *values) ([]syncResult, error) {
	eng := info.ctor()
	if err := eng.Open(dir, Config{CacheBytes: 8 << 20, BitsPerKey: 10, SyncWrites: true}); err != nil {
		return nil, err
	}
	var out []syncResult
	next := 0
	for _, threads := range counts {
		runtime.GC()
		before := eng.Stats()
		a := takeSample()
		errs := make([]error, threads)
		var wg sync.WaitGroup
		for th := range threads {
			lo, hi := next+ops*th/threads, next+ops*(th+1)/threads
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
		next += ops
		if err := errors.Join(errs...); err != nil {
			eng.Close()
			return nil, err
		}
		r := syncResult{Threads: threads, Ops: int64(ops), Syncs: -1, WriteCall: float64(b.syscw-a.syscw) / float64(ops)}
		r.Cost.add(a, b)
		if s, ok := eng.Stats()[statWALSyncs]; ok {
			r.Syncs = s - before[statWALSyncs]
		}
		out = append(out, r)
	}
	return out, eng.Close()
}

func writeSyncReport(w io.Writer, o syncOptions, infos []engineInfo, counts []int, results map[string][]syncResult, dir string) {
	fmt.Fprintf(w, "bench/peers syncwrite  ops=%d per writer count  keys=%dB  values=%dB  dir=%s\n%s, GOMAXPROCS=%d, %s; %s\n",
		o.ops, keyLen, valueLen, dir, runtime.Version(), runtime.GOMAXPROCS(0), cpuModel(), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "each Put is a batch of one that returns once durable (sieve Sync, pebble Sync, goleveldb WriteOptions.Sync, badger WithSyncWrites)\n\n")
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
			calls = append(calls, fmt.Sprintf("%.2f", r.WriteCall))
		}
		t.add(syncs...)
		t.add(calls...)
	}
	t.write(w)
}
