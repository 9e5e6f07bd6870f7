package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/filter"
)

// lookupStats is the read amplification of a point-lookup benchmark: the
// difference of the engine's counters across it. The engine counts per
// table, so for readmissing every filter check is either a negative (a
// table ruled out, its data block never read) or a false positive.
type lookupStats struct {
	Gets                 int64   `json:"gets_reaching_tables"`
	TablesProbed         int64   `json:"tables_probed"`
	TablesPerGet         float64 `json:"tables_per_get"`
	FilterChecks         int64   `json:"filter_checks"`
	FilterNegatives      int64   `json:"filter_negatives"`
	FilterFalsePositives int64   `json:"filter_false_positives"`
	FilterTruePositives  int64   `json:"filter_true_positives"`
	// MeasuredFPR is FalsePositives / (FalsePositives + Negatives), with
	// a 95% Wilson interval; 0 with no such probes.
	MeasuredFPR     float64 `json:"measured_fpr"`
	MeasuredFPRLow  float64 `json:"measured_fpr_ci95_low"`
	MeasuredFPRHigh float64 `json:"measured_fpr_ci95_high"`
	// ExpectedFPR is the policy's theoretical rate (filter.ExpectedFPR)
	// for a table of ExpectedAtKeys keys: the keys loaded over the tables
	// in the LSM.
	Policy         string  `json:"policy"`
	ExpectedFPR    float64 `json:"expected_fpr"`
	ExpectedAtKeys int64   `json:"expected_fpr_at_keys_per_table"`
	DataBlocksRead int64   `json:"data_blocks_read"`
	BlocksPerGet   float64 `json:"data_blocks_per_get"`
	BlockCacheHits int64   `json:"block_cache_hits"`
	FileReads      int64   `json:"file_reads"`
	BytesRead      int64   `json:"bytes_read"`
	CacheHitRate   float64 `json:"block_cache_hit_rate"`
}

// lookupDelta computes the lookup statistics of ops Gets from the metrics
// before and after them, on a database of num keys under policy p.
func lookupDelta(before, after *sieve.Metrics, p filter.Policy, num int, ops int64) *lookupStats {
	pa, pb := after.PointLookups, before.PointLookups
	fa, fb := after.Filter, before.Filter
	l := &lookupStats{
		Gets:                 pa.Gets - pb.Gets,
		TablesProbed:         pa.TablesProbed - pb.TablesProbed,
		FilterChecks:         fa.Checks - fb.Checks,
		FilterNegatives:      fa.Negatives - fb.Negatives,
		FilterFalsePositives: fa.FalsePositives - fb.FalsePositives,
		FilterTruePositives:  fa.TruePositives - fb.TruePositives,
		DataBlocksRead:       pa.DataBlocksRead - pb.DataBlocksRead,
		BlockCacheHits:       pa.BlockCacheHits - pb.BlockCacheHits,
		FileReads:            pa.FileReads - pb.FileReads,
		BytesRead:            pa.BytesRead - pb.BytesRead,
		Policy:               p.Name(),
	}
	if ops > 0 {
		l.TablesPerGet = float64(l.TablesProbed) / float64(ops)
		l.BlocksPerGet = float64(l.DataBlocksRead) / float64(ops)
	}
	if l.DataBlocksRead > 0 {
		l.CacheHitRate = float64(l.BlockCacheHits) / float64(l.DataBlocksRead)
	}
	absent := l.FilterFalsePositives + l.FilterNegatives
	l.MeasuredFPR, l.MeasuredFPRLow, l.MeasuredFPRHigh = wilson(l.FilterFalsePositives, absent)
	files := int64(0)
	for _, lv := range after.Levels {
		files += lv.NumFiles
	}
	if files > 0 {
		l.ExpectedAtKeys = max(1, int64(num)/files)
		if e, ok := filter.ExpectedFPR(p, int(l.ExpectedAtKeys)); ok && !math.IsNaN(e) {
			l.ExpectedFPR = e
		}
	}
	return l
}

// lsmShape is the LSM's shape and cumulative I/O at the end of a run.
type lsmShape struct {
	Levels              []levelShape `json:"levels"`
	Files               int64        `json:"files"`
	Bytes               int64        `json:"bytes"`
	ReadAmp             int64        `json:"read_amp"`
	WriteAmp            float64      `json:"write_amp"`
	WALBytes            int64        `json:"wal_bytes"`
	FlushBytes          int64        `json:"flush_bytes"`
	Flushes             int64        `json:"flushes"`
	Compactions         int64        `json:"compactions"`
	CompactionMoves     int64        `json:"compaction_moves"`
	CompactionRead      int64        `json:"compaction_bytes_read"`
	CompactionWritten   int64        `json:"compaction_bytes_written"`
	MemTableBytes       int64        `json:"memtable_bytes"`
	FilterResidentBytes int64        `json:"filter_resident_bytes"`
	IndexResidentBytes  int64        `json:"index_resident_bytes"`
	Stalls              int64        `json:"stalls"`
	StallSeconds        float64      `json:"stall_seconds"`
}

type levelShape struct {
	Level int     `json:"level"`
	Files int64   `json:"files"`
	Bytes int64   `json:"bytes"`
	Score float64 `json:"score"`
}

func shapeOf(m *sieve.Metrics) *lsmShape {
	s := &lsmShape{
		ReadAmp: m.ReadAmp, WriteAmp: m.WriteAmp,
		WALBytes: m.WAL.Bytes, FlushBytes: m.Flush.Bytes, Flushes: m.Flush.Count,
		Compactions: m.Compaction.Count, CompactionMoves: m.Compaction.Moves,
		CompactionRead: m.Compaction.BytesRead, CompactionWritten: m.Compaction.BytesWritten,
		MemTableBytes:       m.MemTable.Size,
		FilterResidentBytes: m.Filter.ResidentBytes, IndexResidentBytes: m.IndexResidentBytes,
		Stalls: m.Stall.Count, StallSeconds: m.Stall.Duration.Seconds(),
		Levels: []levelShape{},
	}
	for i, l := range m.Levels {
		s.Files += l.NumFiles
		s.Bytes += l.Size
		if l.NumFiles > 0 {
			s.Levels = append(s.Levels, levelShape{Level: i, Files: l.NumFiles, Bytes: l.Size, Score: finite(l.Score)})
		}
	}
	s.WriteAmp = finite(s.WriteAmp)
	return s
}

// brief is a one-line shape: "L0 5×24.1MiB, L6 1×3.2MiB" or "empty".
func (s *lsmShape) brief() string {
	if len(s.Levels) == 0 {
		return "empty"
	}
	var parts []string
	for _, l := range s.Levels {
		parts = append(parts, fmt.Sprintf("L%d %d files %s", l.Level, l.Files, humanBytes(l.Bytes)))
	}
	return strings.Join(parts, ", ")
}
