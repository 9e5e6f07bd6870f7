package main

import (
	"fmt"
	"io"
	"math"

	"github.com/sievedb/sieve/sketchcol"
)

// hllSweep is the accuracy of sketchcol's HyperLogLog against cardinality:
// Trials independent sketches, each fed its own IDs and read at every
// checkpoint.
type hllSweep struct {
	Trials int `json:"trials"`
	// StdErr is the HLL's theoretical relative standard error with 2^14
	// registers, 1.04/√16384 = 0.81% (Flajolet et al. 2007).
	StdErr float64  `json:"std_err"`
	Rows   []hllRow `json:"rows"`
}

type hllRow struct {
	N            int64     `json:"n"`
	MeanEstimate float64   `json:"mean_estimate"`
	Bias         float64   `json:"bias"`    // mean of (estimate − n)/n
	RMSError     float64   `json:"rms_err"` // root mean square of (estimate − n)/n
	MaxAbsError  float64   `json:"max_abs_err"`
	WithinStdErr float64   `json:"within_std_err"` // fraction of trials within ±StdErr
	ValueBytes   int       `json:"value_bytes"`    // Redis encoding of trial 0
	Encoding     string    `json:"encoding"`       // sparse or dense
	Errors       []float64 `json:"errors"`         // (estimate − n)/n of each trial
}

// hllCheckpoints returns 1, 2, 5, 10, 20, 50, … up to max.
func hllCheckpoints(max int64) []int64 {
	var cs []int64
	for d := int64(1); d <= max; d *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*d <= max {
				cs = append(cs, m*d)
			}
		}
	}
	return cs
}

func (l *sketchLab) hllSweep() *hllSweep {
	c := l.cfg
	checkpoints := hllCheckpoints(int64(c.HLLMax))
	hs := &hllSweep{Trials: c.HLLTrials, StdErr: 1.04 / math.Sqrt(16384)}
	for _, n := range checkpoints {
		hs.Rows = append(hs.Rows, hllRow{N: n})
	}
	ks := keyspace{num: c.HLLMax, keySize: c.KeySize}
	key := make([]byte, c.KeySize)
	ph := l.prog.start("hll sweep", int64(c.HLLTrials))
	defer ph.finish()
	for t := 0; t < c.HLLTrials && l.ctx.Err() == nil; t++ {
		h := sketchcol.NewHLL()
		base := uint64(t) * uint64(c.HLLMax) // each trial counts IDs no other trial saw
		var added int64
		for i := range hs.Rows {
			r := &hs.Rows[i]
			for ; added < r.N; added++ {
				h.Add(ks.present(key, base+uint64(added)))
			}
			r.Errors = append(r.Errors, (float64(h.Count())-float64(r.N))/float64(r.N))
			if t == 0 {
				b := h.Bytes()
				r.ValueBytes, r.Encoding = len(b), hllEncoding(b)
			}
		}
		ph.add(1)
	}
	for i := range hs.Rows {
		r := &hs.Rows[i]
		var sum, sq float64
		within := 0
		for _, e := range r.Errors {
			sum += e
			sq += e * e
			r.MaxAbsError = math.Max(r.MaxAbsError, math.Abs(e))
			if math.Abs(e) <= hs.StdErr {
				within++
			}
		}
		k := float64(len(r.Errors))
		if k > 0 {
			r.Bias, r.RMSError, r.WithinStdErr = sum/k, math.Sqrt(sq/k), float64(within)/k
			r.MeanEstimate = float64(r.N) * (1 + r.Bias)
		}
	}
	return hs
}

func printHLL(w io.Writer, hs *hllSweep) {
	fmt.Fprintf(w, "4. HyperLogLog accuracy (sketchcol.HLL: Redis format, 16384 registers): %d sketches per cardinality\n", hs.Trials)
	fmt.Fprintf(w, "%11s %14s %8s %9s %9s %9s %9s\n", "n", "mean estimate", "bias", "RMS err", "max |err|", "in ±σ", "value")
	for _, r := range hs.Rows {
		fmt.Fprintf(w, "%11s %14s %8s %9s %9s %9s %9s\n", commas(r.N), commas(int64(math.Round(r.MeanEstimate))),
			pct(r.Bias), pct(r.RMSError), pct(r.MaxAbsError), pct(r.WithinStdErr), fmt.Sprintf("%dB %s", r.ValueBytes, r.Encoding[:1]))
	}
	fmt.Fprintf(w, "σ = 1.04/√16384 = %s: about 68%% of estimates should fall within ±σ once n is large. Values: s = sparse, d = dense.\n",
		pct(hs.StdErr))
	fmt.Fprintf(w, "An HLL counts; it cannot answer \"was this ID seen?\" — use a Bloom or cuckoo filter for that.\n\n")
}

func hllChart(hs *hllSweep) *chart {
	c := &chart{Title: "HyperLogLog relative error against cardinality", XLabel: "distinct elements counted (log scale)",
		YLabel: "(estimate − n) / n", LogX: true, YFormat: fpct, XFormat: func(v float64) string { return commas(int64(v)) }}
	var trials, rms, bias []point
	ymax := 3 * hs.StdErr
	for _, r := range hs.Rows {
		for _, e := range r.Errors {
			trials = append(trials, point{float64(r.N), e})
			ymax = math.Max(ymax, math.Abs(e))
		}
		rms = append(rms, point{float64(r.N), r.RMSError})
		bias = append(bias, point{float64(r.N), r.Bias})
	}
	ymax = math.Min(ymax, 0.1)
	c.YMin, c.YMax = -ymax, ymax
	c.Series = []series{
		{Name: "each sketch", Points: trials, Marker: "circle", Color: "#9ab"},
		{Name: "RMS error", Points: rms, Line: true, Color: palette[1]},
		{Name: "mean error (bias)", Points: bias, Line: true, Color: palette[0], Dashed: true},
	}
	c.HLines = []refLine{{At: hs.StdErr, Label: "+σ = 0.81%"}, {At: -hs.StdErr, Label: "−σ"}}
	return c
}
