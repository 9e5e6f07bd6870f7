package main

import (
	"fmt"
	"io"
)

// ycsbReport is the ycsb mode's result: text on stdout, the same as JSON
// with -json.
type ycsbReport struct {
	Opts         ycsbOptions    `json:"-"`
	Command      string         `json:"command"`
	Workloads    []ycsbWorkload `json:"-"`
	Engines      []*ycsbRun     `json:"engines"`
	GoVersion    string         `json:"go_version"`
	GOMAXPROCS   int            `json:"gomaxprocs"`
	CPU          string         `json:"cpu"`
	Started      string         `json:"started"`
	TotalSeconds float64        `json:"total_seconds"`
}

func (rep *ycsbReport) write(w io.Writer) {
	o := rep.Opts
	fmt.Fprintf(w, "bench/peers ycsb  records=%d  ops/workload=%d  clients=%d  keys=%dB  values=%dB  cache=%.1fMiB  bloom=%d bits/key  rounds=%d  seed=%d\n",
		o.n, o.ops, o.threads, keyLen, valueLen, o.cacheMiB, o.bits, o.rounds, o.seed)
	fmt.Fprintf(w, "%s, GOMAXPROCS=%d, %s; started %s, total %.0fs\ncommand: %s\n", rep.GoVersion, rep.GOMAXPROCS, rep.CPU, rep.Started, rep.TotalSeconds, rep.Command)
	warm := ""
	if o.warmup > 0 {
		warm = fmt.Sprintf("; each round starts with %.0f%% of its operations in untimed point reads (-warmup)", 100*o.warmup)
	}
	fmt.Fprintf(w, "keys: A-C, E, F scrambled zipfian (0.99), D skewed latest (%.2f); E scans 1..%d entries with a new iterator each; one field of %d B per record; %s%s\n\n",
		o.theta, o.scanMax, valueLen, map[bool]string{true: "flushed and compacted after the load", false: "no compaction after the load (the LSM as the load left it)"}[o.compact], warm)
	for _, r := range rep.Engines {
		fmt.Fprintf(w, "  %-10s %s\n  %-10s after load: %s\n", r.Name, r.Describe, "", r.Shape)
		for _, wl := range rep.Workloads {
			if sh, ok := r.ShapeBefore[wl.name]; ok {
				fmt.Fprintf(w, "  %-10s compacted before %s: %s\n", "", wl.name, sh)
			}
		}
		fmt.Fprintf(w, "  %-10s at end: %s\n", "", r.ShapeEnd)
	}
	var base *ycsbRun
	for _, r := range rep.Engines {
		if r.Name == o.baseline {
			base = r
		}
	}
	fmt.Fprintf(w, "\nThroughput (ratio = engine / %s)\n", o.baseline)
	var t table
	head := []string{"workload"}
	for _, r := range rep.Engines {
		head = append(head, r.Name)
	}
	t.add(head...)
	t.add(rep.row("load ops/s", base, func(r *ycsbRun) float64 { return rate(int64(o.n), r.Load.Seconds) }, fmtRate, true)...)
	for _, wl := range rep.Workloads {
		name := wl.name
		t.add(rep.row(name+" ops/s", base, func(r *ycsbRun) float64 { res := r.Results[name]; return rate(res.Ops, res.Cost.Seconds) }, fmtRate, true)...)
	}
	t.write(w)
	fmt.Fprintf(w, "\nPer-op cost and latency (process CPU µs/op; client-observed µs)\n")
	t = table{}
	head[0] = "metric"
	t.add(head...)
	for _, wl := range rep.Workloads {
		name := wl.name
		t.add(rep.row(name+": cpu us/op", nil, func(r *ycsbRun) float64 { res := r.Results[name]; return res.Cost.CPUSeconds * 1e6 / float64(res.Ops) }, f2, false)...)
		for _, q := range []string{"p50", "p99", "p99.9"} {
			t.add(rep.row(name+": "+q+" us", nil, func(r *ycsbRun) float64 { return r.Results[name].Latency[q] }, f1, false)...)
		}
		t.add(rep.row(name+": background work after the rounds, s", nil, func(r *ycsbRun) float64 { return r.Results[name].Settle }, f2, false)...)
		t.add(rep.row(name+": CPU steal % (host)", nil, func(r *ycsbRun) float64 { return r.Results[name].Cost.StealPercent() }, f1, false)...)
		t.add(rep.row(name+": wrong results", nil, func(r *ycsbRun) float64 { return float64(r.Results[name].Wrong) }, f0, false)...)
	}
	t.write(w)
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

// row is one table row: label, then each engine's val formatted, with the
// ratio to base when ratio is set.
func (rep *ycsbReport) row(label string, base *ycsbRun, val func(*ycsbRun) float64, format func(float64) string, ratio bool) []string {
	cells := []string{label}
	for _, r := range rep.Engines {
		v := val(r)
		c := format(v)
		if ratio && base != nil {
			if b := val(base); b > 0 {
				c += fmt.Sprintf(" (%.2fx)", v/b)
			}
		}
		cells = append(cells, c)
	}
	return cells
}
