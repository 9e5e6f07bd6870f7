package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/sievedb/sieve"
)

// The workloads, as db_bench defines them:
//
//	fillseq      Put every key once, in key order.
//	fillrandom   Put every key once, in a random order.
//	overwrite    Put -num random keys (with repeats) again.
//	readrandom   Get -reads random present keys.
//	readmissing  Get -reads random keys that were never written.
//	readhot      Get -reads random keys among a hot 1% of the keys.
//	readwhilewriting  readrandom while one more goroutine overwrites random
//	             keys as fast as it can (db_bench's); compare its latency
//	             percentiles with readrandom's.
//	seekrandom   SeekGE to -reads random present keys, then -seek_nexts Nexts.
//	scan         Walk -reads entries forward from First (wrapping around).
//	pfadd bfadd  -num sketch adds through sketchcol.Store (bench_sketch.go).
//
// With -threads T each goroutine does 1/T of the operations; fills split
// the keys into T disjoint ranges of the fill order.

// workload returns the thread maker, total operations and thread count of a
// measured benchmark.
func (b *bench) workload(name string) (threadMaker, int, int) {
	threads := b.cfg.Threads
	switch name {
	case "fillseq":
		return b.fill(b.ks.sortedNumbers()), b.cfg.Num, threads
	case "fillrandom":
		return b.fill(b.ks.shuffledNumbers(b.cfg.Seed)), b.cfg.Num, threads
	case "overwrite":
		return b.overwrite(), b.cfg.Num, threads
	case "readrandom":
		return b.gets(func(r *rand.Rand, dst []byte) []byte { return b.ks.present(dst, r.Uint64N(uint64(b.ks.num))) }), b.cfg.Reads, threads
	case "readmissing":
		return b.gets(func(r *rand.Rand, dst []byte) []byte { return b.ks.missing(dst, r.Uint64N(uint64(b.ks.num))) }), b.cfg.Reads, threads
	case "readwhilewriting":
		return b.gets(func(r *rand.Rand, dst []byte) []byte { return b.ks.present(dst, r.Uint64N(uint64(b.ks.num))) }), b.cfg.Reads, threads
	case "readhot":
		hot := uint64(b.ks.hotKeys())
		return b.gets(func(r *rand.Rand, dst []byte) []byte { return b.ks.present(dst, r.Uint64N(hot)) }), b.cfg.Reads, threads
	case "seekrandom":
		return b.seeks(), b.cfg.Reads, threads
	case "scan":
		return b.scan(), b.cfg.Reads, threads
	case "pfadd", "bfadd":
		return b.sketchAdds(name), b.cfg.Num, threads
	}
	panic("lsmbench: no workload " + name) // names are validated by parseBenchFlags
}

// rng returns the random source of thread t of benchmark name: seeded by
// -seed, distinct per thread and per benchmark.
func (b *bench) rng(name string, t int) *rand.Rand {
	var h uint64 = 14695981039346656037
	for _, c := range []byte(name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(b.cfg.Seed, h+uint64(t)))
}

func (b *bench) fill(order []uint64) threadMaker {
	wo := b.cfg.writeOptions()
	return func(t, threads int) thread {
		lo, hi := split(len(order), t, threads)
		mine := order[lo:hi]
		key := make([]byte, b.cfg.KeySize)
		vals := newValueSource(b.cfg.ValueSize, b.cfg.CompressRatio, b.cfg.Seed+uint64(t))
		return thread{n: len(mine), op: func(i int) (bool, error) {
			return false, b.db.Put(b.ks.encode(key, mine[i]), vals.value(), wo)
		}}
	}
}

func (b *bench) overwrite() threadMaker {
	wo := b.cfg.writeOptions()
	return func(t, threads int) thread {
		lo, hi := split(b.cfg.Num, t, threads)
		r := b.rng("overwrite", t)
		key := make([]byte, b.cfg.KeySize)
		vals := newValueSource(b.cfg.ValueSize, b.cfg.CompressRatio, b.cfg.Seed+uint64(t)+1000)
		return thread{n: hi - lo, op: func(int) (bool, error) {
			return false, b.db.Put(b.ks.present(key, r.Uint64N(uint64(b.ks.num))), vals.value(), wo)
		}}
	}
}

// gets makes point-lookup threads whose keys come from next.
func (b *bench) gets(next func(r *rand.Rand, dst []byte) []byte) threadMaker {
	return func(t, threads int) thread {
		lo, hi := split(b.cfg.Reads, t, threads)
		r := b.rng("get", t)
		key := make([]byte, b.cfg.KeySize)
		return thread{n: hi - lo, op: func(int) (bool, error) {
			_, err := b.db.Get(next(r, key))
			switch {
			case err == nil:
				return true, nil
			case errors.Is(err, sieve.ErrNotFound):
				return false, nil
			}
			return false, err
		}}
	}
}

// seeks makes seekrandom threads, each with one iterator reused for all its
// seeks (as db_bench and peerbench do). A seek is found when it lands on
// the key sought.
func (b *bench) seeks() threadMaker {
	return func(t, threads int) thread {
		lo, hi := split(b.cfg.Reads, t, threads)
		r := b.rng("seek", t)
		key := make([]byte, b.cfg.KeySize)
		it := b.db.NewIter(nil)
		nexts := b.cfg.SeekNexts
		return thread{n: hi - lo, close: it.Close, op: func(int) (bool, error) {
			k := b.ks.present(key, r.Uint64N(uint64(b.ks.num)))
			if !it.SeekGE(k) {
				return false, iterError(it)
			}
			found := bytes.Equal(it.Key(), k)
			for j := 0; j < nexts && it.Next(); j++ {
				_ = it.Value()
			}
			return found, iterError(it)
		}}
	}
}

// scan makes threads that each walk the database forward from First,
// starting over at the end, one entry per operation.
func (b *bench) scan() threadMaker {
	return func(t, threads int) thread {
		lo, hi := split(b.cfg.Reads, t, threads)
		it := b.db.NewIter(nil)
		started := false
		return thread{n: hi - lo, close: it.Close, op: func(int) (bool, error) {
			ok := started && it.Next()
			if !ok {
				if err := iterError(it); err != nil {
					return false, err
				}
				if ok, started = it.First(), true; !ok {
					return false, iterError(it)
				}
			}
			_, _ = it.Key(), it.Value()
			return true, nil
		}}
	}
}

func iterError(it *sieve.Iterator) error {
	if err := it.Error(); err != nil {
		return fmt.Errorf("iterator: %w", err)
	}
	return nil
}

// backgroundWriter starts one goroutine overwriting random present keys
// until the returned stop is called; stop returns how many it wrote.
func (b *bench) backgroundWriter() (stop func() (int64, error)) {
	done := make(chan struct{})
	var n int64
	var err error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		r := b.rng("readwhilewriting-writer", 0)
		key := make([]byte, b.cfg.KeySize)
		vals := newValueSource(b.cfg.ValueSize, b.cfg.CompressRatio, b.cfg.Seed+2000)
		wo := b.cfg.writeOptions()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err = b.db.Put(b.ks.present(key, r.Uint64N(uint64(b.ks.num))), vals.value(), wo); err != nil {
				return
			}
			n++
		}
	}()
	return func() (int64, error) {
		close(done)
		<-finished
		return n, err
	}
}
