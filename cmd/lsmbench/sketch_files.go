package main

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/sievedb/sieve/filter"
)

// The sketch lab's files: CSV per experiment and its chart.

func writeSketchFiles(dir string, rep *sketchLabReport) ([]string, error) {
	var files []labFile
	if rep.Memory != nil {
		files = append(files, labFile{"sketch_memory.csv", func(w io.Writer) error { return memoryCSV(w, rep.Memory) }})
	}
	if bs := rep.Bloom; bs != nil {
		files = append(files,
			labFile{"bloom_scaling.csv", func(w io.Writer) error { return bloomScalingCSV(w, bs) }},
			labFile{"bloom_scaling.svg", func(w io.Writer) error { return bloomScalingChart(bs).writeSVG(w) }})
	}
	if cl := rep.Cuckoo; cl != nil {
		files = append(files,
			labFile{"cuckoo_load.csv", func(w io.Writer) error { return cuckooCSV(w, cl) }},
			labFile{"cuckoo_load.svg", func(w io.Writer) error { return cuckooLoadChart(cl).writeSVG(w) }})
	}
	if hs := rep.HLL; hs != nil {
		files = append(files,
			labFile{"hll_error.csv", func(w io.Writer) error { return hllCSV(w, hs) }},
			labFile{"hll_error.svg", func(w io.Writer) error { return hllChart(hs).writeSVG(w) }})
	}
	if sr := rep.Store; sr != nil {
		files = append(files, labFile{"sketch_store.csv", func(w io.Writer) error { return storeCSV(w, sr) }})
	}
	if cr := rep.Counters; cr != nil {
		files = append(files, labFile{"sketch_counters.csv", func(w io.Writer) error { return countersCSV(w, cr) }})
	}
	return writeFiles(dir, files)
}

func memoryCSV(w io.Writer, rows []memoryRow) error {
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{r.Structure, ff(r.Bytes), ff(r.BitsPerID), r.Answers, r.How})
	}
	return writeRows(w, []string{"structure", "bytes", "bits_per_id", "answers", "how"}, out)
}

func bloomScalingCSV(w io.Writer, bs *bloomScaling) error {
	var out [][]string
	for _, r := range bs.Rows {
		out = append(out, []string{ff(r.Fill), fi(r.Keys), ff(r.SingleFPR), fi(int64(r.SingleBytes)), ff(r.SingleFill),
			ff(r.ScalableFPR), ff(r.ScalableExpect), fi(r.ScalableBytes), fi(r.Layers)})
	}
	return writeRows(w, []string{"fill", "items", "single_fpr", "single_bytes", "single_fill_ratio",
		"scalable_fpr", "scalable_expected_fpr", "scalable_bytes", "scalable_sub_filters"}, out)
}

func cuckooCSV(w io.Writer, cl *cuckooLoad) error {
	var out [][]string
	for _, r := range cl.Rows {
		out = append(out, []string{"filter.CuckooTableFilter", "", fi(r.Keys), ff(r.Load), ff(r.MeasuredFPR), ff(r.TheoryFPR), "1", fi(int64(cl.Bytes))})
	}
	for _, r := range cl.Scalable {
		out = append(out, []string{"sketchcol.CuckooFilter", ff(r.Fill), fi(r.Keys), "", ff(r.FPR), "", fi(r.SubFilters), fi(r.Bytes)})
	}
	return writeRows(w, []string{"value", "fill", "items", "load", "measured_fpr", "theory_fpr", "sub_filters", "bytes"}, out)
}

func hllCSV(w io.Writer, hs *hllSweep) error {
	var out [][]string
	for _, r := range hs.Rows {
		out = append(out, []string{fi(r.N), ff(r.MeanEstimate), ff(r.Bias), ff(r.RMSError), ff(r.MaxAbsError),
			ff(r.WithinStdErr), strconv.Itoa(r.ValueBytes), r.Encoding, strconv.Itoa(len(r.Errors))})
	}
	return writeRows(w, []string{"n", "mean_estimate", "bias", "rms_err", "max_abs_err", "within_std_err",
		"value_bytes", "encoding", "trials"}, out)
}

func bloomScalingChart(bs *bloomScaling) *chart {
	c := &chart{Title: fmt.Sprintf("Bloom values sized for %s items at %s, filled past capacity", commas(int64(bs.Capacity)), pct(bs.Rate)),
		XLabel: "items added / capacity", YLabel: "false-positive rate (log scale)", LogY: true, YFormat: fpct, XMin: 0}
	var single, scalable, expect []point
	for _, r := range bs.Rows {
		single = append(single, point{r.Fill, r.SingleFPR})
		scalable = append(scalable, point{r.Fill, r.ScalableFPR})
		expect = append(expect, point{r.Fill, r.ScalableExpect})
		c.XMax = math.Max(c.XMax, math.Ceil(r.Fill)+0.5)
	}
	c.Series = []series{
		{Name: "one filter.StandardBloomFilter", Points: single, Line: true, Marker: "circle"},
		{Name: "sketchcol.ScalableBloom", Points: scalable, Line: true, Marker: "square"},
		{Name: "ScalableBloom.ExpectedFPR", Points: expect, Line: true, Dashed: true},
	}
	c.HLines = []refLine{{At: bs.Rate, Label: "sized for " + pct(bs.Rate)}, {At: 2 * bs.Rate, Label: "scalable bound 2p"}}
	return c
}

func cuckooLoadChart(cl *cuckooLoad) *chart {
	c := &chart{Title: fmt.Sprintf("filter.CuckooTableFilter, f = %d: false positives against load", cl.FingerprintBits),
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
