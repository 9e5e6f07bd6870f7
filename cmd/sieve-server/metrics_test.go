package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// startMetricsChild starts this test binary as a server with -metrics-addr
// on a free port and JSON logs, and returns its address, the metrics URL
// and its stderr (the logs), read until the server exits.
func startMetricsChild(t *testing.T, extra ...string) (addr, url string, logs *strings.Builder, stop func()) {
	t.Helper()
	args := append([]string{"-addr", "127.0.0.1:0", "-dir", t.TempDir(), "-metrics-addr", "127.0.0.1:0",
		"-log-format", "json", "-log-level", "info", "-memtable-mib", "1"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SIEVE_SERVER_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs = &strings.Builder{}
	logsDone := make(chan struct{})
	go func() { _, _ = io.Copy(logs, errPipe); close(logsDone) }()
	r := bufio.NewReader(out)
	var lines [2]string
	for i := range lines {
		if lines[i], err = r.ReadString('\n'); err != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("server did not start: %v (%q)", err, lines)
		}
	}
	// "sieve-server listening on ADDR (...)", "sieve-server metrics on URL"
	addr, url = strings.Fields(lines[0])[3], strings.TrimSpace(strings.Fields(lines[1])[3])
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		<-logsDone
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			stop()
		}
	})
	return addr, url, logs, stop
}

// scrape fetches and parses url's metrics.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return mfs
}

// metricValue returns the value of the family's sample whose labels
// include want, and whether there is one.
func metricValue(mf *dto.MetricFamily, want map[string]string) (float64, bool) {
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			ok = ok && have[k] == v
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsEndpoint runs a server with -metrics-addr, runs commands
// (enough writes for flushes, reads that hit and miss, a key that
// expires), scrapes /metrics and checks the families and their labels:
// the engine's (sieveprom), the server's and Go's; and that the JSON log
// has the engine's flushes.
func TestMetricsEndpoint(t *testing.T) {
	addr, url, logs, stop := startMetricsChild(t)
	c := newClient(t, addr)
	val := strings.Repeat("v", 400)
	for i := range 4000 {
		if err := c.Set(ctx, fmt.Sprintf("key:%d", i), val, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 500 {
		_ = c.Get(ctx, fmt.Sprintf("key:%d", 2*i)).Err()     // hits, then misses past 4000
		_ = c.Get(ctx, fmt.Sprintf("absent:%d", i)).Err()    // misses: filter negatives
		_ = c.PFAdd(ctx, "visitors", fmt.Sprint(i%50)).Err() // the sketch family
	}
	if err := c.Set(ctx, "shortlived", "x", 20*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if err := c.Get(ctx, "shortlived").Err(); err == nil {
		t.Fatal("shortlived did not expire")
	}
	_ = c.Do(context.Background(), "nosuchcommand").Err()
	mfs := scrape(t, url)
	checkServerFamilies(t, mfs)
	checkEngineFamilies(t, mfs)
	stop()
	checkJSONLog(t, logs.String())
}

// checkServerFamilies checks the server's own metrics.
func checkServerFamilies(t *testing.T, mfs map[string]*dto.MetricFamily) {
	t.Helper()
	for _, w := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"sieve_server_commands_total", map[string]string{"command": "set"}, 4001},
		{"sieve_server_commands_total", map[string]string{"command": "get"}, 1001},
		{"sieve_server_commands_total", map[string]string{"command": "pfadd"}, 500},
		{"sieve_server_command_duration_seconds", map[string]string{"command": "get"}, 1001},
		{"sieve_server_connected_clients", nil, 1},
		{"sieve_server_keyspace_hits_total", nil, 500},
		{"sieve_server_keyspace_misses_total", nil, 500},
		{"sieve_server_expired_keys_total", nil, 1},
		{"sieve_server_instantaneous_ops_per_second", nil, 0},
		{"go_memstats_heap_alloc_bytes", nil, 1},
		{"process_resident_memory_bytes", nil, 1},
	} {
		mf := mfs[w.name]
		if mf == nil {
			t.Errorf("family %s missing", w.name)
			continue
		}
		if v, ok := metricValue(mf, w.labels); !ok || v < w.min {
			t.Errorf("%s%v = %v (found %v), want >= %v", w.name, w.labels, v, ok, w.min)
		}
	}
	if mf := mfs["sieve_server_command_duration_seconds"]; mf != nil && mf.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("command_duration_seconds is a %v", mf.GetType())
	}
}

// checkEngineFamilies checks the engine's metrics: counters, per-level
// and per-family labels, and the filters' measured and expected rates.
func checkEngineFamilies(t *testing.T, mfs map[string]*dto.MetricFamily) {
	t.Helper()
	for _, w := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"sieve_flushes_total", nil, 1},
		{"sieve_wal_written_bytes_total", nil, 1e6},
		{"sieve_level_tables", map[string]string{"cf": "default", "level": "0"}, 0},
		{"sieve_level_tables", map[string]string{"cf": "sketch"}, 0},
		{"sieve_memtable_size_bytes", map[string]string{"cf": "server-expires"}, 0},
		{"sieve_memtable_size_bytes", map[string]string{"cf": "sketch-pages"}, 0},
		{"sieve_filter_checks_total", map[string]string{"level": "0"}, 0},
		{"sieve_block_cache_hits_total", nil, 0},
		{"sieve_write_stalls_total", nil, 0},
		{"sieve_compactions_total", nil, 0},
		{"sieve_write_amplification_ratio", nil, 0},
	} {
		mf := mfs[w.name]
		if mf == nil {
			t.Errorf("family %s missing", w.name)
			continue
		}
		if v, ok := metricValue(mf, w.labels); !ok || v < w.min {
			t.Errorf("%s%v = %v (found %v), want >= %v", w.name, w.labels, v, ok, w.min)
		}
	}
	if v, ok := metricValue(mfs["sieve_background_error"], nil); !ok || v != 0 {
		t.Errorf("sieve_background_error = %v, %v", v, ok)
	}
	var sumChecks float64
	for _, m := range mfs["sieve_filter_checks_total"].GetMetric() {
		sumChecks += m.GetCounter().GetValue()
	}
	if sumChecks == 0 {
		t.Error("no filter checks counted")
	}
	exp := mfs["sieve_filter_expected_false_positive_ratio"]
	if exp == nil || len(exp.GetMetric()) == 0 {
		t.Fatal("no expected false-positive rate")
	}
	for _, m := range exp.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["level"] == "" || !strings.HasPrefix(l["policy"], "sieve.") || m.GetGauge().GetValue() <= 0 {
			t.Errorf("expected FPR sample %v = %v", l, m.GetGauge().GetValue())
		}
		if _, ok := metricValue(mfs["sieve_filter_false_positive_ratio"], l); !ok {
			t.Errorf("no measured FPR beside the expected one %v", l)
		}
	}
}

// checkJSONLog checks that every line the server logged is a JSON record
// and that the engine's flushes are among them.
func checkJSONLog(t *testing.T, logs string) {
	t.Helper()
	flushes := 0
	for line := range strings.Lines(logs) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			if strings.HasPrefix(line, "sieve-server: ") {
				continue // the shutdown messages
			}
			t.Errorf("not a JSON record: %q", line)
			continue
		}
		if rec["msg"] == "flushed" && rec["level"] == "INFO" {
			flushes++
		}
	}
	if flushes == 0 {
		t.Errorf("no flush logged:\n%s", logs)
	}
}
