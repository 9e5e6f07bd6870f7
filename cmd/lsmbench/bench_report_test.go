package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

func sampleResult() result {
	return result{
		Name: "readmissing", Ops: 200000, Threads: 1, Seconds: 0.2, OpsPerSec: 1e6, MicrosPerOp: 1, CPUMicrosPerOp: 0.9,
		NotFound: 200000, SampleEvery: 10,
		Latency: &latencySummary{Mean: 1, Min: 0.1, P50: 0.2, P90: 0.5, P99: 3, P999: 12.5, Max: 900},
		Lookups: &lookupStats{TablesProbed: 200000, TablesPerGet: 1, FilterChecks: 200000, FilterNegatives: 198400,
			FilterFalsePositives: 1600, MeasuredFPR: 0.008, MeasuredFPRLow: 0.0076, MeasuredFPRHigh: 0.0084,
			Policy: "sieve.bloom.blocked/10", ExpectedFPR: 0.0082, ExpectedAtKeys: 41666, DataBlocksRead: 1600,
			BlocksPerGet: 0.008, FileReads: 1400, BytesRead: 4 << 20, CacheHitRate: 0.125},
	}
}

func TestTextReportLines(t *testing.T) {
	var buf bytes.Buffer
	tr := textReport{w: &buf}
	r := sampleResult()
	tr.result(&r)
	out := buf.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 4)
	require.Regexp(t, `^readmissing +1\.000 +1,000,000 +0\.200 +3\.000 +12\.50  200,000 ops in 0\.200s, CPU 0\.900 µs/op, 0 found; latency of 1 op in 10$`, lines[0])
	require.Equal(t, "  └ read amp  1.00 tables probed/Get; 200,000 filter checks: 198,400 negatives, 1,600 false positives, 0 true positives", lines[1])
	require.Contains(t, lines[2], "FPR 0.80% measured (95% CI 0.76%–0.84% over 200,000 probes of tables without the key) vs 0.82% expected for sieve.bloom.blocked/10 at 41,666 keys/table")
	require.Equal(t, "  └ blocks    0.008 data blocks/Get (0.007 file reads/Get, 20B/Get), block cache hit rate 12.5%", lines[3])

	buf.Reset()
	tr.result(&result{Name: "pfadd", Skipped: "not yet available: x"})
	require.Equal(t, "pfadd            skipped: not yet available: x\n", buf.String())

	buf.Reset()
	tr.result(&result{Name: "compact", Seconds: 2, CPUSeconds: 1.5, Notes: []string{"LSM before: empty"}, Error: "compact: boom"})
	require.Contains(t, buf.String(), "flush + compact in 2.000s (CPU 1.500s)")
	require.Contains(t, buf.String(), "  · LSM before: empty\n")
	require.Contains(t, buf.String(), "  ✗ error: compact: boom\n")

	buf.Reset()
	tr.footer(&lsmShape{Levels: []levelShape{{Level: 0, Files: 2, Bytes: 3 << 20, Score: 0.5}, {Level: 6, Files: 24, Bytes: 96 << 20}},
		Files: 26, Bytes: 99 << 20, ReadAmp: 3, WriteAmp: 3.42}, "")
	require.Contains(t, buf.String(), "L0            2     3.0MiB    0.50\n")
	require.Contains(t, buf.String(), "total        26    99.0MiB   read-amp 3 (tables a Get may probe), write-amp 3.42")
}

func TestCSVRowsMatchHeader(t *testing.T) {
	var buf bytes.Buffer
	rs := []result{sampleResult(), {Name: "pfadd", Skipped: "later"}, {Name: "flush", Seconds: 1}}
	require.NoError(t, writeCSV(&buf, rs))
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	require.Len(t, lines, 4)
	for _, r := range rs {
		require.Len(t, csvRow(&r), len(csvHeader))
	}
	require.True(t, strings.HasPrefix(lines[1], "readmissing,200000,1,0.2,1e+06,1,0,0.9,0.2,3,12.5,900,0,200000,1,200000,198400,1600,0,0.008,0.0082,0.008,0.125,,"))
}

func TestJSONHasNoNaN(t *testing.T) {
	// encoding/json refuses NaN and ±Inf: every float that can be one goes
	// through finite.
	require.Zero(t, finite(math.NaN()))
	require.Zero(t, finite(math.Inf(-1)))
	rep := &benchReport{Schema: jsonSchema, Env: &envInfo{}, Config: &config{}, Results: []result{sampleResult()}, LSM: shapeOf(newEmptyMetrics())}
	var buf bytes.Buffer
	require.NoError(t, writeJSON(&buf, rep))
	var back benchReport
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, rep.Results[0].Lookups.MeasuredFPR, back.Results[0].Lookups.MeasuredFPR)
}

func newEmptyMetrics() *sieve.Metrics { return &sieve.Metrics{WriteAmp: math.NaN()} }
