package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestL0SlowdownTrigger checks that writes are delayed from
// L0SlowdownWritesTrigger L0 tables on, and not below it: the commit
// leader's lock-free fast path (roomWithoutLock) must not skip the
// slowdown. Compactions never start (L0CompactionTrigger is out of reach),
// so L0 holds exactly one table per Flush.
func TestL0SlowdownTrigger(t *testing.T) {
	for _, tc := range []struct {
		slowdown, flushes int
		slowed            bool
	}{{3, 2, false}, {3, 3, true}, {3, 4, true}} {
		t.Run(fmt.Sprintf("slowdown=%d/L0=%d", tc.slowdown, tc.flushes), func(t *testing.T) {
			db, _ := openMem(t, &Options{L0CompactionTrigger: 100, L0SlowdownWritesTrigger: tc.slowdown, L0StopWritesTrigger: 200})
			for i := 0; i < tc.flushes; i++ {
				require.NoError(t, db.Put(fmt.Appendf(nil, "k%d", i), []byte("v"), NoSync))
				require.NoError(t, db.Flush())
			}
			require.Equal(t, tc.flushes, db.maxL0Files())
			before := db.Metrics().Stall.Slowdowns
			const puts = 5
			for i := 0; i < puts; i++ {
				require.NoError(t, db.Put([]byte("x"), []byte("v"), NoSync))
			}
			got := db.Metrics().Stall.Slowdowns - before
			if tc.slowed {
				require.Equal(t, int64(puts), got, "every write group is delayed once")
			} else {
				require.Zero(t, got)
			}
		})
	}
}

// TestL0SlowdownDefault checks the default slowdown trigger: 4 below the
// stop trigger, at most 20, at least one above the compaction trigger, at
// most the stop trigger.
func TestL0SlowdownDefault(t *testing.T) {
	for _, tc := range []struct{ trigger, stop, want int }{
		{0, 0, 20}, {0, 12, 8}, {0, 24, 20}, {0, 6, 5}, {0, 4, 4}, {100, 200, 101},
	} {
		o, err := (&Options{L0CompactionTrigger: tc.trigger, L0StopWritesTrigger: tc.stop}).withDefaults()
		require.NoError(t, err)
		require.Equal(t, tc.want, o.L0SlowdownWritesTrigger, "trigger %d, stop %d", tc.trigger, tc.stop)
	}
}

// TestBackgroundL0Subcompactions checks that a background compaction out
// of an L0 holding twice L0CompactionTrigger tables runs as
// subcompactions, and one out of a smaller L0 does not: the database is
// loaded with compactions out of reach and reopened with a trigger that
// makes the L0 it finds twice the trigger (or not), so that the one
// compaction Open starts sees exactly that L0.
func TestBackgroundL0Subcompactions(t *testing.T) {
	for _, tc := range []struct {
		trigger int
		split   int64
	}{{1, 1}, {2, 0}} {
		t.Run(fmt.Sprintf("trigger=%d", tc.trigger), func(t *testing.T) {
			mem := vfs.NewMem()
			db, err := Open("/db", subcompactionOpts(mem))
			require.NoError(t, err)
			want := loadForSubcompaction(t, db) // 3 flushes: L0 holds 3 tables
			require.Equal(t, 3, db.maxL0Files())
			require.NoError(t, db.Close())

			o := subcompactionOpts(mem)
			o.L0CompactionTrigger = tc.trigger
			db, err = Open("/db", o)
			require.NoError(t, err)
			waitCompactionsIdle(db)
			m := db.Metrics()
			require.NotZero(t, m.Compaction.Count, "Open started a compaction out of L0:\n%s", m)
			require.Equal(t, tc.split, m.Compaction.Split, "compactions run as subcompactions:\n%s", m)
			require.NoError(t, db.CheckInvariants(true))
			requireContents(t, db, want)
			require.NoError(t, db.Close())
		})
	}
}
