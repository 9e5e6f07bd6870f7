package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runCLI runs lsmbench in-process and returns its exit status, stdout and
// stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func resultByName(t *testing.T, rep *benchReport, name string, nth int) *result {
	t.Helper()
	for i := range rep.Results {
		if rep.Results[i].Name == name {
			if nth == 0 {
				return &rep.Results[i]
			}
			nth--
		}
	}
	t.Fatalf("no result %q", name)
	return nil
}

// TestEndToEndJSON runs a small but complete configuration — several
// tables in L0, then compacted — and checks the JSON document's fields and
// the invariants that tie the engine's counters to the workloads.
func TestEndToEndJSON(t *testing.T) {
	const num = 20000
	// 560 KiB memtables hold about 3,050 of these entries: 7 flushes, of
	// which the L0 trigger (4) compacts 4, leaving 3 L0 tables for the
	// reads before compaction (which must not compact them: their Gets
	// would, once they outnumber the writes since).
	code, out, errs := runCLI(t, "-num=20000", "-json", "-memtable_size=560KiB", "-threads=2", "-progress=off", "-disable_seek_compactions",
		"-benchmarks=fillrandom,flush,readrandom,readmissing,readhot,compact,readrandom,readmissing,seekrandom,scan,overwrite,fillseq,pfadd")
	require.Equal(t, 0, code, "stderr: %s", errs)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)

	require.Equal(t, jsonSchema, rep.Schema)
	require.Equal(t, num, rep.Config.Num)
	require.Equal(t, num, rep.Config.Reads)
	require.Equal(t, "sieve.bloom.blocked/10", rep.Policy)
	require.False(t, rep.Failed)
	require.Len(t, rep.Results, 13)
	require.Positive(t, rep.Env.ClockCostNs)
	require.NoDirExists(t, rep.Env.DBDir, "the temporary database is removed")
	checkResultFields(t, &rep, num)
	checkLookupCounters(t, &rep, num)
	checkLSMShape(t, rep.LSM)
}

// checkResultFields checks what every timed result of a -threads=2 run
// reports, and the pfadd result's notes.
func checkResultFields(t *testing.T, rep *benchReport, num int) {
	for _, r := range rep.Results {
		require.Empty(t, r.Error, r.Name)
		if r.Name == "flush" || r.Name == "compact" {
			continue
		}
		require.Equal(t, int64(num), r.Ops, r.Name)
		require.Equal(t, 2, r.Threads, r.Name)
		require.Positive(t, r.OpsPerSec, r.Name)
		require.InEpsilon(t, 2e6/r.OpsPerSec, r.MicrosPerOp, 1e-6, "%s: µs/op is per thread", r.Name)
		l := r.Latency
		require.NotNil(t, l, r.Name)
		require.True(t, l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max, "%s: %+v", r.Name, l)
		require.GreaterOrEqual(t, r.SampleEvery, 1)
		require.Positive(t, r.CPUMicrosPerOp, r.Name)
	}
	pf := resultByName(t, rep, "pfadd", 0)
	require.Empty(t, pf.Skipped)
	require.Zero(t, pf.Found, "blind adds have no reply")
	require.Contains(t, strings.Join(pf.Notes, "\n"), "PFCount of the union of the keys")
}

// checkLookupCounters ties the engine's lookup counters to the read
// workloads, before and after the compaction.
func checkLookupCounters(t *testing.T, rep *benchReport, num int) {

	// Before compaction the keys sit in several L0 tables, so a Get probes
	// more than one table and the filter has work to do on present keys too.
	for nth := range 2 {
		rr := resultByName(t, rep, "readrandom", nth)
		require.Equal(t, int64(num), rr.Found, "every present key is found")
		require.Zero(t, rr.NotFound)
		l := rr.Lookups
		require.NotNil(t, l)
		require.Equal(t, l.FilterChecks, l.FilterNegatives+l.FilterFalsePositives+l.FilterTruePositives)
		require.Equal(t, int64(num), l.FilterTruePositives, "one table holds each key")
		require.GreaterOrEqual(t, l.TablesPerGet, 1.0)
		require.GreaterOrEqual(t, l.BlocksPerGet, 1.0)
		require.Equal(t, l.DataBlocksRead, l.BlockCacheHits+l.FileReads)

		rm := resultByName(t, rep, "readmissing", nth)
		require.Zero(t, rm.Found, "missing keys are never found")
		require.Equal(t, int64(num), rm.NotFound)
		m := rm.Lookups
		require.Positive(t, m.FilterChecks)
		require.Equal(t, m.FilterChecks, m.FilterNegatives+m.FilterFalsePositives, "readmissing: negatives + false positives = checks")
		require.Zero(t, m.FilterTruePositives)
		require.Equal(t, m.FilterFalsePositives, m.DataBlocksRead, "only a false positive reads a data block")
		require.InDelta(t, float64(m.FilterFalsePositives)/float64(m.FilterChecks), m.MeasuredFPR, 1e-12)
		require.True(t, m.MeasuredFPRLow <= m.MeasuredFPR && m.MeasuredFPR <= m.MeasuredFPRHigh)
		require.InDelta(t, 0.0082, m.ExpectedFPR, 0.002, "Bloom(10) expects about 0.82%%")
		require.Less(t, m.MeasuredFPR, 0.03)
	}
	require.Greater(t, resultByName(t, rep, "readrandom", 0).Lookups.TablesPerGet, 1.0, "several L0 tables")
	require.Greater(t, resultByName(t, rep, "readmissing", 0).Lookups.TablesPerGet, 1.0)

	hot := resultByName(t, rep, "readhot", 0)
	require.Equal(t, int64(num), hot.Found)
	seek := resultByName(t, rep, "seekrandom", 0)
	require.Equal(t, int64(num), seek.Found, "every seek lands on its key")
	require.Equal(t, int64(num), resultByName(t, rep, "scan", 0).Found)

}

// checkLSMShape checks the report's LSM shape adds up.
func checkLSMShape(t *testing.T, lsm *lsmShape) {
	require.Positive(t, lsm.Files)
	require.Positive(t, lsm.Bytes)
	require.Positive(t, lsm.WALBytes)
	require.GreaterOrEqual(t, lsm.WriteAmp, 0.5)
	var files int64
	for _, l := range lsm.Levels {
		files += l.Files
	}
	require.Equal(t, lsm.Files, files)
}

// TestJSONSchema pins the field names of the -json document: renaming one
// breaks scripts, so it must come with a new jsonSchema.
func TestJSONSchema(t *testing.T) {
	code, out, errs := runCLI(t, "-num=2000", "-json", "-progress=off", "-benchmarks=fillrandom,compact,readmissing,bfadd")
	require.Equal(t, 0, code, errs)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	keys := func(v any) []string {
		var ks []string
		for k := range v.(map[string]any) {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	require.Equal(t, []string{"config", "env", "failed", "lsm", "policy", "results", "schema", "wall_seconds"}, keys(doc))
	require.Equal(t, []string{"arch", "clock_cost_ns", "cpu_seconds", "cpus", "db_dir", "db_kept", "go_version", "gomaxprocs", "load_avg_end", "load_avg_start", "os", "sieve_lsmbench", "started"}, keys(doc["env"]))
	require.Subset(t, keys(doc["config"]), []string{"benchmarks", "num", "reads", "key_size", "value_size", "filter", "bits_per_key",
		"fingerprint_bits", "cache_size", "memtable_size", "compression", "sync", "threads", "seed", "use_existing_db"})
	results := doc["results"].([]any)
	require.Len(t, results, 4)
	require.Equal(t, []string{"cpu_seconds", "cpu_us_per_op", "found", "latency_sample_every", "latency_us", "mb_per_sec", "name",
		"not_found", "ops", "ops_per_sec", "point_lookups", "seconds", "threads", "us_per_op"}, keys(results[2]))
	require.Equal(t, []string{"max", "mean", "min", "p50", "p90", "p99", "p99_9"}, keys(results[2].(map[string]any)["latency_us"]))
	require.Equal(t, []string{"block_cache_hit_rate", "block_cache_hits", "bytes_read", "data_blocks_per_get", "data_blocks_read",
		"expected_fpr", "expected_fpr_at_keys_per_table", "file_reads", "filter_checks", "filter_false_positives", "filter_negatives",
		"filter_true_positives", "gets_reaching_tables", "measured_fpr", "measured_fpr_ci95_high", "measured_fpr_ci95_low", "policy",
		"tables_per_get", "tables_probed"}, keys(results[2].(map[string]any)["point_lookups"]))
	require.Equal(t, "bfadd", results[3].(map[string]any)["name"])
	require.Contains(t, keys(results[3]), "notes")
	require.NotContains(t, keys(results[3]), "error")
	require.Subset(t, keys(doc["lsm"]), []string{"levels", "files", "bytes", "read_amp", "write_amp", "wal_bytes", "flushes", "compactions"})
}

func TestTextAndCSVOutput(t *testing.T) {
	code, out, errs := runCLI(t, "-num=3000", "-progress=off", "-benchmarks=fillseq,compact,readrandom,readmissing,pfadd", "-stats")
	require.Equal(t, 0, code, errs)
	for _, want := range []string{"lsmbench ", "benchmark", "µs/op", "p99.9 µs", "fillseq", "readmissing", "└ read amp", "└ filter",
		"FPR", "expected for sieve.bloom.blocked/10", "└ blocks", "block cache hit rate", "PFCount of the union of the keys",
		"MB/s of elements",
		"LSM after the run", "write-amp", "engine metrics (sieve.Metrics)", "wall time"} {
		require.Contains(t, out, want)
	}

	code, out, errs = runCLI(t, "-num=3000", "-csv", "-progress=off", "-benchmarks=fillrandom,readmissing,bfadd")
	require.Equal(t, 0, code, errs)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 4)
	require.Equal(t, csvHeader, rows[0])
	for _, r := range rows[1:] {
		require.Len(t, r, len(csvHeader))
	}
	require.Equal(t, "readmissing", rows[2][0])
	require.Equal(t, "bfadd", rows[3][0])
	require.Empty(t, rows[3][len(csvHeader)-2], "bfadd is not skipped")
	require.Empty(t, rows[3][len(csvHeader)-1], "bfadd has no error")
}

func TestUsageErrors(t *testing.T) {
	code, out, errs := runCLI(t, "-benchmarks=readrandom,nope")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, errs, `lsmbench: invalid value "readrandom,nope" for flag -benchmarks: unknown benchmark "nope"`)
	require.Contains(t, errs, "usage: lsmbench [flags]", "the usage text follows the error")
	require.Contains(t, errs, "-bits_per_key")

	code, _, errs = runCLI(t, "-num=-3")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "negative")

	code, out, _ = runCLI(t, "-h")
	require.Equal(t, 0, code)
	require.Contains(t, out, "usage: lsmbench")
	require.Contains(t, out, "-fingerprint_bits")

	code, _, errs = runCLI(t, "filters", "-bits=0")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "usage: lsmbench filters")
	code, _, errs = runCLI(t, "sketches", "-p=2")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "usage: lsmbench sketches")
}

// TestKeptDatabase writes a database into -db, refuses to write into it
// again, and reads it back with -use_existing_db.
func TestKeptDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	code, _, errs := runCLI(t, "-db="+dir, "-num=5000", "-progress=off", "-benchmarks=fillrandom,compact")
	require.Equal(t, 0, code, errs)
	require.DirExists(t, dir)

	code, _, errs = runCLI(t, "-db="+dir, "-num=5000", "-progress=off", "-benchmarks=fillrandom")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "is not empty: pass -use_existing_db")

	code, out, errs := runCLI(t, "-db="+dir, "-use_existing_db", "-num=5000", "-json", "-progress=off", "-benchmarks=readrandom,readmissing")
	require.Equal(t, 0, code, errs)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, int64(5000), rep.Results[0].Found)
	require.Zero(t, rep.Results[1].Found)
	require.True(t, rep.Env.DBKept)
	require.DirExists(t, dir)

	code, _, errs = runCLI(t, "-db="+filepath.Join(t.TempDir(), "absent"), "-use_existing_db", "-benchmarks=readrandom")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "-use_existing_db")
	_, err := os.Stat(dir)
	require.NoError(t, err)
}

func TestReadsWithoutData(t *testing.T) {
	code, out, errs := runCLI(t, "-num=1000", "-json", "-progress=off", "-benchmarks=readrandom")
	require.Equal(t, 0, code, errs)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Zero(t, rep.Results[0].Found)
	require.Contains(t, strings.Join(rep.Results[0].Notes, " "), "load with fillrandom")
}

// TestSketchBenchmarks runs pfadd and bfadd with replies over several
// threads, then compacts: the checks after each (union count, no false
// negative, FPR) pass, and the replies are counted as "found".
func TestSketchBenchmarks(t *testing.T) {
	const num = 4000
	code, out, errs := runCLI(t, "-num=4000", "-json", "-progress=off", "-threads=2", "-sketch_keys=4", "-sketch_reply",
		"-benchmarks=pfadd,bfadd,compact,bfadd")
	require.Equal(t, 0, code, "stderr: %s\n%s", errs, out)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.False(t, rep.Failed)
	require.Equal(t, 4, rep.Config.SketchKeys)
	require.True(t, rep.Config.SketchReply)

	pf := resultByName(t, &rep, "pfadd", 0)
	require.Equal(t, int64(num), pf.Ops)
	require.Positive(t, pf.Found, "PFAdd replies: a register rose")
	require.LessOrEqual(t, pf.Found, int64(num))
	require.Contains(t, strings.Join(pf.Notes, "\n"), "with reply")

	bf := resultByName(t, &rep, "bfadd", 0)
	require.Equal(t, int64(num), bf.Ops)
	require.Greater(t, bf.Found, int64(num*97/100), "BFAdd replies: added, except false positives")
	notes := strings.Join(bf.Notes, "\n")
	require.Contains(t, notes, "0 false negatives")
	require.Contains(t, notes, "capacity 1,000 in 1 sub-filter(s)")

	require.Contains(t, strings.Join(resultByName(t, &rep, "compact", 0).Notes, "\n"), "sketch column family compacted too: L6")
	again := resultByName(t, &rep, "bfadd", 1)
	require.Empty(t, again.Error, "the filters reserved by the first run are reused")
	require.Less(t, again.Found, int64(num/10), "the same items again: possibly present")
}
