package sieveprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sievedb/sieve"
)

const namespace = "sieve"

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
}

// scalar is a database-wide metric read from Metrics.
type scalar struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(*sieve.Metrics) float64
}

func counter(name, help string, f func(*sieve.Metrics) int64) scalar {
	return scalar{desc(name, help), prometheus.CounterValue, func(m *sieve.Metrics) float64 { return float64(f(m)) }}
}

func gauge(name, help string, f func(*sieve.Metrics) int64) scalar {
	return scalar{desc(name, help), prometheus.GaugeValue, func(m *sieve.Metrics) float64 { return float64(f(m)) }}
}

func gaugeF(name, help string, f func(*sieve.Metrics) float64) scalar {
	return scalar{desc(name, help), prometheus.GaugeValue, f}
}

func counterF(name, help string, f func(*sieve.Metrics) float64) scalar {
	return scalar{desc(name, help), prometheus.CounterValue, f}
}

// scalars are the database-wide metrics.
var scalars = concat(writeScalars, readScalars, otherScalars)

func concat(lists ...[]scalar) []scalar {
	var out []scalar
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// writeScalars: WAL, commits, memtables, flushes, compactions, stalls.
var writeScalars = []scalar{
	counter("wal_written_bytes_total", "Bytes written to the write-ahead logs.", func(m *sieve.Metrics) int64 { return m.WAL.Bytes }),
	counter("wal_records_total", "Records written to the write-ahead logs.", func(m *sieve.Metrics) int64 { return m.WAL.Records }),
	counter("wal_syncs_total", "fsyncs of the write-ahead logs for Sync writes.", func(m *sieve.Metrics) int64 { return m.WAL.Syncs }),
	counter("wal_background_syncs_total", "fsyncs of unsynced WAL records started in the background (every 1 MiB).", func(m *sieve.Metrics) int64 { return m.WAL.BackgroundSyncs }),
	counter("commit_groups_total", "Commit groups (writers whose batches were written to the WAL together).", func(m *sieve.Metrics) int64 { return m.Commit.Groups }),
	counter("commit_batches_total", "Batches committed.", func(m *sieve.Metrics) int64 { return m.Commit.Batches }),
	counter("commit_sync_batches_total", "Batches committed with Sync.", func(m *sieve.Metrics) int64 { return m.Commit.SyncBatches }),
	counter("commit_syncs_total", "WAL fsyncs made by the commit pipeline.", func(m *sieve.Metrics) int64 { return m.Commit.Syncs }),
	counterF("commit_sync_seconds_total", "Time spent in the commit pipeline's WAL fsyncs.", func(m *sieve.Metrics) float64 { return m.Commit.SyncTime.Seconds() }),
	gauge("memtables_immutable", "Full memtables waiting for a flush (every column family).", func(m *sieve.Metrics) int64 { return m.MemTable.Immutable }),
	counter("memtable_merges_collapsed_total", "Merge operands replaced by their resolved value at MaxSuccessiveMerges.", func(m *sieve.Metrics) int64 { return m.MemTable.MergesCollapsed }),
	counter("flushes_total", "Memtable flushes.", func(m *sieve.Metrics) int64 { return m.Flush.Count }),
	counter("flush_written_bytes_total", "Table bytes written by flushes.", func(m *sieve.Metrics) int64 { return m.Flush.Bytes }),
	counter("flushes_seek_triggered_total", "Memtable rotations asked for by iterator seeks.", func(m *sieve.Metrics) int64 { return m.Flush.SeekTriggered }),
	counter("compactions_total", "Compactions that rewrote tables.", func(m *sieve.Metrics) int64 { return m.Compaction.Count }),
	counter("compaction_moves_total", "Tables moved to another level without being rewritten.", func(m *sieve.Metrics) int64 { return m.Compaction.Moves }),
	counter("compaction_read_bytes_total", "Bytes read by compactions.", func(m *sieve.Metrics) int64 { return m.Compaction.BytesRead }),
	counter("compaction_written_bytes_total", "Bytes written by compactions.", func(m *sieve.Metrics) int64 { return m.Compaction.BytesWritten }),
	counter("compactions_split_total", "Compactions run as subcompactions.", func(m *sieve.Metrics) int64 { return m.Compaction.Split }),
	counter("compactions_seek_triggered_total", "L0 compactions asked for by iterator seeks.", func(m *sieve.Metrics) int64 { return m.Compaction.SeekTriggered }),
	counter("compaction_merge_errors_total", "Keys whose merge operands compaction copied through because the merger failed.", func(m *sieve.Metrics) int64 { return m.Compaction.MergeErrors }),
	counter("compaction_expired_values_total", "Values removed by flushes and compactions because their deadline had come.", func(m *sieve.Metrics) int64 { return m.Compaction.Expired }),
	counter("compaction_filtered_values_total", "Values removed by a CompactionFilter.", func(m *sieve.Metrics) int64 { return m.Compaction.Filtered }),
	gauge("compactions_running", "Compactions in progress.", func(m *sieve.Metrics) int64 { return m.Compaction.Running }),
	gaugeF("write_amplification_ratio", "(flush + compaction bytes written) / WAL bytes since the start.", func(m *sieve.Metrics) float64 { return m.WriteAmp }),
	counter("write_stalls_total", "Writes that waited for a flush or compaction.", func(m *sieve.Metrics) int64 { return m.Stall.Count }),
	counterF("write_stall_seconds_total", "Time writes spent stalled.", func(m *sieve.Metrics) float64 { return m.Stall.Duration.Seconds() }),
	counter("write_slowdowns_total", "Writes slowed down by 1 ms because L0 held L0SlowdownWritesTrigger tables.", func(m *sieve.Metrics) int64 { return m.Stall.Slowdowns }),
}
