package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sievedb/sieve/sketchcol"
)

// The sketch lab's "counters" section: sketchcol's Count-Min and Top-K
// values on a Zipfian stream of -capacity × 10 item occurrences over
// -capacity distinct IDs (s = 1.01), and both written through the Store:
//
//   - memory: the value's bytes;
//   - accuracy: Count-Min's fraction of distinct IDs whose estimate
//     exceeds the true count by more than ε·N (theory: ≤ δ) and mean
//     overestimate; Top-K's precision and recall of the true top k;
//   - throughput: CMS.INCRBY through the Store with its reply (read the
//     value, answer, write an operand) against CMSIncrByBlind (write the
//     operand only), one item per command, min(-capacity, 5000) commands
//     each, in the same run; the same for TOPK.ADD.

// countersRun is the -json record of the counters section.
type countersRun struct {
	Distinct    int           `json:"distinct"`
	Occurrences int           `json:"occurrences"`
	ZipfS       float64       `json:"zipf_s"`
	CMS         []cmsRow      `json:"cms"`
	TopK        []topKRow     `json:"topk"`
	Throughput  []throughRow  `json:"throughput"`
	Elapsed     time.Duration `json:"elapsed_ns"`
}

type cmsRow struct {
	Epsilon, Delta float64
	Width, Depth   int
	ValueBytes     int     `json:"value_bytes"`
	OverFraction   float64 `json:"over_eps_n_fraction"`
	MeanOver       float64 `json:"mean_overestimate"`
}

type topKRow struct {
	K, Width, Depth int
	ValueBytes      int     `json:"value_bytes"`
	Precision       float64 `json:"precision"`
	Recall          float64 `json:"recall"`
}

type throughRow struct {
	Command    string  `json:"command"`
	Ops        int     `json:"ops"`
	ReplyPerS  float64 `json:"reply_ops_per_sec"`
	BlindPerS  float64 `json:"blind_ops_per_sec"`
	BlindRatio float64 `json:"blind_over_reply"`
}

// countersThroughputOps bounds the commands timed per form.
const countersThroughputOps = 5000

func (l *sketchLab) counters() (*countersRun, error) {
	start := time.Now()
	c := l.cfg
	ph := l.prog.start("counters", 3)
	defer ph.finish()
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.01, 1, uint64(c.Capacity-1))
	ks := keyspace{num: c.Capacity, keySize: c.KeySize}
	stream := make([][]byte, 10*c.Capacity)
	truth := make(map[string]int, c.Capacity)
	for i := range stream {
		stream[i] = ks.present(make([]byte, c.KeySize), zipf.Uint64())
		truth[string(stream[i])]++
	}
	run := &countersRun{Distinct: len(truth), Occurrences: len(stream), ZipfS: 1.01}
	for _, p := range [][2]float64{{0.01, 0.01}, {0.001, 0.01}, {0.0001, 0.001}} {
		row, err := cmsAccuracy(p[0], p[1], stream, truth)
		if err != nil {
			return nil, err
		}
		run.CMS = append(run.CMS, row)
	}
	ph.add(1)
	for _, spec := range []sketchcol.TopKSpec{{K: 10, Width: 8, Depth: 7, Decay: 0.9}, {K: 50, Width: 400, Depth: 5, Decay: 0.9},
		{K: 100, Width: 2000, Depth: 7, Decay: 0.9}} {
		row, err := topKAccuracy(spec, stream, truth)
		if err != nil {
			return nil, err
		}
		run.TopK = append(run.TopK, row)
	}
	ph.add(1)
	var err error
	run.Throughput, err = countersThroughput(stream[:min(c.Capacity, countersThroughputOps)])
	ph.add(1)
	run.Elapsed = time.Since(start)
	return run, err
}

func cmsAccuracy(eps, delta float64, stream [][]byte, truth map[string]int) (cmsRow, error) {
	spec, err := sketchcol.CMSSpecByProb(eps, delta)
	if err != nil {
		return cmsRow{}, err
	}
	cms, err := sketchcol.NewCMS(spec)
	if err != nil {
		return cmsRow{}, err
	}
	for _, it := range stream {
		cms.IncrBy(it, 1)
	}
	v, _ := cms.MarshalBinary()
	row := cmsRow{Epsilon: eps, Delta: delta, Width: spec.Width, Depth: spec.Depth, ValueBytes: len(v)}
	bound := eps * float64(len(stream))
	var over int
	var sum float64
	for item, n := range truth {
		d := float64(cms.Query([]byte(item))) - float64(n)
		sum += d
		if d > bound {
			over++
		}
	}
	row.OverFraction = float64(over) / float64(len(truth))
	row.MeanOver = sum / float64(len(truth))
	return row, nil
}

func topKAccuracy(spec sketchcol.TopKSpec, stream [][]byte, truth map[string]int) (topKRow, error) {
	tk, err := sketchcol.NewTopK(spec)
	if err != nil {
		return topKRow{}, err
	}
	for _, it := range stream {
		tk.Add(it, 1)
	}
	v, _ := tk.MarshalBinary()
	counts := make([]int, 0, len(truth))
	for _, n := range truth {
		counts = append(counts, n)
	}
	slices.Sort(counts)
	kth := counts[max(0, len(counts)-spec.K)]
	trueTop := 0
	for _, n := range truth {
		if n >= kth {
			trueTop++
		}
	}
	list := tk.List()
	hit := 0
	for _, e := range list {
		if truth[string(e.Item)] >= kth {
			hit++
		}
	}
	row := topKRow{K: spec.K, Width: spec.Width, Depth: spec.Depth, ValueBytes: len(v)}
	if len(list) > 0 {
		row.Precision = float64(hit) / float64(len(list))
	}
	row.Recall = float64(hit) / float64(min(trueTop, spec.K))
	return row, nil
}

// countersThroughput times each command over items, one item per command,
// replied then blind, on fresh keys of one temporary database.
func countersThroughput(items [][]byte) ([]throughRow, error) {
	s, done, err := tempStore("lsmbench-counters-")
	if err != nil {
		return nil, err
	}
	defer done()
	one := []int64{1}
	forms := []struct {
		name         string
		init         func(key []byte) error
		reply, blind func(key, item []byte) error
	}{
		{"CMS.INCRBY (2000×7)", func(key []byte) error { return s.CMSInitByDim(key, 2000, 7) },
			func(key, item []byte) error { _, err := s.CMSIncrBy(key, [][]byte{item}, one); return err },
			func(key, item []byte) error { return s.CMSIncrByBlind(key, [][]byte{item}, one) }},
		{"TOPK.ADD (k 50, 400×5)", func(key []byte) error { return s.TopKReserve(key, 50, 400, 5, 0.9) },
			func(key, item []byte) error { _, err := s.TopKAdd(key, item); return err },
			func(key, item []byte) error { return s.TopKAddBlind(key, item) }},
	}
	var rows []throughRow
	for i, f := range forms {
		rk, bk := fmt.Appendf(nil, "reply%d", i), fmt.Appendf(nil, "blind%d", i)
		if err := f.init(rk); err != nil {
			return nil, err
		}
		if err := f.init(bk); err != nil {
			return nil, err
		}
		rr, err := timeOps(items, func(it []byte) error { return f.reply(rk, it) })
		if err != nil {
			return nil, err
		}
		br, err := timeOps(items, func(it []byte) error { return f.blind(bk, it) })
		if err != nil {
			return nil, err
		}
		rows = append(rows, throughRow{Command: f.name, Ops: len(items), ReplyPerS: rr, BlindPerS: br, BlindRatio: br / rr})
	}
	return rows, nil
}

func timeOps(items [][]byte, do func([]byte) error) (float64, error) {
	t0 := time.Now()
	for _, it := range items {
		if err := do(it); err != nil {
			return 0, err
		}
	}
	return float64(len(items)) / math.Max(time.Since(t0).Seconds(), 1e-9), nil
}

func printCounters(w io.Writer, r *countersRun) {
	fmt.Fprintf(w, "6. Count-Min and Top-K on a Zipf(s=%.2f) stream of %s occurrences of %s distinct IDs\n",
		r.ZipfS, commas(int64(r.Occurrences)), commas(int64(r.Distinct)))
	fmt.Fprintf(w, "%-26s %10s  %-34s %s\n", "Count-Min", "memory", "estimates > true + εN (theory ≤ δ)", "mean overestimate")
	for _, c := range r.CMS {
		fmt.Fprintf(w, "%-26s %10s  %-34s %.2f\n", fmt.Sprintf("ε=%v δ=%v (%d×%d)", c.Epsilon, c.Delta, c.Width, c.Depth),
			humanBytes(int64(c.ValueBytes)), fmt.Sprintf("%.4f (δ = %v)", c.OverFraction, c.Delta), c.MeanOver)
	}
	fmt.Fprintf(w, "%-26s %10s  %9s %9s\n", "Top-K (decay 0.9)", "memory", "precision", "recall")
	for _, t := range r.TopK {
		fmt.Fprintf(w, "%-26s %10s  %9.3f %9.3f\n", fmt.Sprintf("k=%d %d×%d", t.K, t.Width, t.Depth), humanBytes(int64(t.ValueBytes)), t.Precision, t.Recall)
	}
	fmt.Fprintf(w, "%-26s %12s %12s %8s\n", "through the Store", "reply ops/s", "blind ops/s", "blind/reply")
	for _, t := range r.Throughput {
		fmt.Fprintf(w, "%-26s %12.0f %12.0f %7.1f×\n", t.Command, t.ReplyPerS, t.BlindPerS, t.BlindRatio)
	}
	fmt.Fprintln(w)
}

func countersCSV(w io.Writer, r *countersRun) error {
	var out [][]string
	for _, c := range r.CMS {
		out = append(out, []string{"cms", fmt.Sprintf("eps=%v delta=%v %dx%d", c.Epsilon, c.Delta, c.Width, c.Depth),
			fi(int64(c.ValueBytes)), ff(c.OverFraction), ff(c.MeanOver), "", ""})
	}
	for _, t := range r.TopK {
		out = append(out, []string{"topk", fmt.Sprintf("k=%d %dx%d", t.K, t.Width, t.Depth), fi(int64(t.ValueBytes)), "", "",
			ff(t.Precision), ff(t.Recall)})
	}
	for _, t := range r.Throughput {
		out = append(out, []string{"throughput", t.Command, "", ff(t.ReplyPerS), ff(t.BlindPerS), ff(t.BlindRatio), ""})
	}
	return writeRows(w, []string{"what", "config", "value_bytes", "over_eps_n_or_reply_ops", "mean_over_or_blind_ops",
		"precision_or_ratio", "recall"}, out)
}
