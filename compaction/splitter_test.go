package compaction

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestSplitterRandom feeds random output streams (user keys with up to 8
// versions each) through a Splitter and checks that tables are never cut
// between versions of one user key, that a table is cut as soon as a new
// user key starts once it has reached the target size, and that a cut
// happens only for size or grandparent overlap.
func TestSplitterRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	for trial := 0; trial < 500; trial++ {
		var es []entry
		seq := uint64(1 << 20)
		for k := 0; k < 1+rng.Intn(100); k++ {
			for v := 0; v < 1+rng.Intn(8); v++ {
				seq--
				val := make([]byte, rng.Intn(60))
				es = append(es, entry{key: base.MakeInternalKey(rkey(k*10), seq, base.KindSet), value: val})
			}
		}
		var gps []*manifest.FileMetadata
		for g := 0; g < rng.Intn(30); g++ {
			lo := g*35 + rng.Intn(10)
			gps = append(gps, fileMeta(uint64(g+1), rkey(lo), rkey(lo+rng.Intn(20)), 1, 1, uint64(rng.Intn(200))))
		}
		target := int64(rng.Intn(600))
		maxOverlap := int64(rng.Intn(400))
		sp := NewSplitter(SplitterOptions{TargetFileSize: target, MaxGrandparentOverlapBytes: maxOverlap, Grandparents: gps})

		var tables [][]entry
		var cur []entry
		var size uint64
		for i, e := range es {
			if sp.ShouldSplitBefore(e.key, size) {
				require.NotEmpty(t, cur, "split before the first entry")
				require.False(t, bytes.Equal(es[i-1].key.UserKey, e.key.UserKey),
					"trial %d: split between two versions of %s", trial, e.key.UserKey)
				tables = append(tables, cur)
				cur, size = nil, 0
			} else if i > 0 && target > 0 && size >= uint64(target) && !bytes.Equal(es[i-1].key.UserKey, e.key.UserKey) {
				t.Fatalf("trial %d: table of %d bytes (target %d) not cut before %s", trial, size, target, e.key.UserKey)
			}
			cur = append(cur, e)
			size += uint64(e.key.Size() + len(e.value))
		}
		tables = append(tables, cur)
		for i := 1; i < len(tables); i++ {
			prev := tables[i-1]
			require.Negative(t, bytes.Compare(prev[len(prev)-1].key.UserKey, tables[i][0].key.UserKey),
				"trial %d: tables %d and %d share a user key", trial, i-1, i)
		}
	}
}

// TestSplitterNoLimits: without a target size or grandparents nothing is
// ever cut.
func TestSplitterNoLimits(t *testing.T) {
	sp := NewSplitter(SplitterOptions{})
	for i := 0; i < 1000; i++ {
		require.False(t, sp.ShouldSplitBefore(base.MakeInternalKey(rkey(i), 1, base.KindSet), uint64(i)<<20))
	}
}
