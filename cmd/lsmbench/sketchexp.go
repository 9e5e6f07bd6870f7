package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"

	"github.com/sievedb/sieve/filter"
)

type sketchLab struct {
	cfg  sketchLabConfig
	ctx  context.Context
	prog *progress
}

// memoryRow is one structure in the memory table.
type memoryRow struct {
	Structure string  `json:"structure"`
	Bytes     float64 `json:"bytes"`
	BitsPerID float64 `json:"bits_per_id"`
	Answers   string  `json:"answers"`
	How       string  `json:"how"`
}

// hllDenseBytes is a Redis HyperLogLog in the dense encoding: the 16-byte
// header and 16384 registers of 6 bits.
const hllDenseBytes = 16 + 16384*6/8

const sampleIDs = 1_000_000

func (l *sketchLab) memory() []memoryRow {
	n, p, ks := float64(l.cfg.N), l.cfg.Rate, l.cfg.KeySize
	row := func(name string, bytes float64, answers, how string) memoryRow {
		return memoryRow{Structure: name, Bytes: bytes, BitsPerID: 8 * bytes / n, Answers: answers, How: how}
	}
	sample := min(l.cfg.N, sampleIDs)
	mapBytes := measureMapBytes(sample, ks)
	f := filter.CuckooFingerprintBits(p)
	cf, _ := filter.NewCuckooFilter(uint64(sample), f)
	cblob, _ := cf.MarshalBinary()
	return []memoryRow{
		row("exact set (Go map[string]struct{})", mapBytes*n, "membership, exact",
			fmt.Sprintf("measured at %s IDs (%.0f B/ID), scaled", commas(int64(sample)), mapBytes)),
		row("sorted array of IDs", n*float64(ks), "membership, exact (binary search)", fmt.Sprintf("n × %d B", ks)),
		row(fmt.Sprintf("Bloom, classic (k = %d)", filter.OptimalK(filter.BitsPerKey(p))), n*filter.BitsPerKey(p)/8,
			"membership, "+pct(p)+" false positives, no delete", fmt.Sprintf("−n·ln p/(ln 2)² = %.2f bits/ID", filter.BitsPerKey(p))),
		row("Bloom, blocked (sieve's table filter)", n*filter.BloomBitsPerKey(p)/8,
			"membership, "+pct(p)+" false positives, no delete", fmt.Sprintf("filter.BloomBitsPerKey(p) = %.2f bits/ID", filter.BloomBitsPerKey(p))),
		row(fmt.Sprintf("cuckoo (f = %d)", f), float64(len(cblob))/float64(sample)*n,
			"membership, ≤ "+pct(8/math.Exp2(float64(f)))+" false positives, delete",
			fmt.Sprintf("filter.NewCuckooFilter at %s IDs, scaled", commas(int64(sample)))),
		row("bitmap (dense integer IDs 0..n−1)", n/8, "membership, exact; only for dense integer IDs", "n bits"),
		row("HyperLogLog (Redis dense)", hllDenseBytes, "count only, ±0.81% standard error; not membership",
			"16 B header + 16384 six-bit registers"),
	}
}

// measureMapBytes returns the heap bytes per entry of a map[string]struct{}
// holding n IDs of keySize bytes.
func measureMapBytes(n, keySize int) float64 {
	ks := keyspace{num: n, keySize: keySize}
	key := make([]byte, keySize)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	set := make(map[string]struct{})
	for i := range n {
		set[string(ks.present(key, uint64(i)))] = struct{}{}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(set)
	return math.Max(0, float64(after.HeapAlloc)-float64(before.HeapAlloc)) / float64(n)
}

func printMemory(w io.Writer, c *sketchLabConfig, rows []memoryRow) {
	fmt.Fprintf(w, "1. Remembering %s IDs of %d B (rate p = %s)\n", commas(int64(c.N)), c.KeySize, pct(c.Rate))
	fmt.Fprintf(w, "%-38s %10s %9s  %-52s %s\n", "structure", "memory", "bits/ID", "answers", "from")
	for _, r := range rows {
		fmt.Fprintf(w, "%-38s %10s %9.2f  %-52s %s\n", r.Structure, humanBytes(int64(r.Bytes)), r.BitsPerID, r.Answers, r.How)
	}
	fmt.Fprintf(w, "A filter answers \"maybe\" or \"certainly not\": never let one decide permissions or billing.\n\n")
}

// bloomScaling compares one Bloom value filled past its capacity with a
// stack of layers that grows as RedisBloom's scalable filter does.
type bloomScaling struct {
	Capacity  int               `json:"capacity"`
	Rate      float64           `json:"rate"`
	Expansion float64           `json:"expansion"`
	Tighten   float64           `json:"tightening"`
	Rows      []bloomScalingRow `json:"rows"`
}

type bloomScalingRow struct {
	Fill         float64 `json:"fill"`
	Keys         int64   `json:"keys"`
	SingleFPR    float64 `json:"single_fpr"`
	SingleBytes  int     `json:"single_bytes"`
	SingleFill   float64 `json:"single_fill_ratio"`
	StackedFPR   float64 `json:"stacked_fpr"`
	StackedBytes int     `json:"stacked_bytes"`
	Layers       int     `json:"stacked_layers"`
}

// stackedBloom is a model of a scalable Bloom filter (Almeida et al. 2007,
// as RedisBloom implements it) built from filter.BloomFilter layers: when
// the newest layer holds its capacity, a layer expansion times larger with
// tighten times the error rate is added; a key may be in any layer.
type stackedBloom struct {
	layers             []*filter.BloomFilter
	expansion, tighten float64
}

func newStackedBloom(capacity uint64, p, expansion, tighten float64) (*stackedBloom, error) {
	f, err := filter.NewBloomFilter(capacity, p)
	if err != nil {
		return nil, err
	}
	return &stackedBloom{layers: []*filter.BloomFilter{f}, expansion: expansion, tighten: tighten}, nil
}

func (s *stackedBloom) add(key []byte) error {
	top := s.layers[len(s.layers)-1]
	if top.Count() >= top.Capacity() {
		next, err := filter.NewBloomFilter(uint64(float64(top.Capacity())*s.expansion), top.ErrorRate()*s.tighten)
		if err != nil {
			return err
		}
		s.layers, top = append(s.layers, next), next
	}
	top.Add(key)
	return nil
}

func (s *stackedBloom) test(key []byte) bool {
	for _, f := range s.layers {
		if f.Test(key) {
			return true
		}
	}
	return false
}

func (s *stackedBloom) bytes() int {
	n := 0
	for _, f := range s.layers {
		b, _ := f.MarshalBinary()
		n += len(b)
	}
	return n
}

var scalingFills = []float64{0.5, 1, 1.5, 2, 3, 4, 6, 8}

func (l *sketchLab) bloomScaling() (*bloomScaling, error) {
	c := l.cfg
	single, err := filter.NewBloomFilter(uint64(c.Capacity), c.Rate)
	if err != nil {
		return nil, err
	}
	stack, err := newStackedBloom(uint64(c.Capacity), c.Rate, 2, 0.5)
	if err != nil {
		return nil, err
	}
	bs := &bloomScaling{Capacity: c.Capacity, Rate: c.Rate, Expansion: 2, Tighten: 0.5}
	ks := keyspace{num: c.Capacity, keySize: c.KeySize}
	key := make([]byte, c.KeySize)
	ph := l.prog.start("bloom scaling", int64(len(scalingFills)))
	defer ph.finish()
	var added int64
	for _, fill := range scalingFills {
		for target := int64(fill * float64(c.Capacity)); added < target; added++ {
			k := ks.present(key, uint64(added))
			single.Add(k)
			if err := stack.add(k); err != nil {
				return nil, err
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
			if stack.test(k) {
				kfp++
			}
		}
		sb, _ := single.MarshalBinary()
		bs.Rows = append(bs.Rows, bloomScalingRow{Fill: fill, Keys: added,
			SingleFPR: float64(sfp) / float64(c.Probes), SingleBytes: len(sb), SingleFill: single.FillRatio(),
			StackedFPR: float64(kfp) / float64(c.Probes), StackedBytes: stack.bytes(), Layers: len(stack.layers)})
		ph.add(1)
	}
	return bs, nil
}

func printBloomScaling(w io.Writer, bs *bloomScaling) {
	fmt.Fprintf(w, "2. Bloom values past capacity: one filter sized for %s at %s, against a stack of layers\n",
		commas(int64(bs.Capacity)), pct(bs.Rate))
	fmt.Fprintf(w, "   (RedisBloom-style: each new layer ×%g capacity at ×%g error; modelled with filter.BloomFilter — sketchcol will do this itself)\n", bs.Expansion, bs.Tighten)
	fmt.Fprintf(w, "%6s %11s | %10s %9s %10s | %10s %7s %10s\n", "fill", "keys", "single FPR", "bits set", "size", "stack FPR", "layers", "size")
	for _, r := range bs.Rows {
		fmt.Fprintf(w, "%5.1fn %11s | %10s %9s %10s | %10s %7d %10s\n", r.Fill, commas(r.Keys), pct(r.SingleFPR), pct(r.SingleFill),
			humanBytes(int64(r.SingleBytes)), pct(r.StackedFPR), r.Layers, humanBytes(int64(r.StackedBytes)))
	}
	fmt.Fprintf(w, "The stack stays under %s (p·Σ 0.5^i) by growing; the single filter stays the same size and drifts.\n\n", pct(2*bs.Rate))
}

// cuckooLoad fills a cuckoo value to ErrFull, measuring on the way, then
// deletes half its keys.
type cuckooLoad struct {
	Capacity        int             `json:"capacity"`
	FingerprintBits int             `json:"fingerprint_bits"`
	Bytes           int             `json:"bytes"`
	FullAt          int64           `json:"full_at"`
	FullLoad        float64         `json:"full_load"`
	Rows            []cuckooLoadRow `json:"rows"`
	// After deleting every other key: the rate, and added keys no longer
	// found (must be 0 when only added keys are deleted).
	AfterDeleteFPR            float64 `json:"after_delete_fpr"`
	AfterDeleteLoad           float64 `json:"after_delete_load"`
	AfterDeleteFalseNegatives int64   `json:"after_delete_false_negatives"`
}

type cuckooLoadRow struct {
	Keys        int64   `json:"keys"`
	Load        float64 `json:"load"`
	MeasuredFPR float64 `json:"measured_fpr"`
	TheoryFPR   float64 `json:"theory_fpr"`
}

func (l *sketchLab) cuckooLoad() (*cuckooLoad, error) {
	c := l.cfg
	f := filter.CuckooFingerprintBits(c.Rate)
	cf, err := filter.NewCuckooFilter(uint64(c.Capacity), f)
	if err != nil {
		return nil, err
	}
	b, _ := cf.MarshalBinary()
	cl := &cuckooLoad{Capacity: c.Capacity, FingerprintBits: f, Bytes: len(b)}
	ks := keyspace{num: c.Capacity, keySize: c.KeySize}
	key := make([]byte, c.KeySize)
	measure := func() float64 {
		var fp int64
		for j := range c.Probes {
			if cf.Test(ks.missing(key, uint64(j))) {
				fp++
			}
		}
		return float64(fp) / float64(c.Probes)
	}
	ph := l.prog.start("cuckoo load", -1)
	defer ph.finish()
	marks := []float64{0.25, 0.5, 0.75, 0.9, 0.95, 1, 1.05, 1.1}
	var added int64
	for _, m := range marks {
		target := int64(m * float64(c.Capacity))
		for ; added < target; added++ {
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
		cl.Rows = append(cl.Rows, cuckooLoadRow{Keys: int64(cf.Len()), Load: cf.Load(), MeasuredFPR: measure(), TheoryFPR: filter.CuckooFPR(f, cf.Load())})
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
	cl.AfterDeleteFPR, cl.AfterDeleteLoad = measure(), cf.Load()
	return cl, nil
}

func printCuckooLoad(w io.Writer, cl *cuckooLoad) {
	fmt.Fprintf(w, "3. A cuckoo value sized for %s keys, f = %d (%s): filling up, then deleting\n",
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
	fmt.Fprintf(w, "After deleting every other key: load %s, FPR %s, %d remaining keys lost (must be 0).\n\n",
		pct(cl.AfterDeleteLoad), pct(cl.AfterDeleteFPR), cl.AfterDeleteFalseNegatives)
}

func writeSketchFiles(dir string, rep *sketchLabReport) ([]string, error) {
	var paths []string
	add := func(name string, write func(io.Writer) error) error {
		p, err := writeFile(dir, name, write)
		if err == nil {
			paths = append(paths, p)
		}
		return err
	}
	if rep.Memory != nil {
		err := add("sketch_memory.csv", func(w io.Writer) error {
			var rows [][]string
			for _, r := range rep.Memory {
				rows = append(rows, []string{r.Structure, ff(r.Bytes), ff(r.BitsPerID), r.Answers, r.How})
			}
			return writeRows(w, []string{"structure", "bytes", "bits_per_id", "answers", "how"}, rows)
		})
		if err != nil {
			return paths, err
		}
	}
	if bs := rep.Bloom; bs != nil {
		err := add("bloom_scaling.csv", func(w io.Writer) error {
			var rows [][]string
			for _, r := range bs.Rows {
				rows = append(rows, []string{ff(r.Fill), fi(r.Keys), ff(r.SingleFPR), fi(int64(r.SingleBytes)), ff(r.SingleFill),
					ff(r.StackedFPR), fi(int64(r.StackedBytes)), fi(int64(r.Layers))})
			}
			return writeRows(w, []string{"fill", "keys", "single_fpr", "single_bytes", "single_fill_ratio", "stacked_fpr", "stacked_bytes", "layers"}, rows)
		})
		if err == nil {
			err = add("bloom_scaling.svg", func(w io.Writer) error { return bloomScalingChart(bs).writeSVG(w) })
		}
		if err != nil {
			return paths, err
		}
	}
	if cl := rep.Cuckoo; cl != nil {
		err := add("cuckoo_load.csv", func(w io.Writer) error {
			var rows [][]string
			for _, r := range cl.Rows {
				rows = append(rows, []string{fi(r.Keys), ff(r.Load), ff(r.MeasuredFPR), ff(r.TheoryFPR)})
			}
			return writeRows(w, []string{"keys", "load", "measured_fpr", "theory_fpr"}, rows)
		})
		if err == nil {
			err = add("cuckoo_load.svg", func(w io.Writer) error { return cuckooLoadChart(cl).writeSVG(w) })
		}
		if err != nil {
			return paths, err
		}
	}
	return paths, nil
}

func bloomScalingChart(bs *bloomScaling) *chart {
	c := &chart{Title: fmt.Sprintf("Bloom value sized for %s at %s, filled past capacity", commas(int64(bs.Capacity)), pct(bs.Rate)),
		XLabel: "keys added / capacity", YLabel: "false-positive rate (log scale)", LogY: true, YFormat: fpct, XMin: 0}
	var single, stacked []point
	for _, r := range bs.Rows {
		single = append(single, point{r.Fill, r.SingleFPR})
		stacked = append(stacked, point{r.Fill, r.StackedFPR})
		c.XMax = math.Max(c.XMax, math.Ceil(r.Fill))
	}
	c.Series = []series{
		{Name: "one filter", Points: single, Line: true, Marker: "circle"},
		{Name: "stacked layers (model)", Points: stacked, Line: true, Marker: "square"},
	}
	c.HLines = []refLine{{At: bs.Rate, Label: "sized for " + pct(bs.Rate)}}
	return c
}

func cuckooLoadChart(cl *cuckooLoad) *chart {
	c := &chart{Title: fmt.Sprintf("Cuckoo value, f = %d: false positives against load", cl.FingerprintBits),
		XLabel: "load (fingerprints / slots)", YLabel: "false-positive rate", YFormat: fpct, XFormat: fpct, XMin: 0, XMax: 1}
	var measured, theory []point
	for _, r := range cl.Rows {
		measured = append(measured, point{r.Load, r.MeasuredFPR})
	}
	for x := 0.0; x <= 1.0001; x += 0.05 {
		theory = append(theory, point{x, filter.CuckooFPR(cl.FingerprintBits, x)})
	}
	c.Series = []series{
		{Name: "1 − (1 − load/(2^f−1))^8", Points: theory, Line: true, Dashed: true, Color: palette[1]},
		{Name: "measured", Points: measured, Marker: "circle", Color: palette[0]},
	}
	c.HLines = []refLine{{At: 8 / math.Exp2(float64(cl.FingerprintBits)), Label: "bound 8/2^f"}}
	return c
}
