package sieveprom

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/vfs"
)

// openLoaded opens an in-memory DB with a second column family, writes and
// flushes keys in both, and reads absent keys so that filters are probed.
func openLoaded(t *testing.T) (*sieve.DB, *sieve.ColumnFamily) {
	t.Helper()
	db, err := sieve.Open("/db", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cf, err := db.OpenColumnFamily("other", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		k := fmt.Appendf(nil, "key%06d", 2*i)
		if err := db.Put(k, []byte("v"), sieve.NoSync); err != nil {
			t.Fatal(err)
		}
		if err := cf.Put(k, []byte("w"), sieve.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		_, _ = db.Get(fmt.Appendf(nil, "key%06d", 2*i+1)) // absent: filter negatives and false positives
		_, _ = cf.Get(fmt.Appendf(nil, "key%06d", 2*i))
	}
	return db, cf
}

// TestCollector registers a collector, lints its metric names with
// Prometheus's own rules, and checks families, labels and values.
func TestCollector(t *testing.T) {
	db, cf := openLoaded(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(db, cf))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	for _, name := range []string{"sieve_flushes_total", "sieve_wal_written_bytes_total", "sieve_filter_checks_total",
		"sieve_block_cache_hits_total", "sieve_level_tables", "sieve_memtable_size_bytes", "sieve_write_stalls_total",
		"sieve_filter_false_positive_ratio", "sieve_filter_expected_false_positive_ratio",
		"sieve_filter_policy_false_positive_ratio", "sieve_background_error", "sieve_write_amplification_ratio"} {
		if byName[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}
	if v := byName["sieve_flushes_total"].GetMetric()[0].GetCounter().GetValue(); v < 1 {
		t.Errorf("sieve_flushes_total = %v, want >= 1", v)
	}
	cfs := map[string]bool{}
	for _, m := range byName["sieve_memtable_size_bytes"].GetMetric() {
		cfs[label(m, "cf")] = true
	}
	if !cfs["default"] || !cfs["other"] {
		t.Errorf("cf labels %v, want default and other", cfs)
	}
	checkFPR(t, byName)
}

// checkFPR checks that a level with filters has its measured and expected
// rates, with a policy label, both plausible for 10 bits per key.
func checkFPR(t *testing.T, byName map[string]*dto.MetricFamily) {
	t.Helper()
	exp := byName["sieve_filter_expected_false_positive_ratio"].GetMetric()
	meas := byName["sieve_filter_false_positive_ratio"].GetMetric()
	if len(exp) == 0 || len(meas) != len(exp) {
		t.Fatalf("%d expected and %d measured rates", len(exp), len(meas))
	}
	for i, m := range exp {
		pol := label(m, "policy")
		if !strings.HasPrefix(pol, "sieve.") || label(m, "level") == "" {
			t.Errorf("labels %v", m.GetLabel())
		}
		e, got := m.GetGauge().GetValue(), meas[i].GetGauge().GetValue()
		if e <= 0 || e > 0.05 || got > 0.05 {
			t.Errorf("level %s policy %s: expected %v, measured %v", label(m, "level"), pol, e, got)
		}
		t.Logf("level %s policy %s: expected %.3f%%, measured %.3f%%", label(m, "level"), pol, 100*e, 100*got)
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
