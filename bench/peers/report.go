package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

type report struct {
	Opts         options      `json:"-"`
	Baseline     string       `json:"baseline"`
	Command      string       `json:"command"`
	GoVersion    string       `json:"go_version"`
	GOMAXPROCS   int          `json:"gomaxprocs"`
	CPU          string       `json:"cpu"`
	Started      string       `json:"started"`
	TotalSeconds float64      `json:"total_seconds"`
	Engines      []*engineRun `json:"engines"`
}

type jsonConfig struct {
	N        int     `json:"n"`
	KeyLen   int     `json:"key_bytes"`
	ValueLen int     `json:"value_bytes"`
	CacheMiB float64 `json:"cache_mib"`
	Bits     int     `json:"bits_per_key"`
	Rounds   int     `json:"rounds"`
	Seed     uint64  `json:"seed"`
	Compact  bool    `json:"compact"`
	Threads  int     `json:"threads"`
	Keys     string  `json:"keys"`
}

func (rep *report) writeJSON(path string) error {
	o := rep.Opts
	out := struct {
		Schema string     `json:"schema"`
		Config jsonConfig `json:"config"`
		*report
	}{"sieve.bench.peers.v1", jsonConfig{o.n, keyLen, valueLen, o.cacheMiB, o.bits, o.rounds, o.seed, o.compact, o.threads, o.keys}, rep}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func rate(ops int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(ops) / seconds
}

func fmtRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2fM/s", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk/s", r/1e3)
	}
	return fmt.Sprintf("%.0f/s", r)
}

// table prints rows of cells right-aligned under a header.
type table struct{ rows [][]string }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table. A column headed by an engine with a note
// (engineNotes: RocksDB's build) is marked '*', its note under the table.
func (t *table) write(w io.Writer) {
	var named []string // engines with a note, in column order
	byNote := map[string][]string{}
	if len(t.rows) > 0 {
		head := append([]string(nil), t.rows[0]...)
		for i, c := range head {
			if note, ok := engineNotes[c]; ok {
				head[i] = c + "*"
				if len(byNote[note]) == 0 {
					named = append(named, note)
				}
				byNote[note] = append(byNote[note], c)
			}
		}
		t.rows = append([][]string{head}, t.rows[1:]...)
	}
	t.writeRows(w)
	for _, note := range named {
		fmt.Fprintf(w, "  * %s: %s\n", strings.Join(byNote[note], ", "), note)
	}
}

func (t *table) writeRows(w io.Writer) {
	var widths []int
	for _, row := range t.rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, row := range t.rows {
		var b strings.Builder
		for i, c := range row {
			b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
			b.WriteString(c)
		}
		fmt.Fprintln(w, b.String())
	}
}

func (rep *report) writeText(w io.Writer) {
	rep.writeHeader(w)
	rep.writeThroughput(w)
	rep.writeCosts(w)
}

// shapeLabel names the moment the load phase ends.
func (rep *report) shapeLabel() string {
	if !rep.Opts.compact {
		return "after load"
	}
	return "after compact"
}

// baseline returns the baseline engine's run.
func (rep *report) baseline() *engineRun {
	for _, r := range rep.Engines {
		if r.Name == rep.Baseline {
			return r
		}
	}
	return nil
}

// engineNames is a table head: label, then the engines.
func (rep *report) engineNames(label string) []string {
	head := []string{label}
	for _, r := range rep.Engines {
		head = append(head, r.Name)
	}
	return head
}

func (rep *report) writeHeader(w io.Writer) {
	o := rep.Opts
	mode := ""
	if !o.compact {
		mode = "  -compact=false: the reads see the LSM as the load left it"
	}
	fmt.Fprintf(w, "bench/peers  N=%d  keys=%dB (%s)  values=%dB (~2:1)  cache=%.1fMiB  bloom=%d bits/key  rounds=%d  seed=%d  reader threads=%d%s\n",
		o.n, keyLen, o.keys, valueLen, o.cacheMiB, o.bits, o.rounds, o.seed, o.threads, mode)
	fmt.Fprintf(w, "%s, GOMAXPROCS=%d, %s; started %s, total %.0fs\n", rep.GoVersion, rep.GOMAXPROCS, rep.CPU, rep.Started, rep.TotalSeconds)
	fmt.Fprintf(w, "command: %s\n\n", rep.Command)
	shapeLabel := rep.shapeLabel()
	for _, r := range rep.Engines {
		fmt.Fprintf(w, "  %-14s %s\n", r.Name, r.Describe)
		fmt.Fprintf(w, "  %-14s %s: %s\n", "", shapeLabel, r.Shape)
		fmt.Fprintf(w, "  %-14s after reads: %s\n", "", r.ShapeReads)
	}
}

func (rep *report) writeThroughput(w io.Writer) {
	o, base, n := rep.Opts, rep.baseline(), int64(rep.Opts.n)
	ratio := func(v, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", v/b)
	}
	fmt.Fprintf(w, "\nThroughput (ratio = engine / %s; for the time and size rows lower is better)\n", rep.Baseline)
	var t table
	t.add(rep.engineNames("workload")...)
	row := func(label string, val func(r *engineRun) float64, format func(float64) string) {
		cells := []string{label}
		bv := val(base)
		for _, r := range rep.Engines {
			v := val(r)
			cells = append(cells, fmt.Sprintf("%s (%s)", format(v), ratio(v, bv)))
		}
		t.add(cells...)
	}
	secs := func(v float64) string { return fmt.Sprintf("%.2fs", v) }
	size := func(v float64) string { return mib(int64(v)) }
	row("fillrandom ops/s", func(r *engineRun) float64 { return rate(n, r.Fill.Seconds) }, fmtRate)
	if o.compact {
		row("flush+compact s", func(r *engineRun) float64 { return r.Compact.Seconds }, secs)
		row("flush+compact cpu s", func(r *engineRun) float64 { return r.Compact.CPUSeconds }, secs)
		row("fill+compact ops/s", func(r *engineRun) float64 { return rate(n, r.Fill.Seconds+r.Compact.Seconds) }, fmtRate)
	}
	for _, name := range readWorkloads {
		row(name+" ops/s", func(r *engineRun) float64 { return rate(r.Reads[name].Ops, r.Reads[name].Cost.Seconds) }, fmtRate)
	}
	row("open before the reads", func(r *engineRun) float64 { return r.OpenSeconds }, func(v float64) string { return fmt.Sprintf("%.3fs", v) })
	row("process RSS after reads", func(r *engineRun) float64 { return float64(r.RSSAfterReads) }, size)
	row("  of which anonymous", func(r *engineRun) float64 { return float64(r.RSSAnon) }, size)
	row("  of which mapped files", func(r *engineRun) float64 { return float64(r.RSSFile) }, size)
	row("disk at rest (allocated)", func(r *engineRun) float64 { return float64(r.DiskRest) }, size)
	row("of which table files", func(r *engineRun) float64 { return float64(r.TablesRest) }, size)
	row("disk right after "+strings.TrimPrefix(rep.shapeLabel(), "after "), func(r *engineRun) float64 { return float64(r.DiskCompact) }, size)
	t.write(w)
}

// costRow adds one row of the per-op cost table: label, then each engine's
// value formatted with prec, or '-' where val says it is not measured.
type costRow func(label string, val func(r *engineRun) (float64, bool), prec string)

func (rep *report) writeCosts(w io.Writer) {
	n := int64(rep.Opts.n)
	fmt.Fprintf(w, "\nPer-op costs (process-wide CPU and rusage, /proc/self/io read/write syscalls (badger mmaps: its I/O is not seen); engine counters where exposed, '-' = not exposed)\n")
	var t table
	t.add(rep.engineNames("metric")...)
	prow := func(label string, val func(r *engineRun) (float64, bool), prec string) {
		cells := []string{label}
		for _, r := range rep.Engines {
			v, ok := val(r)
			if !ok {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, fmt.Sprintf(prec, v))
		}
		t.add(cells...)
	}
	prow("fill: cpu us/op", func(r *engineRun) (float64, bool) { return r.Fill.CPUSeconds * 1e6 / float64(n), true }, "%.2f")
	// wchar: write(2) bytes; badger writes its memtable log and tables
	// through mmap, which this does not see.
	prow("fill+compact: write syscall bytes/user bytes", func(r *engineRun) (float64, bool) {
		return float64(r.Fill.WriteBytes+r.Compact.WriteBytes) / float64(r.UserBytes), true
	}, "%.2f")
	prow("engine write amp", func(r *engineRun) (float64, bool) {
		if r.WriteAmp == nil {
			return 0, false
		}
		return *r.WriteAmp, true
	}, "%.2f")
	for _, name := range readWorkloads {
		readCosts(prow, name)
	}
	t.write(w)
}

// readCosts adds workload name's rows to the per-op cost table.
func readCosts(prow costRow, name string) {
	per := func(f func(res *readResult) float64) func(r *engineRun) (float64, bool) {
		return func(r *engineRun) (float64, bool) {
			res := r.Reads[name]
			if res.Ops == 0 {
				return 0, false
			}
			return f(res) / float64(res.Ops), true
		}
	}
	counter := func(stat string) func(r *engineRun) (float64, bool) {
		return func(r *engineRun) (float64, bool) {
			res := r.Reads[name]
			v, ok := res.Stats[stat]
			if !ok || res.Ops == 0 {
				return 0, false
			}
			return float64(v) / float64(res.Ops), true
		}
	}
	prow(name+": cpu us/op", per(func(res *readResult) float64 { return res.Cost.CPUSeconds * 1e6 }), "%.2f")
	prow(name+": CPU steal % (host)", func(r *engineRun) (float64, bool) { res := r.Reads[name]; return res.Cost.StealPercent(), res.Ops > 0 }, "%.1f")
	prow(name+": read syscalls/op", per(func(res *readResult) float64 { return float64(res.Cost.ReadCalls) }), "%.2f")
	prow(name+": read syscall KiB/op", per(func(res *readResult) float64 { return float64(res.Cost.ReadBytes) / 1024 }), "%.2f")
	prow(name+": page faults/op", per(func(res *readResult) float64 { return float64(res.Cost.Faults) }), "%.3f")
	if name != "seekrandom" {
		prow(name+": filter checks/op", counter(statFilterChecks), "%.3f")
		prow(name+": filter negatives/op", counter(statFilterNegatives), "%.3f")
		prow(name+": filter false positives/op", counter(statFilterFalsePos), "%.4f")
		prow(name+": tables searched/op", counter(statTablesSearched), "%.3f")
	}
	if name == "readmissing" {
		// Every key is absent, so a check that passed is a false positive.
		prow(name+": filter FPR", func(r *engineRun) (float64, bool) {
			s := r.Reads[name].Stats
			c, ok := s[statFilterChecks]
			if !ok || c == 0 {
				return 0, false
			}
			return 100 * float64(c-s[statFilterNegatives]) / float64(c), true
		}, "%.3f%%")
	}
	prow(name+": block cache misses/op", counter(statCacheMisses), "%.3f")
	prow(name+": block cache hit rate", func(r *engineRun) (float64, bool) {
		s := r.Reads[name].Stats
		h, ok1 := s[statCacheHits]
		m, ok2 := s[statCacheMisses]
		if !ok1 || !ok2 || h+m == 0 {
			return 0, false
		}
		return 100 * float64(h) / float64(h+m), true
	}, "%.1f%%")
	prow(name+": engine-read KiB/op", func(r *engineRun) (float64, bool) {
		v, ok := counter(statEngineReadBytes)(r)
		return v / 1024, ok
	}, "%.3f")
	prow(name+": wrong results", func(r *engineRun) (float64, bool) { return float64(r.Reads[name].Wrong), true }, "%.0f")
}
