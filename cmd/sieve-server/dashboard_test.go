package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestDashboardPicture (make dashboard-picture) draws the panels of
// grafana/sieve-dashboard.json from a real run: it serves /metrics, runs a
// workload of several clients, scrapes every second, computes each
// panel's queries over the scrapes (panelQueries: the same as the
// dashboard's PromQL, written in Go, with a 5 s rate window) and writes
// an HTML page of SVG charts in the dashboard's grid to
// $SIEVE_DASHBOARD_HTML. Headless Chromium takes its picture. It is not
// Grafana: no Grafana runs here.
func TestDashboardPicture(t *testing.T) {
	out := os.Getenv("SIEVE_DASHBOARD_HTML")
	if out == "" {
		t.Skip("set SIEVE_DASHBOARD_HTML (make dashboard-picture)")
	}
	dur := 90 * time.Second
	if d, err := time.ParseDuration(os.Getenv("SIEVE_DASHBOARD_DURATION")); err == nil {
		dur = d
	}
	s := startServer(t, "", func(c *Config) { c.MemTableMiB = 1; c.L0Trigger = 4 })
	url, err := s.ServeMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { dashboardWorkload(t, s.Addr(), w, stop) })
	}
	var hist []scrapeAt
	start := time.Now()
	for time.Since(start) < dur {
		time.Sleep(time.Second)
		hist = append(hist, scrapeAt{time.Since(start).Seconds(), scrape(t, "http://"+url+"/metrics")})
	}
	close(stop)
	wg.Wait()
	if err := os.WriteFile(out, []byte(renderDashboard(t, hist, dur)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dashboardWorkload is one client: SETs of new and old keys, GETs that
// hit and miss, PFADDs, BF.ADDs, INCRs, and keys that expire in a second.
func dashboardWorkload(t *testing.T, addr string, w int, stop chan struct{}) {
	c := newClient(t, addr)
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	val := strings.Repeat("x", 300)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		k := fmt.Sprintf("user:%d:%d", w, rng.IntN(1+i))
		switch r := rng.IntN(20); {
		case r < 7:
			_ = c.Set(ctx, fmt.Sprintf("user:%d:%d", w, i), val, 0).Err()
		case r < 13:
			_ = c.Get(ctx, k).Err()
		case r < 15:
			_ = c.Get(ctx, fmt.Sprintf("absent:%d", rng.Int64())).Err()
		case r < 17:
			_ = c.PFAdd(ctx, fmt.Sprintf("hll:%d", rng.IntN(20)), rng.Int64()).Err()
		case r < 18:
			_ = c.Do(ctx, "BF.ADD", fmt.Sprintf("bf:%d", rng.IntN(5)), rng.Int64()).Err()
		case r < 19:
			_ = c.Incr(ctx, fmt.Sprintf("counter:%d", rng.IntN(100))).Err()
		default:
			_ = c.Set(ctx, fmt.Sprintf("session:%d:%d", w, i), "s", time.Second).Err()
		}
	}
}

// scrapeAt is one scrape, t seconds after the start.
type scrapeAt struct {
	t   float64
	mfs map[string]*dto.MetricFamily
}

// dashPanel is what the renderer reads of a dashboard panel.
type dashPanel struct {
	Title   string                   `json:"title"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Field   struct {
		Defaults struct{ Unit string } `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct{ Expr string } `json:"targets"`
}

func loadDashboard(t *testing.T) []dashPanel {
	b, err := os.ReadFile("grafana/sieve-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Panels []dashPanel }
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d.Panels
}

// TestDashboardJSON: the dashboard parses, every panel has queries over
// metrics the server exports, and the picture's renderer knows each panel.
func TestDashboardJSON(t *testing.T) {
	for _, p := range loadDashboard(t) {
		if len(p.Targets) == 0 || panelQueries[p.Title] == nil {
			t.Errorf("panel %q: %d targets, renderer known %v", p.Title, len(p.Targets), panelQueries[p.Title] != nil)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "sieve_") && !strings.Contains(tg.Expr, "go_") && !strings.Contains(tg.Expr, "process_") {
				t.Errorf("panel %q: %q reads no exported metric", p.Title, tg.Expr)
			}
		}
	}
}

// series is one line of a panel.
type series struct {
	name string
	t, v []float64
}

// sumBy sums a family's samples by the label by ("" sums all), reading
// counters, gauges and untyped values.
func sumBy(mf *dto.MetricFamily, by string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == by {
				key = l.GetValue()
			}
		}
		out[key] += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return out
}

// rateWindow is the rate() window of the picture's queries.
const rateWindow = 5.0

// at returns index j of the scrape rateWindow seconds before scrape i.
func before(h []scrapeAt, i int) int {
	j := i
	for j > 0 && h[i].t-h[j].t < rateWindow {
		j--
	}
	return j
}

// lines evaluates f at every scrape i (from 1), giving name → value, into
// series.
func lines(h []scrapeAt, f func(i int) map[string]float64) []series {
	byName := map[string]*series{}
	for i := 1; i < len(h); i++ {
		for name, v := range f(i) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			s := byName[name]
			if s == nil {
				s = &series{name: name}
				byName[name] = s
			}
			s.t, s.v = append(s.t, h[i].t), append(s.v, v)
		}
	}
	var out []series
	for _, s := range byName {
		out = append(out, *s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].name < out[b].name })
	return out
}

// rateBy is sum by (by) (rate(name[5s])) at scrape i, legend-formatted.
func rateBy(h []scrapeAt, i int, name, by, legend string) map[string]float64 {
	j := before(h, i)
	now, then := sumBy(h[i].mfs[name], by), sumBy(h[j].mfs[name], by)
	out := map[string]float64{}
	for k, v := range now {
		out[strings.ReplaceAll(legend, "{{"+by+"}}", k)] = math.Max(v-then[k], 0) / (h[i].t - h[j].t)
	}
	return out
}

// gaugeBy is sum by (by) (name) at scrape i, legend-formatted.
func gaugeBy(h []scrapeAt, i int, name, by, legend string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range sumBy(h[i].mfs[name], by) {
		out[strings.ReplaceAll(legend, "{{"+by+"}}", k)] = v
	}
	return out
}

func merge(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
