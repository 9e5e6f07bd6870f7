package main

import (
	"fmt"
	"io"
	"time"
)

// result is what one benchmark (or step) measured.
type result struct {
	Name    string  `json:"name"`
	Ops     int64   `json:"ops"`
	Threads int     `json:"threads"`
	Seconds float64 `json:"seconds"`
	// OpsPerSec is Ops over wall time; MicrosPerOp is wall time per
	// operation per thread (db_bench's micros/op: with T threads it is T
	// times 1/OpsPerSec).
	OpsPerSec   float64 `json:"ops_per_sec"`
	MicrosPerOp float64 `json:"us_per_op"`
	// MBPerSec is the key and value bytes written, or read by Gets and
	// scans that found their key, per second (10^6 bytes).
	MBPerSec float64 `json:"mb_per_sec"`
	// CPUSeconds is the process's CPU time (user + system, every thread,
	// background flushes and compactions included) during the benchmark;
	// CPUMicrosPerOp divides it by Ops. Unlike wall time it hardly moves
	// when other processes compete for the CPUs.
	CPUSeconds     float64         `json:"cpu_seconds"`
	CPUMicrosPerOp float64         `json:"cpu_us_per_op"`
	Found          int64           `json:"found"`
	NotFound       int64           `json:"not_found"`
	Latency        *latencySummary `json:"latency_us,omitempty"`
	// SampleEvery is the latency sampling stride: 1 when every operation
	// was timed, S when one in S was (the clock was slow against the
	// operation; see sampleEvery).
	SampleEvery int          `json:"latency_sample_every,omitempty"`
	Lookups     *lookupStats `json:"point_lookups,omitempty"`
	Skipped     string       `json:"skipped,omitempty"`
	Error       string       `json:"error,omitempty"`
	Notes       []string     `json:"notes,omitempty"`
}

// envInfo describes where the run happened.
type envInfo struct {
	Version     string    `json:"sieve_lsmbench"`
	GoVersion   string    `json:"go_version"`
	OS          string    `json:"os"`
	Arch        string    `json:"arch"`
	CPUs        int       `json:"cpus"`
	GOMAXPROCS  int       `json:"gomaxprocs"`
	Started     time.Time `json:"started"`
	ClockCostNs float64   `json:"clock_cost_ns"`
	DBDir       string    `json:"db_dir"`
	DBKept      bool      `json:"db_kept"`
	// LoadAvg is the 1-minute load average at the start and the end (-1:
	// unknown); CPUSeconds the process's CPU time over the run.
	LoadAvgStart float64 `json:"load_avg_start"`
	LoadAvgEnd   float64 `json:"load_avg_end"`
	CPUSeconds   float64 `json:"cpu_seconds"`
}

// textReport prints the human report, one benchmark at a time as they
// finish, in the spirit of db_bench.
type textReport struct{ w io.Writer }

const rowFormat = "%-16s %9s %12s %9s %9s %9s  %s\n"

func (t textReport) header(c *config, env *envInfo, policyName string) {
	w := t.w
	fmt.Fprintf(w, "lsmbench   sieve on %s %s/%s, %d CPUs (GOMAXPROCS %d), %s\n",
		env.GoVersion, env.OS, env.Arch, env.CPUs, env.GOMAXPROCS, env.Started.Format("2006-01-02 15:04:05"))
	raw := int64(c.Num) * int64(c.KeySize+c.ValueSize)
	fmt.Fprintf(w, "keys       %s keys of %d B, values of %d B (compressible to ~%.0f%%), %s raw\n",
		commas(int64(c.Num)), c.KeySize, c.ValueSize, 100*c.CompressRatio, humanBytes(raw))
	sync := "NoSync"
	if c.Sync {
		sync = "Sync"
	}
	cache := humanBytes(c.CacheSize)
	if c.CacheSize == 0 {
		cache = "off"
	}
	fmt.Fprintf(w, "engine     filter %s, %s, %s blocks, block cache %s, memtable %s, %s writes, %d thread(s)\n",
		policyName, c.Compression, humanBytes(c.BlockSize), cache, humanBytes(c.MemTableSize), sync, c.Threads)
	where := "(temporary: removed at exit; -db DIR keeps one)"
	if env.DBKept {
		where = "(kept)"
	}
	fmt.Fprintf(w, "db         %s %s\n", env.DBDir, where)
	if warn := busyWarning(env.LoadAvgStart); warn != "" {
		fmt.Fprintf(w, "warning    %s\n", warn)
	}
	fmt.Fprintf(w, "clock      time.Now costs %.0f ns: latencies time every op with one clock read, or 1 op in S where that costs >%.0f%% of an op\n\n", env.ClockCostNs, 100*clockBudget)
	fmt.Fprintf(w, rowFormat, "benchmark", "µs/op", "ops/s", "p50 µs", "p99 µs", "p99.9 µs", "")
}

func (t textReport) result(r *result) {
	w := t.w
	switch {
	case r.Skipped != "":
		fmt.Fprintf(w, "%-16s skipped: %s\n", r.Name, r.Skipped)
		return
	case r.Latency == nil:
		what := map[string]string{"flush": "flush", "compact": "flush + compact"}[r.Name]
		fmt.Fprintf(w, rowFormat, r.Name, "-", "-", "-", "-", "-", fmt.Sprintf("%s in %s (CPU %s)", what, seconds(r.Seconds), seconds(r.CPUSeconds)))
	default:
		l := r.Latency
		fmt.Fprintf(w, rowFormat, r.Name, micros(r.MicrosPerOp), commas(int64(r.OpsPerSec+0.5)),
			micros(l.P50), micros(l.P99), micros(l.P999), t.detail(r))
	}
	if l := r.Lookups; l != nil {
		t.lookups(r, l)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  · %s\n", n)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  ✗ error: %s\n", r.Error)
	}
}

// detail is the tail of a benchmark's row: counts and throughput.
func (t textReport) detail(r *result) string {
	s := fmt.Sprintf("%s ops in %s, CPU %s µs/op", commas(r.Ops), seconds(r.Seconds), micros(r.CPUMicrosPerOp))
	switch {
	case isWrite(r.Name):
		s += fmt.Sprintf(", %.1f MB/s", r.MBPerSec)
	case isSketch(r.Name):
		s += fmt.Sprintf(", %.1f MB/s of elements", r.MBPerSec)
		if r.Found > 0 {
			s += fmt.Sprintf(", %s replied added", commas(r.Found))
		}
	case r.Name == "scan":
		s += fmt.Sprintf(", %.1f MB/s", r.MBPerSec)
	default:
		s += fmt.Sprintf(", %s found", commas(r.Found))
	}
	if r.SampleEvery > 1 {
		s += fmt.Sprintf("; latency of 1 op in %d", r.SampleEvery)
	}
	return s
}

func (t textReport) lookups(r *result, l *lookupStats) {
	w := t.w
	fmt.Fprintf(w, "  └ read amp  %.2f tables probed/Get; %s filter checks: %s negatives, %s false positives, %s true positives\n",
		l.TablesPerGet, commas(l.FilterChecks), commas(l.FilterNegatives), commas(l.FilterFalsePositives), commas(l.FilterTruePositives))
	if absent := l.FilterFalsePositives + l.FilterNegatives; absent > 0 {
		fmt.Fprintf(w, "  └ filter    FPR %s measured (95%% CI %s–%s over %s probes of tables without the key) vs %s expected for %s at %s keys/table\n",
			pct(l.MeasuredFPR), pct(l.MeasuredFPRLow), pct(l.MeasuredFPRHigh), commas(absent), pct(l.ExpectedFPR), l.Policy, commas(l.ExpectedAtKeys))
	} else if l.FilterChecks > 0 {
		fmt.Fprintf(w, "  └ filter    every table probed held its key: nothing for the filter to rule out (see readmissing)\n")
	} else {
		fmt.Fprintf(w, "  └ filter    no filter checks (filter none, or no tables)\n")
	}
	fmt.Fprintf(w, "  └ blocks    %.3f data blocks/Get (%.3f file reads/Get, %s/Get), block cache hit rate %s\n",
		l.BlocksPerGet, safeDiv(float64(l.FileReads), float64(r.Ops)), humanBytes(int64(safeDiv(float64(l.BytesRead), float64(r.Ops)))), pct(l.CacheHitRate))
}

func (t textReport) footer(s *lsmShape, stats string) {
	w := t.w
	fmt.Fprintf(w, "\nLSM after the run\n")
	fmt.Fprintf(w, "%-7s %7s %10s %7s\n", "level", "files", "size", "score")
	for _, l := range s.Levels {
		fmt.Fprintf(w, "L%-6d %7d %10s %7.2f\n", l.Level, l.Files, humanBytes(l.Bytes), l.Score)
	}
	fmt.Fprintf(w, "%-7s %7d %10s   read-amp %d (tables a Get may probe), write-amp %.2f ((flush + compaction bytes) / WAL bytes)\n",
		"total", s.Files, humanBytes(s.Bytes), s.ReadAmp, s.WriteAmp)
	fmt.Fprintf(w, "WAL %s · flushes %d (%s) · compactions %d, %d moves (read %s, wrote %s) · resident filters %s, indexes %s · stalls %d (%s)\n",
		humanBytes(s.WALBytes), s.Flushes, humanBytes(s.FlushBytes), s.Compactions, s.CompactionMoves,
		humanBytes(s.CompactionRead), humanBytes(s.CompactionWritten),
		humanBytes(s.FilterResidentBytes), humanBytes(s.IndexResidentBytes), s.Stalls, seconds(s.StallSeconds))
	if stats != "" {
		fmt.Fprintf(w, "\nengine metrics (sieve.Metrics)\n%s", stats)
	}
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
