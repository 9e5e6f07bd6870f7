package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/sievedb/sieve/sketchcol"
)

// The sketch column family's engine benchmarks, through sketchcol.Store:
//
//	pfadd   -num PFAdds of one element each into -sketch_keys HyperLogLogs
//	        (element n, the scrambled key number n, goes to key n mod
//	        -sketch_keys: every element once)
//	bfadd   -num BFAdds of one item each, the same way, into Bloom filters
//	        reserved beforehand (untimed) for num/sketch_keys items at 1%
//
// Adds are blind (one merge operand each, no read) unless -sketch_reply,
// which runs the commands with Redis's reply (a read of the key — merging
// its operands — then the operand). After the timed loop, untimed, each
// checks its answer: pfadd the PFCount of the union of its keys against
// -num; bfadd that no added item tests negative and the false-positive
// rate over never-added items against the requested 1% (RedisBloom's
// bound for a scaled filter is 2×).

// sketchBloomRate is the error rate bfadd reserves its filters with.
const sketchBloomRate = 0.01

func isSketch(name string) bool { return name == "pfadd" || name == "bfadd" }

// sketchStore opens the Store on first use (the "sketch" column family of
// the benchmark's DB), with -sync deciding its write options.
func (b *bench) sketchStore() (*sketchcol.Store, error) {
	if b.store == nil {
		s, err := sketchcol.OpenWithOptions(b.db, &sketchcol.StoreOptions{Sync: b.cfg.Sync})
		if err != nil {
			return nil, err
		}
		b.store = s
	}
	return b.store, nil
}

// sketchKey returns the key element n goes to.
func (b *bench) sketchKey(dst []byte, name string, n int) []byte {
	return fmt.Appendf(dst, "%s:%06d", name, n%b.cfg.SketchKeys)
}

// prepareSketch opens the Store and, for bfadd, reserves the filters
// (keys that exist already, from an earlier run on -db, are kept).
func (b *bench) prepareSketch(name string) error {
	s, err := b.sketchStore()
	if err != nil || name != "bfadd" {
		return err
	}
	capacity := int64(math.Ceil(float64(b.cfg.Num) / float64(b.cfg.SketchKeys)))
	for k := range min(b.cfg.SketchKeys, b.cfg.Num) {
		err := s.BFReserve(b.sketchKey(nil, name, k), sketchBloomRate, capacity, nil)
		if err != nil && !errors.Is(err, sketchcol.ErrItemExists) {
			return fmt.Errorf("BFReserve: %w", err)
		}
	}
	return nil
}

// sketchAdds makes the threads of pfadd and bfadd: each adds its share of
// the elements, reporting the command's reply as "found" (false for a
// blind add).
func (b *bench) sketchAdds(name string) threadMaker {
	s, reply := b.store, b.cfg.SketchReply
	return func(t, threads int) thread {
		lo, hi := split(b.cfg.Num, t, threads)
		elem := make([]byte, b.cfg.KeySize)
		var key []byte
		return thread{n: hi - lo, op: func(i int) (bool, error) {
			n := lo + i
			e := b.ks.present(elem, uint64(n))
			key = b.sketchKey(key[:0], name, n)
			switch {
			case name == "pfadd" && reply:
				return s.PFAdd(key, e)
			case name == "pfadd":
				return false, s.PFAddBlind(key, e)
			case reply:
				return s.BFAdd(key, e)
			}
			return false, s.BFAddBlind(key, e)
		}}
	}
}

// sketchKeys returns every key of benchmark name.
func (b *bench) sketchKeys(name string) [][]byte {
	keys := make([][]byte, min(b.cfg.SketchKeys, b.cfg.Num))
	for k := range keys {
		keys[k] = b.sketchKey(nil, name, k)
	}
	return keys
}

// checkSketch adds the untimed checks of pfadd and bfadd to r.
func (b *bench) checkSketch(r *result) {
	mode := "blind (no read)"
	if b.cfg.SketchReply {
		mode = "with reply (read, then write)"
	}
	what := map[string]string{"pfadd": "PFAdd of 1 element", "bfadd": "BFAdd of 1 item"}[r.Name]
	r.Notes = append(r.Notes, fmt.Sprintf("%s per op, %s, into %d keys of the sketch column family (sketchcol.Store)",
		what, mode, min(b.cfg.SketchKeys, b.cfg.Num)))
	if r.Error != "" {
		return
	}
	var err error
	if r.Name == "pfadd" {
		err = b.checkPFAdd(r)
	} else {
		err = b.checkBFAdd(r)
	}
	if err != nil {
		r.Error = err.Error()
	}
	r.Notes = append(r.Notes, "sketch column family: "+shapeOf(b.store.ColumnFamily().Metrics()).brief())
}

// checkPFAdd compares the count of the union of the HLLs with the number
// of distinct elements added; more than 5% off (six standard errors) is
// an error.
func (b *bench) checkPFAdd(r *result) error {
	n, err := b.store.PFCount(b.sketchKeys("pfadd")...)
	if err != nil {
		return fmt.Errorf("PFCount: %w", err)
	}
	rel := float64(n)/float64(b.cfg.Num) - 1
	r.Notes = append(r.Notes, fmt.Sprintf("PFCount of the union of the keys: %s for %s distinct elements added (%+.2f%%; standard error 0.81%%)",
		commas(n), commas(int64(b.cfg.Num)), 100*rel))
	if math.Abs(rel) > 0.05 {
		return fmt.Errorf("PFCount %d is %.1f%% off the %d distinct elements added", n, 100*rel, b.cfg.Num)
	}
	return nil
}

// checkBFAdd looks for false negatives among up to 100,000 added items and
// measures the false-positive rate over up to 100,000 never-added ones. A
// false negative is an error, and so is a rate whose 95% interval lies
// above twice the requested one.
func (b *bench) checkBFAdd(r *result) error {
	const sample = 100_000
	num := b.cfg.Num
	probes := min(num, sample)
	present := make([]int, probes)
	for j := range present {
		present[j] = int(int64(j) * int64(num) / int64(probes))
	}
	negatives, err := b.bloomProbe(present, b.ks.present, false)
	if err != nil {
		return err
	}
	missing := make([]int, max(min(b.cfg.Reads, sample), 1000))
	for j := range missing {
		missing[j] = j
	}
	fps, err := b.bloomProbe(missing, b.ks.missing, true)
	if err != nil {
		return err
	}
	p, lo, hi := wilson(fps, int64(len(missing)))
	info, err := b.store.BFInfo(b.sketchKey(nil, "bfadd", 0))
	if err != nil {
		return fmt.Errorf("BFInfo: %w", err)
	}
	r.Notes = append(r.Notes, fmt.Sprintf("%d false negatives among %s added items; FPR %s measured (95%% CI %s–%s over %s never-added items) vs %s requested (bound %s once scaled)",
		negatives, commas(int64(probes)), pct(p), pct(lo), pct(hi), commas(int64(len(missing))), pct(sketchBloomRate), pct(2*sketchBloomRate)))
	r.Notes = append(r.Notes, fmt.Sprintf("BF.INFO of the first key: capacity %s in %d sub-filter(s), %s items inserted, %s",
		commas(info.Capacity), info.Filters, commas(info.ItemsInserted), humanBytes(info.Size)))
	switch {
	case negatives > 0:
		return fmt.Errorf("%d added items test negative in their Bloom filter", negatives)
	case lo > 2*sketchBloomRate:
		return fmt.Errorf("false-positive rate %s is above twice the requested %s", pct(p), pct(sketchBloomRate))
	}
	return nil
}

// bloomProbe asks BF.MEXISTS, one read per key, for the items numbered ns
// (item n made by item, in key n mod -sketch_keys) and counts the answers
// equal to want.
func (b *bench) bloomProbe(ns []int, item func(dst []byte, n uint64) []byte, want bool) (int64, error) {
	byKey := make(map[int][][]byte)
	for _, n := range ns {
		k := n % b.cfg.SketchKeys
		byKey[k] = append(byKey[k], item(make([]byte, b.cfg.KeySize), uint64(n)))
	}
	var count int64
	for k, items := range byKey {
		got, err := b.store.BFMExists(b.sketchKey(nil, "bfadd", k), items...)
		if err != nil {
			return 0, fmt.Errorf("BFMExists: %w", err)
		}
		for _, ok := range got {
			if ok == want {
				count++
			}
		}
	}
	return count, nil
}
