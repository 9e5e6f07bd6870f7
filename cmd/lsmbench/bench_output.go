package main

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
)

// jsonSchema names the layout of -json output. Change it when a field is
// renamed or removed; adding fields keeps it.
const jsonSchema = "sieve.lsmbench.v1"

// benchReport is the whole -json document:
//
//	schema    "sieve.lsmbench.v1"
//	env       where and when: Go version, CPUs, clock cost, db directory
//	config    every flag's value
//	policy    the filter policy's Name()
//	results   one object per benchmark, in the order run (see result)
//	lsm       the LSM's shape and cumulative I/O at the end (see lsmShape)
//	wall_seconds, failed
type benchReport struct {
	Schema      string    `json:"schema"`
	Env         *envInfo  `json:"env"`
	Config      *config   `json:"config"`
	Policy      string    `json:"policy"`
	Results     []result  `json:"results"`
	LSM         *lsmShape `json:"lsm"`
	WallSeconds float64   `json:"wall_seconds"`
	Failed      bool      `json:"failed"`
}

func writeJSON(w io.Writer, r *benchReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// csvHeader is the first row of -csv output; writeCSV writes one row per
// result below it. Empty cells mean "not applicable".
var csvHeader = []string{
	"benchmark", "ops", "threads", "seconds", "ops_per_sec", "us_per_op", "mb_per_sec", "cpu_us_per_op",
	"p50_us", "p99_us", "p99_9_us", "max_us", "found", "not_found",
	"tables_per_get", "filter_checks", "filter_negatives", "filter_false_positives", "filter_true_positives",
	"measured_fpr", "expected_fpr", "data_blocks_per_get", "block_cache_hit_rate",
	"skipped", "error",
}

func writeCSV(w io.Writer, rs []result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for i := range rs {
		if err := cw.Write(csvRow(&rs[i])); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvRow(r *result) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	row := []string{r.Name, i(r.Ops), strconv.Itoa(r.Threads), f(r.Seconds), f(r.OpsPerSec), f(r.MicrosPerOp), f(r.MBPerSec), f(r.CPUMicrosPerOp)}
	if l := r.Latency; l != nil {
		row = append(row, f(l.P50), f(l.P99), f(l.P999), f(l.Max))
	} else {
		row = append(row, "", "", "", "")
	}
	row = append(row, i(r.Found), i(r.NotFound))
	if l := r.Lookups; l != nil {
		row = append(row, f(l.TablesPerGet), i(l.FilterChecks), i(l.FilterNegatives), i(l.FilterFalsePositives),
			i(l.FilterTruePositives), f(l.MeasuredFPR), f(l.ExpectedFPR), f(l.BlocksPerGet), f(l.CacheHitRate))
	} else {
		row = append(row, "", "", "", "", "", "", "", "", "")
	}
	return append(row, r.Skipped, r.Error)
}
