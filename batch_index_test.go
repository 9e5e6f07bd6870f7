package sieve

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIndexedBatchModel checks every read through an indexed batch
// against the database after the batch is applied: random puts, deletes,
// merges and range deletions over a database holding values, operands and
// flushed tables. Replay a failure with SIEVE_SEED.
func TestIndexedBatchModel(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("SIEVE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (replay: SIEVE_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	var kinds [4]int
	for round := 0; round < 30; round++ {
		db, _ := openMem(t, nil)
		cf, err := db.OpenColumnFamily("m", &ColumnFamilyOptions{Merger: appendMerger{}})
		require.NoError(t, err)
		key := func() []byte { return []byte(fmt.Sprintf("k%02d", rng.IntN(20))) }
		for i := 0; i < 40; i++ { // the base: values, operands, tombstones
			switch rng.IntN(3) {
			case 0:
				require.NoError(t, cf.Put(key(), []byte("b"+strconv.Itoa(i)), nil))
			case 1:
				require.NoError(t, cf.Merge(key(), []byte("m"+strconv.Itoa(i)), nil))
			default:
				require.NoError(t, cf.Delete(key(), nil))
			}
			if i == 20 {
				require.NoError(t, db.Flush())
			}
		}
		b := db.NewIndexedBatch()
		for i := 0; i < 30; i++ {
			k := rng.IntN(4)
			kinds[k]++
			switch k {
			case 0:
				require.NoError(t, b.PutCF(cf, key(), []byte("p"+strconv.Itoa(i))))
			case 1:
				require.NoError(t, b.MergeCF(cf, key(), []byte("o"+strconv.Itoa(i))))
			case 2:
				require.NoError(t, b.DeleteCF(cf, key()))
			default:
				s, e := key(), key()
				if string(s) > string(e) {
					s, e = e, s
				}
				require.NoError(t, b.DeleteRangeCF(cf, s, e))
			}
		}
		want := map[string]string{}
		for i := 0; i < 20; i++ {
			k := []byte(fmt.Sprintf("k%02d", i))
			v, err := b.GetCF(cf, k)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			require.NoError(t, err)
			want[string(k)] = string(v)
		}
		require.NoError(t, db.Apply(b, nil))
		for i := 0; i < 20; i++ {
			k := fmt.Sprintf("k%02d", i)
			v, err := cf.Get([]byte(k))
			if w, ok := want[k]; ok {
				require.NoError(t, err, "seed %d round %d key %s", seed, round, k)
				require.Equal(t, w, string(v), "seed %d round %d key %s", seed, round, k)
			} else {
				require.ErrorIs(t, err, ErrNotFound, "seed %d round %d key %s: batch read found nothing, DB has %q", seed, round, k, v)
			}
		}
	}
	t.Logf("batch entries by kind (put, merge, delete, range): %v", kinds)
	_, err := (&Batch{}).Get([]byte("k"))
	require.ErrorIs(t, err, errNotIndexed)
}
