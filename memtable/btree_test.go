package memtable

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestBTreeModel inserts random entries (short, 16-byte and long keys, so
// that every comparison path runs) and checks, at sizes around node
// splits, the tree's invariants and ascend/descend from random pivots
// against a sorted slice.
func TestBTreeModel(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	mkKey := func() []byte {
		k := make([]byte, []int{3, 16, 24}[rng.Intn(3)])
		for i := range k {
			k[i] = byte(rng.Intn(4)) // few distinct bytes: ties on words
		}
		return k
	}
	testBTreeModel(t, seed, rng, mkKey)
}

// testBTreeModel is TestBTreeModel's body for keys from mkKey.
func testBTreeModel(t *testing.T, seed int64, rng *rand.Rand, mkKey func() []byte) {
	for _, n := range []int{0, 1, maxItems - 1, maxItems, maxItems + 1, 20000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var tr btree
			var model []entry
			keys := map[string]bool{}
			for i := 0; i < n; i++ {
				k := mkKey()
				e := makeEntry(k, uint64(rng.Intn(3)+1)<<8)
				id := fmt.Sprintf("%x/%d", k, e.trailer)
				if keys[id] {
					continue
				}
				keys[id] = true
				tr.insert(e)
				model = append(model, e)
				if i%97 == 0 {
					require.Empty(t, tr.check(), "seed %d after %d inserts", seed, i+1)
				}
			}
			require.Empty(t, tr.check(), "seed %d", seed)
			require.Equal(t, len(model), tr.len)
			sort.Slice(model, func(i, j int) bool { return lessEntry(&model[i], &model[j]) })

			collect := func(asc bool, p *entry, limit int) []entry {
				var out []entry
				fn := func(e *entry) bool {
					out = append(out, *e)
					return len(out) < limit
				}
				if asc {
					tr.ascend(p, fn)
				} else {
					tr.descend(p, fn)
				}
				return out
			}
			require.Equal(t, nilIfEmpty(model), collect(true, nil, 1<<30))
			var rev []entry
			for k := len(model) - 1; k >= 0; k-- {
				rev = append(rev, model[k])
			}
			require.Equal(t, rev, collect(false, nil, 1<<30))
			for trial := 0; trial < 300; trial++ {
				p := makeEntry(mkKey(), uint64(rng.Intn(4))<<8)
				if trial%3 == 0 && len(model) > 0 {
					p = model[rng.Intn(len(model))] // pivots equal to entries
				}
				limit := 1 + rng.Intn(80)
				i := sort.Search(len(model), func(i int) bool { return !lessEntry(&model[i], &p) })
				want := model[i:min(len(model), i+limit)]
				require.Equal(t, nilIfEmpty(want), collect(true, &p, limit), "seed %d ascend", seed)
				j := sort.Search(len(model), func(i int) bool { return lessEntry(&p, &model[i]) })
				var wantD []entry
				for k := j - 1; k >= 0 && len(wantD) < limit; k-- {
					wantD = append(wantD, model[k])
				}
				require.Equal(t, wantD, collect(false, &p, limit), "seed %d descend", seed)
			}
		})
	}
}

func nilIfEmpty(s []entry) []entry {
	if len(s) == 0 {
		return nil
	}
	return append([]entry(nil), s...)
}
