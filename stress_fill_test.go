package sieve

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// stressFill counts, for the stress test, the write-side background work
// of issue 21 that runs concurrently with its writers and readers:
// background fsyncs of unsynced WAL records, and compactions split into
// subcompactions.
type stressFill struct {
	walBackgroundSyncs, splitCompactions int64
}

// stressFillSetup makes the stress test's small WALs reach the background
// fsync's threshold; the returned function restores it.
func stressFillSetup() func() {
	saved := walBytesPerSync
	walBytesPerSync = 4 << 10
	return func() { walBytesPerSync = saved }
}

// add counts a round's metrics (the counters restart at each reopen).
func (f *stressFill) add(m *Metrics) {
	f.walBackgroundSyncs += m.WAL.BackgroundSyncs
	f.splitCompactions += m.Compaction.Split
}

// report checks that the stress test reached the background fsyncs. It
// only reports the split compactions: its compactions keep L0 below twice
// the trigger, or its manual ones are too small to split, in most runs
// (TestBackgroundL0Subcompactions checks that a background compaction out
// of such an L0 splits).
func (f *stressFill) report(t *testing.T) {
	t.Logf("stress: %d background WAL fsyncs, %d compactions split", f.walBackgroundSyncs, f.splitCompactions)
	require.Positive(t, f.walBackgroundSyncs, "no background WAL fsync ran")
}
