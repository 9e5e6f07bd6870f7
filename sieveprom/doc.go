// Package sieveprom exports a sieve database's metrics (sieve.Metrics, and
// ColumnFamily.Metrics for each column family given) to Prometheus as a
// prometheus.Collector:
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(sieveprom.New(db, cf1, cf2))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Every figure is read from DB.Metrics at scrape time: the collector keeps
// no state and adds no cost to reads or writes.
//
// # Names
//
// Counters end in _total, sizes in _bytes, times in _seconds; ratios end in
// _ratio (0 to 1). Figures of a level carry the label level ("0" to "6"),
// figures of a column family the label cf. The engine counts reads,
// writes, flushes, compactions and filter probes over the whole database:
// those carry no cf label. The shape of the tree (tables, bytes, scores,
// filter memory, expected false-positive rate) and the memtable are per
// column family.
//
// The filters: sieve_filter_{checks,negatives,false_positives,
// true_positives}_total{level} count the probes of point lookups;
// sieve_filter_false_positive_ratio{level,policy} is the measured rate
// since the start (FalsePositives / (FalsePositives + Negatives)) and
// sieve_filter_expected_false_positive_ratio{level,policy} the rate the
// level's filters are expected to show from their geometry (over every
// column family, weighted by keys); policy is the filter policy of the
// tables holding most of the level's keys. The _policy_ variants sum the
// levels by that policy. A dashboard compares the two, or the measured
// rate over a window: rate(false_positives) / (rate(false_positives) +
// rate(negatives)).
//
// # Why a module of its own
//
// sieveprom is a nested module (github.com/sievedb/sieve/sieveprom, with
// its own go.mod) rather than a package of the library or of sieve-server:
// the library's go.mod stays free of client_golang and its dependencies
// (a program embedding sieve without Prometheus downloads none of it),
// while a program embedding sieve with Prometheus can import the collector
// without importing the server (a package inside sieve-server's module
// would drag go-redis and the server's other dependencies along).
// sieve-server imports it for its -metrics-addr endpoint.
package sieveprom
