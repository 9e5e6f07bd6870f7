package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/sketchcol"
)

// bloomScaling fills three Bloom values of the same initial geometry past
// their capacity: a plain filter.StandardBloomFilter (it drifts), sketchcol's
// ScalableBloom (it stacks sub-filters, RedisBloom-style) and a
// non-scaling ScalableBloom (it refuses with ErrFilterFull).
type bloomScaling struct {
	Capacity  int     `json:"capacity"`
	Rate      float64 `json:"rate"`
	Expansion int     `json:"expansion"`
	// NonScalingFullAt is the number of items the non-scaling value held
	// when it first refused one (0: never).
	NonScalingFullAt int64             `json:"non_scaling_full_at"`
	Rows             []bloomScalingRow `json:"rows"`
}

type bloomScalingRow struct {
	Fill           float64 `json:"fill"` // items added / capacity
	Keys           int64   `json:"keys"`
	SingleFPR      float64 `json:"single_fpr"`
	SingleBytes    int     `json:"single_bytes"`
	SingleFill     float64 `json:"single_fill_ratio"`
	ScalableFPR    float64 `json:"scalable_fpr"`
	ScalableExpect float64 `json:"scalable_expected_fpr"`
	ScalableBytes  int64   `json:"scalable_bytes"`
	Layers         int64   `json:"scalable_sub_filters"`
}

var scalingFills = []float64{0.5, 1, 1.5, 2, 3, 4, 6, 8}

func (l *sketchLab) bloomScaling() (*bloomScaling, error) {
	c := l.cfg
	single, err := filter.NewStandardBloomFilter(uint64(c.Capacity), c.Rate)
	if err != nil {
		return nil, err
	}
	spec := sketchcol.BloomSpec{ErrorRate: c.Rate, Capacity: int64(c.Capacity), Expansion: 2}
	scalable, err := sketchcol.NewScalableBloom(spec)
	if err != nil {
		return nil, err
	}
	spec.NonScaling = true
	fixed, err := sketchcol.NewScalableBloom(spec)
	if err != nil {
		return nil, err
	}
	bs := &bloomScaling{Capacity: c.Capacity, Rate: c.Rate, Expansion: 2}
	ks := keyspace{num: c.Capacity, keySize: c.KeySize}
	key := make([]byte, c.KeySize)
	ph := l.prog.start("bloom values", int64(len(scalingFills)))
	defer ph.finish()
	var added int64
	for _, fill := range scalingFills {
		for target := int64(fill * float64(c.Capacity)); added < target; added++ {
			k := ks.present(key, uint64(added))
			single.Add(k)
			if _, err := scalable.Add(k); err != nil {
				return nil, fmt.Errorf("scalable Bloom value: %w", err)
			}
			if bs.NonScalingFullAt == 0 {
				if _, err := fixed.Add(k); errors.Is(err, sketchcol.ErrFilterFull) {
					bs.NonScalingFullAt = fixed.Card()
				} else if err != nil {
					return nil, err
				}
			}
		}
		if err := l.ctx.Err(); err != nil {
			return nil, err
		}
		var sfp, kfp int64
		for j := range c.Probes {
			k := ks.missing(key, uint64(j))
			if single.Test(k) {
				sfp++
			}
			if scalable.Exists(k) {
				kfp++
			}
		}
		sb, _ := single.MarshalBinary()
		info := scalable.Info()
		bs.Rows = append(bs.Rows, bloomScalingRow{Fill: fill, Keys: added,
			SingleFPR: float64(sfp) / float64(c.Probes), SingleBytes: len(sb), SingleFill: single.FillRatio(),
			ScalableFPR: float64(kfp) / float64(c.Probes), ScalableExpect: scalable.ExpectedFPR(),
			ScalableBytes: info.Size, Layers: info.Filters})
		ph.add(1)
	}
	return bs, nil
}

func printBloomScaling(w io.Writer, bs *bloomScaling) {
	fmt.Fprintf(w, "2. Bloom values past capacity: sized for %s items at %s\n", commas(int64(bs.Capacity)), pct(bs.Rate))
	fmt.Fprintf(w, "   one filter.StandardBloomFilter, against sketchcol.ScalableBloom (expansion %d: each sub-filter ×%d capacity at half the error rate)\n",
		bs.Expansion, bs.Expansion)
	fmt.Fprintf(w, "%6s %11s | %10s %9s %10s | %10s %10s %5s %10s\n", "fill", "items", "one FPR", "bits set", "size",
		"scalable", "expected", "subs", "size")
	for _, r := range bs.Rows {
		fmt.Fprintf(w, "%5.1fn %11s | %10s %9s %10s | %10s %10s %5d %10s\n", r.Fill, commas(r.Keys), pct(r.SingleFPR), pct(r.SingleFill),
			humanBytes(int64(r.SingleBytes)), pct(r.ScalableFPR), pct(r.ScalableExpect), r.Layers, humanBytes(r.ScalableBytes))
	}
	fmt.Fprintf(w, "The scalable value stays under %s (p·Σ 0.5^i) by growing; the single filter keeps its size and drifts.\n", pct(2*bs.Rate))
	if bs.NonScalingFullAt > 0 {
		fmt.Fprintf(w, "A non-scaling value (BF.RESERVE … NONSCALING) refused item %s with ErrFilterFull instead.\n",
			commas(bs.NonScalingFullAt+1))
	}
	fmt.Fprintln(w)
}

// cuckooLoad fills filter.CuckooTableFilter (fixed size, f-bit fingerprints) to
// ErrFull, measuring on the way, then deletes half its keys; and fills
// sketchcol's scalable cuckoo value (RedisBloom: 8-bit fingerprints,
// sub-filters stacked when full) well past its capacity.
type cuckooLoad struct {
	Capacity        int             `json:"capacity"`
	FingerprintBits int             `json:"fingerprint_bits"`
	Bytes           int             `json:"bytes"`
	FullAt          int64           `json:"full_at"`
	FullLoad        float64         `json:"full_load"`
	Rows            []cuckooLoadRow `json:"rows"`
	// After deleting every other key: the rate, the load, and added keys
	// no longer found (must be 0 when only added keys are deleted).
	AfterDeleteFPR            float64 `json:"after_delete_fpr"`
	AfterDeleteLoad           float64 `json:"after_delete_load"`
	AfterDeleteFalseNegatives int64   `json:"after_delete_false_negatives"`
	// The scalable value (sketchcol.CuckooFilter).
	ScalableSpec sketchcol.CuckooSpec `json:"scalable_spec"`
	Scalable     []cuckooScalingRow   `json:"scalable_rows"`
}

type cuckooLoadRow struct {
	Keys        int64   `json:"keys"`
	Load        float64 `json:"load"`
	MeasuredFPR float64 `json:"measured_fpr"`
	TheoryFPR   float64 `json:"theory_fpr"`
}

type cuckooScalingRow struct {
	Fill       float64 `json:"fill"`
	Keys       int64   `json:"keys"`
	FPR        float64 `json:"fpr"`
	SubFilters int64   `json:"sub_filters"`
	Bytes      int64   `json:"bytes"`
}

func (l *sketchLab) cuckooLoad() (*cuckooLoad, error) {
	c := l.cfg
	f := filter.CuckooFingerprintBits(c.Rate)
	cf, err := filter.NewCuckooTableFilter(uint64(c.Capacity), f)
	if err != nil {
		return nil, err
	}
	b, _ := cf.MarshalBinary()
	cl := &cuckooLoad{Capacity: c.Capacity, FingerprintBits: f, Bytes: len(b)}
	ks := keyspace{num: c.Capacity, keySize: c.KeySize}
	key := make([]byte, c.KeySize)
	rate := func(test func([]byte) bool) float64 {
		var fp int64
		for j := range c.Probes {
			if test(ks.missing(key, uint64(j))) {
				fp++
			}
		}
		return float64(fp) / float64(c.Probes)
	}
	ph := l.prog.start("cuckoo values", -1)
	defer ph.finish()
	var added int64
	for _, m := range []float64{0.25, 0.5, 0.75, 0.9, 0.95, 1, 1.05, 1.1} {
		for target := int64(m * float64(c.Capacity)); added < target; added++ {
			if err := cf.Add(ks.present(key, uint64(added))); errors.Is(err, filter.ErrFull) {
				cl.FullAt, cl.FullLoad = added, cf.Load()
				break
			} else if err != nil {
				return nil, err
			}
		}
		if err := l.ctx.Err(); err != nil {
			return nil, err
		}
		cl.Rows = append(cl.Rows, cuckooLoadRow{Keys: int64(cf.Len()), Load: cf.Load(), MeasuredFPR: rate(cf.Test), TheoryFPR: filter.CuckooFPR(f, cf.Load())})
		if cl.FullAt > 0 {
			break
		}
	}
	for i := int64(0); i < added; i += 2 {
		cf.Delete(ks.present(key, uint64(i)))
	}
	for i := int64(1); i < added; i += 2 {
		if !cf.Test(ks.present(key, uint64(i))) {
			cl.AfterDeleteFalseNegatives++
		}
	}
	cl.AfterDeleteFPR, cl.AfterDeleteLoad = rate(cf.Test), cf.Load()
	return cl, l.cuckooScaling(cl)
}

// cuckooScaling fills sketchcol's cuckoo value with RedisBloom's default
// geometry (bucket size 2, 20 kicks, expansion 1) at this capacity to 8×
// its capacity.
func (l *sketchLab) cuckooScaling(cl *cuckooLoad) error {
	c := l.cfg
	spec := sketchcol.DefaultCuckooSpec()
	spec.Capacity = int64(c.Capacity)
	sc, err := sketchcol.NewCuckooFilter(spec)
	if err != nil {
		return err
	}
	cl.ScalableSpec = sc.Spec()
	ks := keyspace{num: c.Capacity, keySize: c.KeySize}
	key := make([]byte, c.KeySize)
	var added int64
	for _, fill := range scalingFills {
		for target := int64(fill * float64(c.Capacity)); added < target; added++ {
			if err := sc.Add(ks.present(key, uint64(added))); err != nil {
				return fmt.Errorf("scalable cuckoo value at %d items: %w", added, err)
			}
		}
		var fp int64
		for j := range c.Probes {
			if sc.Exists(ks.missing(key, uint64(j))) {
				fp++
			}
		}
		info := sc.Info()
		cl.Scalable = append(cl.Scalable, cuckooScalingRow{Fill: fill, Keys: added, FPR: float64(fp) / float64(c.Probes),
			SubFilters: info.NumFilters, Bytes: info.Size})
	}
	return nil
}

func printCuckooLoad(w io.Writer, cl *cuckooLoad) {
	fmt.Fprintf(w, "3. Cuckoo values. filter.CuckooTableFilter sized for %s keys, f = %d (%s): filling up, then deleting\n",
		commas(int64(cl.Capacity)), cl.FingerprintBits, humanBytes(int64(cl.Bytes)))
	fmt.Fprintf(w, "%11s %7s %10s %10s\n", "keys", "load", "measured", "theory")
	for _, r := range cl.Rows {
		fmt.Fprintf(w, "%11s %7s %10s %10s\n", commas(r.Keys), pct(r.Load), pct(r.MeasuredFPR), pct(r.TheoryFPR))
	}
	if cl.FullAt > 0 {
		fmt.Fprintf(w, "Full: Add returned ErrFull at key %s (load %s); the filter is unchanged by the refused key.\n",
			commas(cl.FullAt), pct(cl.FullLoad))
	} else {
		fmt.Fprintf(w, "It never refused a key up to %s keys.\n", commas(cl.Rows[len(cl.Rows)-1].Keys))
	}
	fmt.Fprintf(w, "After deleting every other key: load %s, FPR %s, %d remaining keys lost (must be 0).\n",
		pct(cl.AfterDeleteLoad), pct(cl.AfterDeleteFPR), cl.AfterDeleteFalseNegatives)
	s := cl.ScalableSpec
	fmt.Fprintf(w, "sketchcol.CuckooFilter (RedisBloom geometry: 8-bit fingerprints, bucket size %d, %d kicks, expansion %d), capacity %s:\n",
		s.BucketSize, s.MaxIterations, s.Expansion, commas(s.Capacity))
	fmt.Fprintf(w, "%6s %11s %10s %5s %10s\n", "fill", "items", "FPR", "subs", "size")
	for _, r := range cl.Scalable {
		fmt.Fprintf(w, "%5.1fn %11s %10s %5d %10s\n", r.Fill, commas(r.Keys), pct(r.FPR), r.SubFilters, humanBytes(r.Bytes))
	}
	fmt.Fprintf(w, "Each sub-filter adds its own false positives (about 2·b/255 when full), so a growing cuckoo value drifts upward.\n\n")
}
