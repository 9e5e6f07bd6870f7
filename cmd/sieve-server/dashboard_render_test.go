package main

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
	"testing"
	"time"
)

type queryFn func(h []scrapeAt) []series

// ratioOfRates is rate(a) / (rate(a) + rate(b)) at scrape i.
func ratioOfRates(h []scrapeAt, i int, a, b, by string) map[string]float64 {
	ra, rb := rateBy(h, i, a, by, "{{"+by+"}}"), rateBy(h, i, b, by, "{{"+by+"}}")
	out := map[string]float64{}
	for k, v := range ra {
		out[k] = v / (v + rb[k])
	}
	return out
}

// quantileBy is histogram_quantile(q, sum by (command, le) (rate(
// sieve_server_command_duration_seconds_bucket[5s]))) at scrape i.
func quantileBy(h []scrapeAt, i int, q float64, legend string) map[string]float64 {
	j := before(h, i)
	cum := func(k int) map[string]map[float64]float64 {
		out := map[string]map[float64]float64{}
		for _, m := range h[k].mfs["sieve_server_command_duration_seconds"].GetMetric() {
			cmd := m.GetLabel()[0].GetValue()
			out[cmd] = map[float64]float64{}
			for _, b := range m.GetHistogram().GetBucket() {
				out[cmd][b.GetUpperBound()] = float64(b.GetCumulativeCount())
			}
			out[cmd][math.Inf(1)] = float64(m.GetHistogram().GetSampleCount())
		}
		return out
	}
	now, then := cum(i), cum(j)
	out := map[string]float64{}
	for cmd, bs := range now {
		var les []float64
		for le := range bs {
			les = append(les, le)
		}
		sort.Float64s(les)
		total := bs[math.Inf(1)] - then[cmd][math.Inf(1)]
		if total < 10 {
			continue
		}
		prevLe, prevN := 0.0, 0.0
		for _, le := range les {
			n := bs[le] - then[cmd][le]
			if n >= q*total && !math.IsInf(le, 1) {
				out[strings.ReplaceAll(legend, "{{command}}", cmd)] = prevLe + (le-prevLe)*(q*total-prevN)/math.Max(n-prevN, 1)
				break
			}
			prevLe, prevN = le, n
		}
	}
	return out
}

// panelQueries compute each panel's targets, as the dashboard's PromQL.
var panelQueries = map[string]queryFn{
	"Ops/s per command": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			return rateBy(h, i, "sieve_server_commands_total", "command", "{{command}}")
		})
	},
	"Command latency p99": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			return merge(quantileBy(h, i, 0.99, "p99 {{command}}"), quantileBy(h, i, 0.5, "p50 {{command}}"))
		})
	},
	"Filter FPR per level: measured vs expected": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			out := map[string]float64{}
			for l, v := range ratioOfRates(h, i, "sieve_filter_false_positives_total", "sieve_filter_negatives_total", "level") {
				out["measured L"+l] = v
			}
			for _, m := range h[i].mfs["sieve_filter_expected_false_positive_ratio"].GetMetric() {
				out["expected L"+m.GetLabel()[0].GetValue()+" "+m.GetLabel()[1].GetValue()] = m.GetGauge().GetValue()
			}
			return out
		})
	},
	"Filter FPR per policy since start": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			return merge(gaugeBy(h, i, "sieve_filter_policy_false_positive_ratio", "policy", "measured {{policy}}"),
				gaugeBy(h, i, "sieve_filter_policy_expected_false_positive_ratio", "policy", "expected {{policy}}"))
		})
	},
	"Flushes, compactions, stalls /s": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			return merge(rateBy(h, i, "sieve_flushes_total", "", "flushes"), rateBy(h, i, "sieve_compactions_total", "", "compactions"),
				rateBy(h, i, "sieve_write_stalls_total", "", "stalls"), rateBy(h, i, "sieve_write_slowdowns_total", "", "slowdowns"))
		})
	},
	"Write amplification": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			w := rateBy(h, i, "sieve_flush_written_bytes_total", "", "x")["x"] + rateBy(h, i, "sieve_compaction_written_bytes_total", "", "x")["x"]
			return merge(gaugeBy(h, i, "sieve_write_amplification_ratio", "", "write-amp"),
				map[string]float64{"write-amp (window)": w / rateBy(h, i, "sieve_wal_written_bytes_total", "", "x")["x"]})
		})
	},
	"Cache hit ratio": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			return map[string]float64{
				"block cache":   ratioOfRates(h, i, "sieve_block_cache_hits_total", "sieve_block_cache_misses_total", "")[""],
				"keyspace hits": ratioOfRates(h, i, "sieve_server_keyspace_hits_total", "sieve_server_keyspace_misses_total", "")[""],
			}
		})
	},
	"Memory": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			return merge(gaugeBy(h, i, "sieve_memtable_size_bytes", "", "memtables"), gaugeBy(h, i, "sieve_block_cache_size_bytes", "", "block cache"),
				map[string]float64{"filters + indexes": sumBy(h[i].mfs["sieve_filter_resident_bytes"], "")[""] + sumBy(h[i].mfs["sieve_index_resident_bytes"], "")[""]},
				gaugeBy(h, i, "go_memstats_heap_inuse_bytes", "", "Go heap in use"), gaugeBy(h, i, "process_resident_memory_bytes", "", "RSS"))
		})
	},
	"Level sizes": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 { return gaugeBy(h, i, "sieve_level_size_bytes", "level", "L{{level}}") })
	},
	"WAL and fsync": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			return merge(rateBy(h, i, "sieve_wal_written_bytes_total", "", "WAL bytes/s"), rateBy(h, i, "sieve_compaction_written_bytes_total", "", "compaction bytes/s"),
				rateBy(h, i, "sieve_flush_written_bytes_total", "", "flush bytes/s"))
		})
	},
	"Clients, expired keys, background error": func(h []scrapeAt) []series {
		return lines(h, func(i int) map[string]float64 {
			return merge(gaugeBy(h, i, "sieve_server_connected_clients", "", "clients"), rateBy(h, i, "sieve_server_expired_keys_total", "", "expired keys/s"),
				gaugeBy(h, i, "sieve_background_error", "", "background error (read-only)"))
		})
	},
}

// renderDashboard writes the HTML page: the panels in the dashboard's
// 24-column grid, each an SVG chart of its queries.
func renderDashboard(t *testing.T, h []scrapeAt, dur time.Duration) string {
	var b strings.Builder
	const colW, rowH = 64, 34
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>sieve-server dashboard</title><style>
body{background:#111217;color:#ccccdc;font-family:DejaVu Sans,sans-serif;margin:0}
h1{font-size:18px;margin:10px 12px}.p{position:absolute;background:#181b1f;border:1px solid #2c3235;border-radius:3px}
.t{font-size:13px;padding:6px 8px}</style></head><body>
<h1>sieve-server — panels of grafana/sieve-dashboard.json drawn from %d scrapes of a %v run (not Grafana)</h1><div style="position:relative">`, len(h), dur)
	for _, p := range loadDashboard(t) {
		x, y, w, ht := p.GridPos.X*colW, p.GridPos.Y*rowH, p.GridPos.W*colW-8, p.GridPos.H*rowH-8
		fmt.Fprintf(&b, `<div class="p" style="left:%dpx;top:%dpx;width:%dpx;height:%dpx"><div class="t">%s</div>`, x+4, y+4, w, ht, html.EscapeString(p.Title))
		b.WriteString(svgChart(panelQueries[p.Title](h), w, ht-28, p.Field.Defaults.Unit))
		b.WriteString(`</div>`)
	}
	b.WriteString(`</div></body></html>`)
	return b.String()
}
