package sketchcol

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestStoreBloomScaledFPR fills a Bloom filter reserved for 1000 items at
// 1% to five times its capacity through the Store — once with replies
// (BFMAdd), once blind and compacted — and checks that no added item
// tests negative and that the measured false-positive rate over 100,000
// items never added stays under twice the requested rate (RedisBloom's
// bound for a scaled filter: sub-filter i at rate·0.5^i).
func TestStoreBloomScaledFPR(t *testing.T) {
	const (
		rate     = 0.01
		capacity = 1000
		added    = 5 * capacity
		probes   = 100_000
	)
	seed := testutil.Seed(t)
	s := openTestStore(t, nil, nil)
	elems := make([][]byte, added)
	for i := range elems {
		elems[i] = fmt.Appendf(nil, "in:%d:%d", seed, i)
	}
	absent := make([][]byte, probes)
	for i := range absent {
		absent[i] = fmt.Appendf(nil, "out:%d:%d", seed, i)
	}
	for _, key := range []string{"reply", "blind"} {
		require.NoError(t, s.BFReserve(k(key), rate, capacity, nil))
		for i := 0; i < added; i += 250 {
			if key == "reply" {
				_, err := s.BFMAdd(k(key), elems[i:i+250]...)
				require.NoError(t, err)
			} else {
				require.NoError(t, s.BFAddBlind(k(key), elems[i:i+250]...))
			}
		}
	}
	require.NoError(t, s.ColumnFamily().Compact(nil, nil))

	var want []byte
	for _, key := range []string{"reply", "blind"} {
		got, err := s.BFMExists(k(key), elems...)
		require.NoError(t, err)
		for i, ok := range got {
			require.True(t, ok, "%s: false negative for item %d", key, i)
		}
		got, err = s.BFMExists(k(key), absent...)
		require.NoError(t, err)
		fp := 0
		for _, ok := range got {
			if ok {
				fp++
			}
		}
		fpr := float64(fp) / probes
		info, err := s.BFInfo(k(key))
		require.NoError(t, err)
		t.Logf("%s: %d sub-filters, capacity %d, %d items inserted, FPR %.4f (requested %.2f)",
			key, info.Filters, info.Capacity, info.ItemsInserted, fpr, rate)
		require.Less(t, fpr, 2*rate)
		require.Equal(t, int64(3), info.Filters, "1000 + 2000 + 4000 ≥ 5000")
		require.Equal(t, int64(7000), info.Capacity)
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		if want == nil {
			want = d
		}
		require.Equal(t, want, d, "adds with replies and blind adds build the same filter")
	}
}
