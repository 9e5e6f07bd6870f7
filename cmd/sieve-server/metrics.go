package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sievedb/sieve/sieveprom"
)

// The /metrics endpoint (-metrics-addr): the engine's metrics (sieveprom,
// every column family of the server), the server's own from the counters
// INFO reads (stats.go: nothing is counted twice), and Go's runtime and
// the process.

// serverCollector exports the server's counters.
type serverCollector struct{ s *Server }

func sdesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("sieve_server_"+name, help, labels, nil)
}

var (
	cmdCallsDesc    = sdesc("commands_total", "Commands run, by command (INFO commandstats calls).", "command")
	cmdFailedDesc   = sdesc("command_errors_total", "Commands that answered an error, by command.", "command")
	cmdRejectedDesc = sdesc("commands_rejected_total", "Commands refused before they ran (arity, NOAUTH), by command.", "command")
	cmdLatencyDesc  = sdesc("command_duration_seconds", "Time to run a command, by command.", "command")
	scalarDescs     = []struct {
		desc *prometheus.Desc
		typ  prometheus.ValueType
		val  func(*Server) float64
	}{
		{sdesc("connected_clients", "Clients connected."), prometheus.GaugeValue, func(s *Server) float64 { return float64(s.clients.Load()) }},
		{sdesc("connections_received_total", "Connections accepted."), prometheus.CounterValue, func(s *Server) float64 { return float64(s.conns.Load()) }},
		{sdesc("connections_rejected_total", "Connections refused (maxclients, protected mode)."), prometheus.CounterValue, func(s *Server) float64 { return float64(s.rejected.Load()) }},
		{sdesc("keyspace_hits_total", "Reads of keys that existed."), prometheus.CounterValue, func(s *Server) float64 { h, _ := s.hitsMisses(); return float64(h) }},
		{sdesc("keyspace_misses_total", "Reads of keys that did not exist."), prometheus.CounterValue, func(s *Server) float64 { _, m := s.hitsMisses(); return float64(m) }},
		{sdesc("expired_keys_total", "Keys deleted because their deadline had come."), prometheus.CounterValue, func(s *Server) float64 { return float64(s.ks.expired.Load()) }},
		{sdesc("keys_with_deadline", "Keys that have a deadline (an expire time)."), prometheus.GaugeValue, func(s *Server) float64 { n, _ := s.ks.exp.stats(); return float64(n) }},
		{sdesc("protocol_errors_total", "Connections closed for a protocol error."), prometheus.CounterValue, func(s *Server) float64 { return float64(s.protoErrs.Load()) }},
		{sdesc("auth_failures_total", "AUTH attempts that failed."), prometheus.CounterValue, func(s *Server) float64 { return float64(s.authFails.Load()) }},
		{sdesc("instantaneous_ops_per_second", "Commands per second over the last 1.6 s (INFO instantaneous_ops_per_sec)."), prometheus.GaugeValue, func(s *Server) float64 { return float64(s.opsPerSec()) }},
		{sdesc("bitmap_page_cache_bytes", "Bytes of the pages of paged strings (bitmaps) cached."), prometheus.GaugeValue, func(s *Server) float64 { return float64(s.ks.bits.size()) }},
		{sdesc("uptime_seconds", "Time since the server started."), prometheus.GaugeValue, func(s *Server) float64 { return time.Since(s.started).Seconds() }},
	}
)

func (c serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cmdCallsDesc, cmdFailedDesc, cmdRejectedDesc, cmdLatencyDesc} {
		ch <- d
	}
	for _, d := range scalarDescs {
		ch <- d.desc
	}
}

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range scalarDescs {
		ch <- prometheus.MustNewConstMetric(d.desc, d.typ, d.val(c.s))
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c.collectCommand(ch, n)
	}
}

// collectCommand sends a command's counters and latency histogram, if it
// was called or rejected.
func (c serverCollector) collectCommand(ch chan<- prometheus.Metric, name string) {
	var calls, usec, failed, rejected int64
	var buckets [latencyBuckets]int64
	for i := range c.s.cstats[commands[name].idx] {
		st := &c.s.cstats[commands[name].idx][i]
		calls += st.calls.Load()
		usec += st.usec.Load()
		failed += st.failed.Load()
		rejected += st.rejected.Load()
		for b := range buckets {
			buckets[b] += st.latency[b].Load()
		}
	}
	if calls == 0 && rejected == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(cmdCallsDesc, prometheus.CounterValue, float64(calls), name)
	ch <- prometheus.MustNewConstMetric(cmdFailedDesc, prometheus.CounterValue, float64(failed), name)
	ch <- prometheus.MustNewConstMetric(cmdRejectedDesc, prometheus.CounterValue, float64(rejected), name)
	cum := map[float64]uint64{}
	var n uint64
	for b := range latencyBuckets - 1 {
		n += uint64(buckets[b])
		cum[latencyBound(b).Seconds()] = n
	}
	// The count is the buckets' sum (a call is counted in its bucket a
	// moment after calls): never below a bucket.
	n += uint64(buckets[latencyBuckets-1])
	ch <- prometheus.MustNewConstHistogram(cmdLatencyDesc, n, float64(usec)/1e6, cum, name)
}

// metricsRegistry returns a registry of the engine's, the server's, Go's
// and the process's metrics.
func (s *Server) metricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	ks := s.ks
	reg.MustRegister(
		sieveprom.New(s.db, ks.cf, ks.meta, ks.expCF, ks.st.PagesColumnFamily()),
		serverCollector{s},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// ServeMetrics serves /metrics over HTTP on addr until Close, and returns
// the address it listens on.
func (s *Server) ServeMetrics(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metricsRegistry(), promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.metricsHTTP.Store(hs)
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serving /metrics", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return ln.Addr().String(), nil
}

// closeMetrics stops the /metrics endpoint (before the DB closes).
func (s *Server) closeMetrics() {
	if hs := s.metricsHTTP.Load(); hs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}
}
