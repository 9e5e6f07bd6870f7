package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/stretchr/testify/require"
)

// TestFilterAccounting loads 200,000 keys, flushes them into tables, and
// looks up 100,000 absent keys: every table probed is a filter check, each
// check is a negative or a false positive, the measured false-positive
// rate stays within the policy's bound, and a negative reads no data block.
func TestFilterAccounting(t *testing.T) {
	cases := []struct {
		name   string
		policy filter.Policy
		maxFPR float64
	}{
		{"bloom10", filter.Bloom(10), 0.012},
		{"cuckoo12", filter.Cuckoo(12), 0.003},
		{"standardbloom10", filter.StandardBloom(10), 0.012},
	}
	const present, absent = 200000, 100000
	if testing.Short() {
		t.Skip("loads 200,000 keys per policy")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// No seek-triggered compaction: the absent keys' Gets charge
			// the L0 tables seeks, and one that merged them mid-test left
			// the lookups probing one table instead of several.
			db, _ := openMem(t, &Options{FilterPolicy: c.policy, MemTableSize: 4 << 20, L0CompactionTrigger: 1000, L0StopWritesTrigger: 1000,
				DisableSeekCompactions: true})
			val := make([]byte, 100)
			// A scattered load order makes the L0 tables overlap, so that
			// each lookup probes several filters.
			for i := 0; i < present; i++ {
				j := (i * 7919) % present
				require.NoError(t, db.Put([]byte(fmt.Sprintf("key%013d", 2*j)), val, nil))
			}
			require.NoError(t, db.Flush())
			before := db.Metrics()
			require.Greater(t, before.Levels[0].NumFiles, int64(1), "several tables, so that lookups probe several filters")
			for i := 0; i < absent; i++ {
				_, err := db.Get([]byte(fmt.Sprintf("key%013d", 2*i+1)))
				require.ErrorIs(t, err, ErrNotFound)
			}
			after := db.Metrics()
			require.Equal(t, before.Levels[0].NumFiles, after.Levels[0].NumFiles, "the lookups probed the same tables throughout")
			checks := after.Filter.Checks - before.Filter.Checks
			neg := after.Filter.Negatives - before.Filter.Negatives
			fp := after.Filter.FalsePositives - before.Filter.FalsePositives
			tp := after.Filter.TruePositives - before.Filter.TruePositives
			blocks := after.PointLookups.DataBlocksRead - before.PointLookups.DataBlocksRead
			require.GreaterOrEqual(t, checks, int64(absent))
			require.Equal(t, checks, neg+fp, "every check of an absent key is a negative or a false positive")
			require.Zero(t, tp)
			fpr := float64(fp) / float64(checks)
			t.Logf("%s: %d tables, %d checks, %d negatives, %d false positives (%.3f%%), %d data blocks read",
				c.name, after.Levels[0].NumFiles, checks, neg, fp, 100*fpr, blocks)
			require.LessOrEqual(t, fpr, c.maxFPR)
			// Only false positives read data blocks: at most one block each.
			require.LessOrEqual(t, blocks, fp)
		})
	}
}
