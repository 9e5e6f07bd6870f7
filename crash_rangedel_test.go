package sieve

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

// crashRangeDel is a DeleteRange entry of family cf from key start
// ("key%03d") over up to 20 keys.
func crashRangeDel(rng *rand.Rand, cf int, start string) relEntry {
	var n int
	fmt.Sscanf(start, "key%d", &n)
	return relEntry{cf: cf, kind: base.KindRangeDelete, key: start, value: fmt.Sprintf("key%03d", n+1+rng.Intn(20))}
}

// applyRangeDel applies one DeleteRange entry alone.
func applyRangeDel(db *DB, cf *ColumnFamily, e relEntry, wo *WriteOptions) error {
	if e.cf == 1 {
		return cf.DeleteRange([]byte(e.key), []byte(e.value), wo)
	}
	return db.DeleteRange([]byte(e.key), []byte(e.value), wo)
}

// addRangeDel adds a DeleteRange entry to a batch.
func addRangeDel(b *Batch, cf *ColumnFamily, e relEntry) {
	if e.cf == 1 {
		b.DeleteRangeCF(cf, []byte(e.key), []byte(e.value))
		return
	}
	b.DeleteRange([]byte(e.key), []byte(e.value))
}

// rangeHash is the part of s's hash that the keys a DeleteRange entry
// covers contribute (the entry's start key excluded: applyHashed counts
// that one as for any entry).
func (s relState) rangeHash(e relEntry) uint64 {
	var h uint64
	for k, v := range s[e.cf] {
		if e.key < k && k < e.value {
			h += entryHash(e.cf, k, v)
		}
	}
	return h
}

// requireRangeDels checks that TestCrashRecovery's DeleteRanges ran and
// reached flushed tables (a flush or compaction dropped what they cover).
func requireRangeDels(t *testing.T, w *crashWorkload, m *Metrics) {
	t.Logf("range deletions: %d in the workload, %d written; flushes and compactions dropped %d covered entries and %d tombstones",
		w.rangeDels, m.RangeDel.Written, m.RangeDel.KeysDropped, m.RangeDel.TombstonesDropped)
	require.Positive(t, w.rangeDels)
	require.Positive(t, m.RangeDel.Written)
	require.Positive(t, m.RangeDel.KeysDropped, "no range tombstone reached a flush or compaction")
}
