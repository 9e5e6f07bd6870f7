package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
)

// bench is one run of the engine benchmark against one open database.
type bench struct {
	cfg  config
	db   *sieve.DB
	ks   keyspace
	prog *progress
	ctx  context.Context
	// store is the sketch column family's Store, opened by the first
	// pfadd or bfadd.
	store *sketchcol.Store
	// clockNs is what one time.Now costs (see sampleEvery).
	clockNs float64
}

// thread is one goroutine's share of a benchmark: n operations, op(i) for i
// in [0, n) reporting whether it found what it looked for, and an optional
// close run after the timed loop.
type thread struct {
	n     int
	op    func(i int) (found bool, err error)
	close func() error
}

// threadMaker builds thread t of threads. It runs before the clock starts,
// so set-up (iterators, random sources) is not timed.
type threadMaker func(t, threads int) thread

// loopStats is what a timed loop measured.
type loopStats struct {
	hist  histogram
	every int // latency sampling stride (1: every operation timed)
	ops   int64
	found int64
	wall  time.Duration
	err   error
}

// runThreads runs the threads concurrently and times them. Each operation's
// latency is the time from the end of the previous one (or the start) to its
// end, so time.Now is called once per operation, not twice. Threads stop at
// their first error or when the context is cancelled.
func (b *bench) runThreads(ph *phase, threads int, mk threadMaker) loopStats {
	ths := make([]thread, threads)
	for t := range ths {
		ths[t] = mk(t, threads)
	}
	parts := make([]loopStats, threads)
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	for t := range ths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startGate
			parts[t] = b.loop(ph, ths[t])
		}()
	}
	start := time.Now()
	close(startGate)
	wg.Wait()
	out := loopStats{wall: time.Since(start)}
	for t := range parts {
		out.hist.merge(&parts[t].hist)
		out.ops += parts[t].ops
		out.found += parts[t].found
		out.every = max(out.every, parts[t].every)
		if ths[t].close != nil {
			if err := ths[t].close(); err != nil && parts[t].err == nil {
				parts[t].err = err
			}
		}
		out.err = errors.Join(out.err, parts[t].err)
	}
	return out
}

func (b *bench) loop(ph *phase, th thread) loopStats {
	s := loopStats{every: 1}
	prev := time.Now()
	for i := 0; i < th.n; i++ {
		var found bool
		var err error
		switch {
		case s.every == 1:
			found, err = th.op(i)
			now := time.Now()
			s.hist.record(now.Sub(prev))
			prev = now
			if i == calibrationOps-1 {
				s.every = sampleEvery(b.clockNs, s.hist.mean()-b.clockNs)
			}
		case i%s.every == 0:
			start := time.Now()
			found, err = th.op(i)
			s.hist.recordN(time.Since(start), uint64(min(s.every, th.n-i)))
		default:
			found, err = th.op(i)
		}
		if err != nil {
			s.err = err
			break
		}
		s.ops++
		if found {
			s.found++
		}
		if i%progressChunk == progressChunk-1 {
			ph.add(progressChunk)
			if b.ctx.Err() != nil {
				s.err = b.ctx.Err()
				break
			}
		}
	}
	return s
}

// run executes one benchmark by name and returns its result.
func (b *bench) run(name string) result {
	switch name {
	case "flush":
		return b.step(name, func() ([]string, error) { return nil, b.db.Flush() })
	case "compact":
		return b.step(name, b.flushAndCompact)
	case "pfadd", "bfadd":
		if err := b.prepareSketch(name); err != nil {
			return result{Name: name, Threads: b.cfg.Threads, Error: err.Error()}
		}
	}
	mk, ops, threads := b.workload(name)
	before := b.db.Metrics()
	ph := b.prog.start(name, int64(ops))
	cpu := cpuTime()
	var stopWriter func() (int64, error)
	if name == "readwhilewriting" {
		stopWriter = b.backgroundWriter()
	}
	var sampler *lsmSampler
	if isWrite(name) || name == "readwhilewriting" {
		sampler = startLSMSampler(b.db, lsmSampleInterval)
	}
	ls := b.runThreads(ph, threads, mk)
	var writes int64
	var werr error
	if stopWriter != nil {
		writes, werr = stopWriter()
	}
	cpu = cpuTime() - cpu
	ph.finish()
	after := b.db.Metrics()
	r := b.timedResult(name, threads, ls)
	r.CPUSeconds = cpu.Seconds()
	if r.Ops > 0 {
		r.CPUMicrosPerOp = r.CPUSeconds * 1e6 / float64(r.Ops)
	}
	if isPointLookup(name) {
		r.Lookups = lookupDelta(before, after, b.cfg.policy(), b.cfg.Num, r.Ops)
	}
	if stopWriter != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("%d overwrites by the writer during the reads (%.0f/s)", writes, float64(writes)/r.Seconds))
		if werr != nil && r.Error == "" {
			r.Error = "writer: " + werr.Error()
		}
	}
	if sampler != nil {
		r.Notes = append(r.Notes, sampler.stop(before, after))
	}
	b.check(&r)
	if isSketch(name) {
		b.checkSketch(&r)
	}
	return r
}

// step times a step that is not a stream of operations (flush, compact).
func (b *bench) step(name string, f func() ([]string, error)) result {
	before := shapeOf(b.db.Metrics())
	ph := b.prog.start(name, -1)
	start, cpu := time.Now(), cpuTime()
	notes, err := f()
	wall := time.Since(start)
	ph.finish()
	r := result{Name: name, Seconds: wall.Seconds(), CPUSeconds: (cpuTime() - cpu).Seconds(), Threads: 1, Notes: notes}
	if err != nil {
		r.Error = err.Error()
	}
	after := shapeOf(b.db.Metrics())
	r.Notes = append(r.Notes, fmt.Sprintf("LSM before: %s; after: %s", before.brief(), after.brief()))
	r.Notes = append(r.Notes, fmt.Sprintf("this step: %d flushes (%s), %d compactions and %d moves (read %s, wrote %s)",
		after.Flushes-before.Flushes, humanBytes(after.FlushBytes-before.FlushBytes),
		after.Compactions-before.Compactions, after.CompactionMoves-before.CompactionMoves,
		humanBytes(after.CompactionRead-before.CompactionRead), humanBytes(after.CompactionWritten-before.CompactionWritten)))
	return r
}

// flushAndCompact flushes the memtables, then compacts the whole key space
// down to the bottom level (DB.Compact(nil, nil)), and the sketch column
// family's too once pfadd or bfadd has written it.
func (b *bench) flushAndCompact() ([]string, error) {
	if err := b.db.Flush(); err != nil {
		return nil, fmt.Errorf("flush: %w", err)
	}
	if err := b.db.Compact(nil, nil); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	if b.store == nil {
		return nil, nil
	}
	if err := b.store.ColumnFamily().Compact(nil, nil); err != nil {
		return nil, fmt.Errorf("compact the sketch column family: %w", err)
	}
	return []string{"sketch column family compacted too: " + shapeOf(b.store.ColumnFamily().Metrics()).brief()}, nil
}

func isPointLookup(name string) bool {
	return name == "readrandom" || name == "readmissing" || name == "readhot" || name == "readwhilewriting"
}

func isWrite(name string) bool {
	return name == "fillseq" || name == "fillrandom" || name == "overwrite"
}

// timedResult turns a loop's measurements into a result.
func (b *bench) timedResult(name string, threads int, ls loopStats) result {
	r := result{Name: name, Ops: ls.ops, Threads: threads, Seconds: ls.wall.Seconds(), Latency: ls.hist.summary(), SampleEvery: ls.every}
	if ls.ops > 0 && ls.wall > 0 {
		r.OpsPerSec = float64(ls.ops) / ls.wall.Seconds()
		r.MicrosPerOp = ls.wall.Seconds() * 1e6 * float64(threads) / float64(ls.ops)
	}
	entry := float64(b.cfg.KeySize + b.cfg.ValueSize)
	switch {
	case isSketch(name):
		// Elements of -key_size bytes; found counts replies "added" (none
		// for blind adds).
		r.Found = ls.found
		r.MBPerSec = r.OpsPerSec * float64(b.cfg.KeySize) / 1e6
	case isWrite(name):
		r.MBPerSec = r.OpsPerSec * entry / 1e6
	case name == "scan":
		r.Found = ls.found
		r.MBPerSec = r.OpsPerSec * entry / 1e6
	default:
		r.Found, r.NotFound = ls.found, ls.ops-ls.found
		if r.Seconds > 0 {
			r.MBPerSec = float64(ls.found) * entry / r.Seconds / 1e6
		}
	}
	if ls.err != nil {
		r.Error = ls.err.Error()
		if errors.Is(ls.err, context.Canceled) {
			r.Error = "interrupted"
		}
	}
	return r
}

// check adds notes and errors for results that contradict the workload.
func (b *bench) check(r *result) {
	switch r.Name {
	case "readmissing":
		if r.Found > 0 && r.Error == "" {
			r.Error = fmt.Sprintf("%d keys that were never written were found", r.Found)
		}
	case "readrandom", "readhot", "readwhilewriting", "seekrandom":
		if r.Error == "" && r.Found < r.Ops {
			r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d keys found: load with fillrandom or fillseq first, or use -use_existing_db with the -num that wrote it", r.Found, r.Ops))
		}
	}
	if l := r.Lookups; l != nil && r.Name == "readmissing" && l.FilterTruePositives > 0 && r.Error == "" {
		r.Error = fmt.Sprintf("%d filter true positives for keys that were never written", l.FilterTruePositives)
	}
}
