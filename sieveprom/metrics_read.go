package sieveprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sievedb/sieve"
)

// readScalars: point lookups, the block cache, index and filter blocks.
var readScalars = []scalar{
	counter("gets_total", "Point lookups (Get) that reached the tables.", func(m *sieve.Metrics) int64 { return m.PointLookups.Gets }),
	counter("tables_probed_total", "Tables point lookups considered (filter probed or searched).", func(m *sieve.Metrics) int64 { return m.PointLookups.TablesProbed }),
	counter("data_blocks_read_total", "Data blocks point lookups accessed.", func(m *sieve.Metrics) int64 { return m.PointLookups.DataBlocksRead }),
	counter("data_block_cache_hits_total", "Data blocks point lookups found in the block cache.", func(m *sieve.Metrics) int64 { return m.PointLookups.BlockCacheHits }),
	counter("data_block_file_reads_total", "Data blocks point lookups read from files.", func(m *sieve.Metrics) int64 { return m.PointLookups.FileReads }),
	counter("data_block_read_bytes_total", "Bytes of data blocks point lookups read from files.", func(m *sieve.Metrics) int64 { return m.PointLookups.BytesRead }),
	counter("multigets_total", "MultiGet calls.", func(m *sieve.Metrics) int64 { return m.PointLookups.MultiGets }),
	counter("multiget_keys_total", "Keys asked for by MultiGet calls.", func(m *sieve.Metrics) int64 { return m.PointLookups.MultiGetKeys }),
	counter("block_cache_hits_total", "Block cache lookups that hit.", func(m *sieve.Metrics) int64 { return m.BlockCache.Hits }),
	counter("block_cache_misses_total", "Block cache lookups that missed.", func(m *sieve.Metrics) int64 { return m.BlockCache.Misses }),
	counter("block_cache_not_admitted_total", "Blocks read on a miss that the cache did not keep (doorkeeper).", func(m *sieve.Metrics) int64 { return m.BlockCache.NotAdmitted }),
	gauge("block_cache_size_bytes", "Bytes of the blocks in the block cache.", func(m *sieve.Metrics) int64 { return m.BlockCache.Size }),
	gauge("block_cache_blocks", "Blocks in the block cache.", func(m *sieve.Metrics) int64 { return m.BlockCache.Count }),
	gauge("block_cache_capacity_bytes", "The block cache's budget.", func(m *sieve.Metrics) int64 { return m.BlockCache.Capacity }),
	gauge("block_cache_reserved_bytes", "Part of the block cache's budget reserved by pinned index and filter blocks.", func(m *sieve.Metrics) int64 { return m.BlockCache.Reserved }),
	gauge("index_resident_bytes", "Index blocks held by open tables outside the block cache.", func(m *sieve.Metrics) int64 { return m.IndexFilter.ResidentIndexBytes }),
	gauge("filter_resident_bytes", "Filter blocks held by open tables outside the block cache.", func(m *sieve.Metrics) int64 { return m.IndexFilter.ResidentFilterBytes }),
	gauge("index_pinned_bytes", "Index blocks pinned in the block cache's budget.", func(m *sieve.Metrics) int64 { return m.IndexFilter.PinnedIndexBytes }),
	gauge("filter_pinned_bytes", "Filter blocks pinned in the block cache's budget.", func(m *sieve.Metrics) int64 { return m.IndexFilter.PinnedFilterBytes }),
	gauge("index_cached_bytes", "Index blocks in the block cache (unpinned).", func(m *sieve.Metrics) int64 { return m.IndexFilter.CachedIndexBytes }),
	gauge("filter_cached_bytes", "Filter blocks in the block cache (unpinned).", func(m *sieve.Metrics) int64 { return m.IndexFilter.CachedFilterBytes }),
	counter("index_block_hits_total", "Charged index blocks point lookups found in the block cache.", func(m *sieve.Metrics) int64 { return m.IndexFilter.IndexHits }),
	counter("index_block_misses_total", "Charged index blocks point lookups read from files.", func(m *sieve.Metrics) int64 { return m.IndexFilter.IndexMisses }),
	counter("filter_block_hits_total", "Charged filter blocks point lookups found in the block cache.", func(m *sieve.Metrics) int64 { return m.IndexFilter.FilterHits }),
	counter("filter_block_misses_total", "Charged filter blocks point lookups read from files.", func(m *sieve.Metrics) int64 { return m.IndexFilter.FilterMisses }),
	counter("filter_fail_open_total", "Probes that read the data because the filter block could not be read.", func(m *sieve.Metrics) int64 { return m.IndexFilter.FilterFailOpen }),
	counter("filter_unknown_type_tables_total", "Tables opened whose filter type this build does not know.", func(m *sieve.Metrics) int64 { return m.Filter.UnknownType }),
	counter("filter_build_retries_total", "Filter constructions retried with another seed.", func(m *sieve.Metrics) int64 { return m.Filter.BuildRetries }),
	counter("filter_build_fallbacks_total", "Filter constructions that fell back to a blocked Bloom filter.", func(m *sieve.Metrics) int64 { return m.Filter.BuildFallbacks }),
	counter("prefix_seeks_total", "Iterator.SeekPrefixGE calls.", func(m *sieve.Metrics) int64 { return m.PrefixSeeks.Seeks }),
	counter("prefix_filter_checks_total", "Prefix filter probes of SeekPrefixGE.", func(m *sieve.Metrics) int64 { return m.PrefixSeeks.Checks }),
	counter("prefix_filter_negatives_total", "Prefix filter probes that ruled a table out.", func(m *sieve.Metrics) int64 { return m.PrefixSeeks.Negatives }),
}

// otherScalars: range deletes, ingestion, checkpoints, column families.
var otherScalars = []scalar{
	counter("range_deletions_total", "Range deletions written.", func(m *sieve.Metrics) int64 { return m.RangeDel.Written }),
	counter("range_deletion_dropped_keys_total", "Entries compactions dropped because a range deletion covered them.", func(m *sieve.Metrics) int64 { return m.RangeDel.KeysDropped }),
	counter("ingests_total", "DB.Ingest calls.", func(m *sieve.Metrics) int64 { return m.Ingest.Count }),
	counter("ingested_tables_total", "Tables added by Ingest.", func(m *sieve.Metrics) int64 { return m.Ingest.Tables }),
	counter("ingested_bytes_total", "Bytes of the tables added by Ingest.", func(m *sieve.Metrics) int64 { return m.Ingest.Bytes }),
	counter("checkpoints_total", "Checkpoints written.", func(m *sieve.Metrics) int64 { return m.Checkpoints.Count }),
	counter("column_family_drops_total", "Column families dropped.", func(m *sieve.Metrics) int64 { return m.ColumnFamilyDrops }),
	counter("iterator_refreshes_total", "Seeks that moved a long-lived iterator onto the current state.", func(m *sieve.Metrics) int64 { return m.IteratorRefreshes }),
}

// levelCounter is a database-wide counter of one level.
type levelCounter struct {
	desc *prometheus.Desc
	val  func(*sieve.LevelMetrics) int64
}

var levelCounters = []levelCounter{
	{desc("level_written_bytes_total", "Bytes flushes or compactions wrote into the level.", "level"), func(l *sieve.LevelMetrics) int64 { return l.BytesIn }},
	{desc("level_compaction_read_bytes_total", "Bytes read by compactions into the level.", "level"), func(l *sieve.LevelMetrics) int64 { return l.BytesRead }},
	{desc("level_compaction_written_bytes_total", "Bytes written by compactions into the level.", "level"), func(l *sieve.LevelMetrics) int64 { return l.BytesWritten }},
	{desc("filter_checks_total", "Table filters probed by point lookups.", "level"), func(l *sieve.LevelMetrics) int64 { return l.Filter.Checks }},
	{desc("filter_negatives_total", "Filter probes that ruled a table out (data-block reads saved).", "level"), func(l *sieve.LevelMetrics) int64 { return l.Filter.Negatives }},
	{desc("filter_false_positives_total", "Filter probes that passed for a key the table did not hold.", "level"), func(l *sieve.LevelMetrics) int64 { return l.Filter.FalsePositives }},
	{desc("filter_true_positives_total", "Filter probes that passed for a key the table held.", "level"), func(l *sieve.LevelMetrics) int64 { return l.Filter.TruePositives }},
}

// familyLevelGauge is a gauge of one level of one column family.
type familyLevelGauge struct {
	desc *prometheus.Desc
	val  func(*sieve.LevelMetrics) float64
}

var familyLevelGauges = []familyLevelGauge{
	{desc("level_tables", "Tables in the level.", "cf", "level"), func(l *sieve.LevelMetrics) float64 { return float64(l.NumFiles) }},
	{desc("level_size_bytes", "Bytes of the level's tables.", "cf", "level"), func(l *sieve.LevelMetrics) float64 { return float64(l.Size) }},
	{desc("level_score", "The level's compaction score (size / target; L0: tables / trigger).", "cf", "level"), func(l *sieve.LevelMetrics) float64 { return l.Score }},
	{desc("level_filter_bytes", "Filter memory of the level's open tables.", "cf", "level"), func(l *sieve.LevelMetrics) float64 { return float64(l.FilterBytes) }},
	{desc("level_filter_bytes_per_key", "Filter bytes per key of the level's open tables (bits per key / 8).", "cf", "level"), func(l *sieve.LevelMetrics) float64 { return l.FilterBitsPerKey / 8 }},
}

var (
	familyExpectedFPRDesc = desc("level_filter_expected_false_positive_ratio", "False-positive rate the level's open filters of the column family are expected to show, from their geometry.", "cf", "level", "policy")
	memtableSizeDesc      = desc("memtable_size_bytes", "Bytes in the column family's mutable memtable.", "cf")
	readAmpDesc           = desc("read_amplification", "Tables a point lookup may have to probe now (every L0 table, one per deeper level).", "cf")
	measuredFPRDesc       = desc("filter_false_positive_ratio", "Measured false-positive rate of the level's filters since the start: false positives / (false positives + negatives).", "level", "policy")
	expectedFPRDesc       = desc("filter_expected_false_positive_ratio", "False-positive rate the level's open filters are expected to show, weighted by keys over the column families.", "level", "policy")
	policyMeasuredFPRDesc = desc("filter_policy_false_positive_ratio", "Measured false-positive rate of the levels whose main filter policy is policy.", "policy")
	policyExpectedFPRDesc = desc("filter_policy_expected_false_positive_ratio", "Expected false-positive rate of the levels whose main filter policy is policy.", "policy")
	backgroundErrorDesc   = desc("background_error", "1 when a background error (WAL, flush, compaction or MANIFEST write) has made the database read-only, else 0.")
	otherDescs            = []*prometheus.Desc{familyExpectedFPRDesc, memtableSizeDesc, readAmpDesc, measuredFPRDesc,
		expectedFPRDesc, policyMeasuredFPRDesc, policyExpectedFPRDesc, backgroundErrorDesc}
)
