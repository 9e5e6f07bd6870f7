package sieve

import (
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"
)

// groupSizeBuckets is how many power-of-two buckets CommitMetrics has for
// group sizes: 1, 2–3, 4–7, 8–15, 16–31, 32 and more.
const groupSizeBuckets = 6

// commitCounters count the commit pipeline's groups (commit.go).
type commitCounters struct {
	batches, syncBatches, maxGroup         atomic.Int64
	syncNanos                              atomic.Int64
	gatherWaits, gatherTimeouts, syncWaits atomic.Int64
	sizes                                  [groupSizeBuckets]atomic.Int64
}

// CommitMetrics describes group commit: how many commit groups (one WAL
// record each) carried how many batches, how many batches asked for Sync,
// and how many WAL fsyncs their durability took.
type CommitMetrics struct {
	// Groups counts commit groups written, Batches the batches in them
	// (Put, Delete, Merge and Apply calls), SyncBatches those with Sync.
	Groups, Batches, SyncBatches int64
	// MaxGroup is the most batches one group carried; GroupSizes counts
	// groups of 1, 2–3, 4–7, 8–15, 16–31 and 32 or more batches.
	MaxGroup   int64
	GroupSizes [groupSizeBuckets]int64
	// Syncs is WAL.Syncs: the WAL fsyncs of commits (not of WAL closes),
	// and SyncTime the time spent in them.
	Syncs    int64
	SyncTime time.Duration
	// GatherWaits counts Sync groups whose leader waited for the writers
	// the previous fsync released, GatherTimeouts the waits that ended
	// before all of them came back.
	GatherWaits, GatherTimeouts int64
	// SyncWaits counts Sync groups, already written, that found another
	// group's fsync running and waited for it (or ran the next one).
	SyncWaits int64
}

// noteGroup counts a group written to the WAL as a record of n bytes.
//
// Only the write stage's leader calls it, one at a time, so each counter
// is a load and a store (atomic, for Metrics readers) instead of a locked
// read-modify-write.
func (m *dbMetrics) noteGroup(w *writer, n int) {
	bump := func(c *atomic.Int64, d int64) { c.Store(c.Load() + d) }
	bump(&m.walBytes, int64(n))
	bump(&m.walRecords, 1)
	c := &m.commit
	size := int64(len(w.group))
	bump(&c.batches, size)
	if s := w.syncWriters(); s > 0 {
		bump(&c.syncBatches, int64(s))
	}
	if size > c.maxGroup.Load() {
		c.maxGroup.Store(size)
	}
	bump(&c.sizes[min(bits.Len64(uint64(size))-1, groupSizeBuckets-1)], 1)
}

func (m *dbMetrics) commitTotals() CommitMetrics {
	c := &m.commit
	out := CommitMetrics{
		Batches: c.batches.Load(), SyncBatches: c.syncBatches.Load(),
		MaxGroup: c.maxGroup.Load(), Syncs: m.walSyncs.Load(), SyncTime: time.Duration(c.syncNanos.Load()),
		GatherWaits: c.gatherWaits.Load(), GatherTimeouts: c.gatherTimeouts.Load(), SyncWaits: c.syncWaits.Load(),
	}
	for i := range c.sizes {
		out.GroupSizes[i] = c.sizes[i].Load()
		out.Groups += out.GroupSizes[i] // every group is in one bucket
	}
	return out
}

// String is the commit line of Metrics.String.
func (m CommitMetrics) String() string {
	per := func(a, b int64) float64 { return float64(a) / float64(max(b, 1)) }
	var sizes strings.Builder
	for i, n := range m.GroupSizes {
		if i > 0 {
			sizes.WriteByte(' ')
		}
		fmt.Fprintf(&sizes, "%d", n)
	}
	return fmt.Sprintf("commit: %d groups, %d batches (%.2f per group, max %d; groups of 1/2+/4+/8+/16+/32+: %s), %d Sync batches, %d WAL fsyncs (%.3f per Sync batch, %s each); %d gather waits, %d timed out; %d waits for an fsync in flight",
		m.Groups, m.Batches, per(m.Batches, m.Groups), m.MaxGroup, sizes.String(), m.SyncBatches, m.Syncs, per(m.Syncs, m.SyncBatches),
		(m.SyncTime / time.Duration(max(m.Syncs, 1))).Round(time.Microsecond), m.GatherWaits, m.GatherTimeouts, m.SyncWaits)
}
