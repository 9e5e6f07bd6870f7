package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/sievedb/sieve/filter"
)

// The filter lab's files: one CSV per experiment and its chart.

func writeFilterFiles(dir string, rep *filterLabReport) ([]string, error) {
	var files []labFile
	if rep.Sweep != nil {
		files = append(files,
			labFile{"filters_sweep.csv", func(w io.Writer) error { return sweepCSV(w, rep.Sweep) }},
			labFile{"fpr_vs_bits.svg", func(w io.Writer) error { return sweepChart(rep.Sweep).writeSVG(w) }})
	}
	if rep.KSweep != nil {
		files = append(files,
			labFile{"filters_k.csv", func(w io.Writer) error { return kCSV(w, rep.KSweep) }},
			labFile{"fpr_vs_k.svg", func(w io.Writer) error { return kChart(rep.KSweep).writeSVG(w) }},
			labFile{"bits_set_vs_k.svg", func(w io.Writer) error { return kBitsChart(rep.KSweep).writeSVG(w) }})
	}
	if rep.Overfill != nil {
		files = append(files,
			labFile{"filters_overfill.csv", func(w io.Writer) error { return overfillCSV(w, rep.Overfill) }},
			labFile{"overfill.svg", func(w io.Writer) error { return overfillChart(rep.Overfill).writeSVG(w) }})
	}
	if rep.Levels != nil {
		files = append(files,
			labFile{"filters_levels.csv", func(w io.Writer) error { return levelsCSV(w, rep.Levels) }},
			labFile{"fpr_by_level.svg", func(w io.Writer) error { return levelsChart(rep.Levels).writeSVG(w) }})
	}
	return writeFiles(dir, files)
}

// fpct formats an axis tick as a short percentage: 1%, 0.1%, 25%.
func fpct(v float64) string { return strconv.FormatFloat(100*v, 'g', 3, 64) + "%" }

var policyStyle = map[string]struct{ color, marker, label string }{
	"bloom":         {palette[0], "circle", "Bloom (blocked)"},
	"standardbloom": {palette[1], "square", "StandardBloom"},
	"cuckoo":        {palette[2], "triangle", "Cuckoo"},
	"binaryfuse":    {palette[3], "diamond", "BinaryFuse"},
	"ribbon":        {palette[4], "circle", "Ribbon"},
}

// sweepChart: FPR against bits per key, log scale; theory as lines, the
// measurements as markers over them.
func sweepChart(rows []sweepRow) *chart {
	c := &chart{Title: "False-positive rate against space", XLabel: "bits per key (whole filter block)",
		YLabel: "false-positive rate (log scale)", LogY: true, YFormat: fpct}
	maxBits, kinds := 4.0, map[string]bool{}
	for _, r := range rows {
		maxBits = math.Max(maxBits, r.BitsPerKey)
		kinds[r.Policy] = true
	}
	maxBits = math.Ceil(maxBits + 1)
	c.XMin, c.XMax = 0, maxBits
	{
		// The information-theoretic lower bound: a rate ε needs log2(1/ε)
		// bits per key, so ε = 2^-b at b bits per key.
		var pts []point
		for b := 1.0; b <= maxBits; b += 0.5 {
			pts = append(pts, point{b, math.Exp2(-b)})
		}
		c.Series = append(c.Series, series{Name: "lower bound: log2(1/ε) bits/key", Points: pts, Line: true, Color: "#000000", Dashed: true})
	}
	if kinds["standardbloom"] || kinds["bloom"] {
		var pts []point
		for b := 1.0; b <= maxBits; b += 0.25 {
			pts = append(pts, point{b, filter.StandardFPR(b, filter.OptimalK(b))})
		}
		c.Series = append(c.Series, series{Name: "classic Bloom theory, best k", Points: pts, Line: true, Color: palette[1], Dashed: true})
	}
	if kinds["bloom"] {
		var pts []point
		for b := 2.0; b <= math.Min(maxBits, 40); b += 1 {
			pts = append(pts, point{b, filter.BloomFPR(b)})
		}
		c.Series = append(c.Series, series{Name: "blocked Bloom model", Points: pts, Line: true, Color: palette[0], Dashed: true})
	}
	if kinds["cuckoo"] {
		var pts []point
		for _, r := range rows {
			if r.Policy == "cuckoo" {
				pts = append(pts, point{r.BitsPerKey, r.ExpectedFPR})
			}
		}
		c.Series = append(c.Series, series{Name: "cuckoo model at its load", Points: pts, Line: true, Color: palette[2], Dashed: true})
	}
	for _, kind := range []string{"bloom", "standardbloom", "cuckoo", "binaryfuse", "ribbon"} {
		if !kinds[kind] {
			continue
		}
		st := policyStyle[kind]
		var pts []point
		for _, r := range rows {
			if r.Policy == kind {
				pts = append(pts, point{r.BitsPerKey, r.MeasuredFPR}) // 0 (no false positive) is not drawable: left out
			}
		}
		c.Series = append(c.Series, series{Name: st.label + " measured", Points: pts, Marker: st.marker, Color: st.color})
	}
	return c
}

func kChart(ks *kSweep) *chart {
	c := &chart{Title: fmt.Sprintf("Classic Bloom filter at m/n = %.2f: FPR against k", ks.BitsPerKey),
		XLabel: "k (hash functions)", YLabel: "false-positive rate (log scale)", LogY: true, YFormat: fpct,
		XMin: 0, XMax: float64(len(ks.Rows) + 1)}
	c.Series = kSeries(ks, "(1 − e^(−kn/m))^k", func(r *kRow) (float64, float64) { return r.TheoryFPR, r.MeasuredFPR })
	c.VLines = []refLine{{At: ks.OptimalK, Label: fmt.Sprintf("k = (m/n)·ln 2 = %.2f", ks.OptimalK)}}
	return c
}

func kBitsChart(ks *kSweep) *chart {
	c := &chart{Title: fmt.Sprintf("Classic Bloom filter at m/n = %.2f: bits set against k", ks.BitsPerKey),
		XLabel: "k (hash functions)", YLabel: "fraction of bits set", YFormat: fpct,
		XMin: 0, XMax: float64(len(ks.Rows) + 1), YMin: 0, YMax: 1}
	c.Series = kSeries(ks, "1 − e^(−kn/m)", func(r *kRow) (float64, float64) { return r.BitsSetTheory, r.BitsSet })
	c.VLines = []refLine{{At: ks.OptimalK, Label: "half the bits set"}}
	c.HLines = []refLine{{At: 0.5, Label: "50%"}}
	return c
}

// kSeries is a k-sweep chart's two series: theory (a dashed line named
// formula) and the measured points, both read from each row by of.
func kSeries(ks *kSweep, formula string, of func(r *kRow) (theory, measured float64)) []series {
	var theory, measured []point
	for i := range ks.Rows {
		t, m := of(&ks.Rows[i])
		k := float64(ks.Rows[i].K)
		theory, measured = append(theory, point{k, t}), append(measured, point{k, m})
	}
	return []series{
		{Name: formula, Points: theory, Line: true, Color: palette[1], Dashed: true},
		{Name: "measured", Points: measured, Marker: "circle", Color: palette[0]},
	}
}

func overfillChart(o *overfill) *chart {
	maxFill := o.Rows[len(o.Rows)-1].Fill
	c := &chart{Title: fmt.Sprintf("A filter sized for %s keys at %s, holding more", commas(int64(o.Capacity)), pct(o.Rate)),
		XLabel: "keys held / capacity", YLabel: "false-positive rate (log scale)", LogY: true, YFormat: fpct,
		XMin: 0, XMax: math.Ceil(maxFill*1.1*2) / 2, YMin: 1e-4, YMax: 1}
	var theory, bloom, cuckoo []point
	for x := 0.05; x <= maxFill+1e-9; x += 0.05 {
		t := math.Pow(1-math.Exp(-float64(o.BloomK)*x*float64(o.Capacity)/float64(o.BloomM)), float64(o.BloomK))
		theory = append(theory, point{x, t})
	}
	for _, r := range o.Rows {
		bloom = append(bloom, point{r.Fill, r.BloomFPR})
		if !r.CuckooRefusedAny {
			cuckoo = append(cuckoo, point{r.Fill, r.CuckooFPR})
		}
	}
	c.Series = []series{
		{Name: "Bloom theory", Points: theory, Line: true, Color: palette[1], Dashed: true},
		{Name: "Bloom measured", Points: bloom, Marker: "circle", Color: palette[0]},
		{Name: "cuckoo measured (until full)", Points: cuckoo, Marker: "triangle", Color: palette[2]},
	}
	c.HLines = []refLine{{At: o.Rate, Label: "sized for " + pct(o.Rate)}}
	c.VLines = []refLine{{At: 1, Label: "capacity"}}
	return c
}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
func fi(v int64) string   { return strconv.FormatInt(v, 10) }

func writeRows(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

func sweepCSV(w io.Writer, rows []sweepRow) error {
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{r.Policy, r.Name, ff(r.Param), fi(int64(r.Keys)), fi(int64(r.FilterBytes)),
			ff(r.BitsPerKey), ff(r.BytesPerKey), fi(int64(r.K)), fi(r.Probed), fi(r.FalsePositives),
			ff(r.MeasuredFPR), ff(r.MeasuredFPRLow), ff(r.MeasuredFPRHigh), ff(r.ExpectedFPR), ff(r.ClassicFPR),
			ff(r.BuildNsPerKey), ff(r.BuildBytesPerKey), ff(r.ProbeHitNs), ff(r.ProbeMissNs), fi(r.FalseNegatives)})
	}
	return writeRows(w, []string{"policy", "name", "param", "keys", "filter_bytes", "bits_per_key", "bytes_per_key", "k",
		"absent_probed", "false_positives", "measured_fpr", "measured_fpr_ci95_low", "measured_fpr_ci95_high",
		"expected_fpr", "classic_fpr", "build_ns_per_key", "build_bytes_per_key", "probe_hit_ns", "probe_miss_ns", "false_negatives"}, out)
}

func kCSV(w io.Writer, ks *kSweep) error {
	var out [][]string
	for _, r := range ks.Rows {
		out = append(out, []string{fi(int64(r.K)), ff(ks.BitsPerKey), ff(r.BitsSet), ff(r.BitsSetTheory), fi(r.FalsePositives),
			ff(r.MeasuredFPR), ff(r.MeasuredFPRLow), ff(r.MeasuredFPRHigh), ff(r.TheoryFPR)})
	}
	return writeRows(w, []string{"k", "bits_per_key", "bits_set", "bits_set_theory", "false_positives",
		"measured_fpr", "measured_fpr_ci95_low", "measured_fpr_ci95_high", "theory_fpr"}, out)
}

func overfillCSV(w io.Writer, o *overfill) error {
	var out [][]string
	for _, r := range o.Rows {
		out = append(out, []string{ff(r.Fill), fi(r.Keys), ff(r.BloomFPR), ff(r.BloomFPRLow), ff(r.BloomFPRHigh),
			ff(r.BloomTheory), ff(r.BloomEstimate), ff(r.BloomFillRatio),
			fi(r.CuckooHeld), ff(r.CuckooLoad), ff(r.CuckooFPR), ff(r.CuckooTheory), strconv.FormatBool(r.CuckooRefusedAny)})
	}
	return writeRows(w, []string{"fill", "keys", "bloom_fpr", "bloom_fpr_ci95_low", "bloom_fpr_ci95_high",
		"bloom_theory_fpr", "bloom_expected_fpr", "bloom_fill_ratio",
		"cuckoo_held", "cuckoo_load", "cuckoo_fpr", "cuckoo_theory_fpr", "cuckoo_refused"}, out)
}
