package sieve

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// ingestModelStats counts what the model's Ingests reached.
type ingestModelStats struct {
	ingests, inputs, keys, refused int
	intoL0, deeper                 int // tables the Ingests placed in L0 and below
	copied                         int // Ingests by the copy path
}

func (s *ingestModelStats) requireReached(t *testing.T) {
	t.Logf("ingests: %d (%d inputs, %d keys; %d tables into L0, %d deeper; %d by copy), %d refused", s.ingests, s.inputs, s.keys, s.intoL0, s.deeper, s.copied, s.refused)
	require.Positive(t, s.copied, "no Ingest took the copy path")
	require.Positive(t, s.intoL0, "no ingested table went to L0")
	require.Positive(t, s.deeper, "no ingested table went below L0")
	require.Positive(t, s.ingests, "no Ingest ran")
	require.Greater(t, s.inputs, s.ingests, "no Ingest of several tables")
	require.Positive(t, s.refused, "no bad Ingest was refused")
}

// ingest writes one to three external tables of random model keys
// (disjoint ranges, sometimes overlapping ones, which must be refused)
// and ingests them, applying them to the model when accepted.
func (r *modelRun) ingest(i int) {
	t, rng := r.t, r.rng
	n := 1 + rng.Intn(3)
	// A bad Ingest one time in five of those of several tables, and the
	// first of several tables after four Ingests if none was bad yet (a
	// short run has ~20 Ingests: by chance alone none is bad 1 run in 25).
	st := &r.ingestStats
	bad := n > 1 && (rng.Intn(5) == 0 || st.refused == 0 && st.ingests >= 4)
	fresh := !bad && rng.Intn(3) == 0
	keys := map[string]bool{}
	for len(keys) < n*(1+rng.Intn(20)) {
		if fresh {
			// Keys nothing else has, with no snapshot open: the copy
			// path (sequence number 0).
			keys[fmt.Sprintf("x%06d-%02d", i, rng.Intn(100))] = true
		} else {
			keys[r.key()] = true
		}
	}
	if fresh {
		r.closeSnaps()
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	require.NoError(t, r.opts.FS.MkdirAll("/ext", 0o755))
	var paths []string
	vals := map[string]string{}
	per := len(sorted) / n
	for j := 0; j < n; j++ {
		part := sorted[j*per : (j+1)*per]
		if j == n-1 {
			part = sorted[j*per:]
		}
		if bad && j == 1 {
			part = append([]string{sorted[0]}, part...) // overlaps table 0
		}
		path := fmt.Sprintf("/ext/%d-%d.sst", i, j)
		w, err := NewExternalTableWriter(path, &Options{FS: r.opts.FS, BlockSize: 512})
		require.NoError(t, err)
		for _, k := range part {
			v := fmt.Sprintf("ing%d-%s", i, k)
			require.NoError(t, w.Set([]byte(k), []byte(v)))
			vals[k] = v
		}
		require.NoError(t, w.Close())
		paths = append(paths, path)
	}
	before, seqBefore := tableLevels(r.db), r.db.visibleSeq.Load()
	err := r.db.Ingest(paths)
	if bad {
		require.ErrorIs(t, err, ErrBadExternalTable, "op %d overlapping inputs (seed %d)", i, r.seed)
		r.ingestStats.refused++
		return
	}
	require.NoError(t, err, "op %d Ingest (seed %d)", i, r.seed)
	for k, v := range vals {
		r.m.cur[k] = v
	}
	seq := r.db.visibleSeq.Load() // the Ingest's: the model writes nothing else meanwhile
	if fresh {
		require.Equal(t, seqBefore, seq, "op %d: the copy path took a sequence number (seed %d)", i, r.seed)
		seq = 0
		r.ingestStats.copied++
	}
	for num, f := range tableLevels(r.db) {
		if _, ok := before[num]; ok || f.seqs != [2]uint64{seq, seq} {
			continue // not one of the Ingest's tables (the flush before it made some)
		}
		if f.level == 0 {
			r.ingestStats.intoL0++
		} else {
			r.ingestStats.deeper++
		}
	}
	r.ingestStats.ingests++
	r.ingestStats.inputs += n
	r.ingestStats.keys += len(vals)
}

type tableLevel struct {
	level int
	seqs  [2]uint64
}

// tableLevels maps every table of the default family to its level and
// sequence number range.
func tableLevels(db *DB) map[uint64]tableLevel {
	v := db.versions.Current()
	defer v.Unref()
	out := map[uint64]tableLevel{}
	for level, files := range v.Levels(0) {
		for _, f := range files {
			out[f.FileNum] = tableLevel{level, [2]uint64{f.SmallestSeq, f.LargestSeq}}
		}
	}
	return out
}
