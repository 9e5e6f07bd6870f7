package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

// TestGetBatchMatchesGet builds a table of keys with several versions each
// (some spanning blocks) and checks that GetBatch of random sorted batches
// (absent keys and repeats included, at random sequence numbers) visits
// exactly what Get visits for each key, and reads each block once per run
// of keys that share it.
func TestGetBatchMatchesGet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var kvs []kv
	for i := 0; i < 2000; i += 2 {
		versions := 1 + rng.IntN(3)
		if i%97 == 0 {
			versions = 40 // spans blocks
		}
		for v := 0; v < versions; v++ {
			kind := base.KindSet
			if rng.IntN(5) == 0 {
				kind = base.KindMerge
			}
			kvs = append(kvs, kv{ikey(fmt.Sprintf("k%05d", i), uint64(1+v*10+rng.IntN(5)), kind), fmt.Appendf(nil, "v%d.%d", i, v)})
		}
	}
	sortKVs(kvs)
	data, _ := buildTable(t, kvs, WriterOptions{BlockSize: 256})
	r := openTable(t, data, ReaderOptions{})
	type visit struct {
		k base.InternalKey
		v string
	}
	shared := 0 // batches that fetched fewer blocks than their Gets
	for round := 0; round < 200; round++ {
		keys := make([][]byte, 1+rng.IntN(60))
		for j := range keys {
			keys[j] = fmt.Appendf(nil, "k%05d", rng.IntN(2100))
		}
		slices.SortFunc(keys, bytes.Compare)
		seq := uint64(rng.IntN(450))
		got := make([][]visit, len(keys))
		errs := make([]error, len(keys))
		var st ReadStats
		r.GetBatch(keys, seq, &st, errs, func(i int, k base.InternalKey, v []byte) bool {
			got[i] = append(got[i], visit{base.InternalKey{UserKey: slices.Clone(k.UserKey), Trailer: k.Trailer}, string(v)})
			return k.Kind() == base.KindMerge
		})
		var single ReadStats
		for j, key := range keys {
			require.NoError(t, errs[j])
			var want []visit
			require.NoError(t, r.Get(key, seq, &single, func(k base.InternalKey, v []byte) bool {
				want = append(want, visit{base.InternalKey{UserKey: slices.Clone(k.UserKey), Trailer: k.Trailer}, string(v)})
				return k.Kind() == base.KindMerge
			}))
			require.Equal(t, want, got[j], "round %d key %s seq %d", round, key, seq)
		}
		require.LessOrEqual(t, st.BlocksRead, single.BlocksRead)
		if st.BlocksRead < single.BlocksRead {
			shared++
		}
	}
	require.Positive(t, shared)
}
