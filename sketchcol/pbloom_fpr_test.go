package sketchcol

import (
	"fmt"
	"math"
	"testing"
)

// TestPagedBloomFPR measures the false-positive rate of paged filters
// (the in-memory model, whose pages and probes are the Store's) at
// RedisBloom's rates, after filling to capacity and after scaling to 4×
// capacity: it must stay at or below the rate asked for (the tightening
// pays for the blocking). The capacity is large enough that a filter has
// many pages.
func TestPagedBloomFPR(t *testing.T) {
	capacity := int64(200_000)
	probes := 200_000
	if testing.Short() {
		capacity, probes = 50_000, 50_000
	}
	for _, rate := range []float64{0.1, 0.01, 0.001} {
		m, err := NewPagedBloom(BloomSpec{ErrorRate: rate, Capacity: capacity, Expansion: 2})
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		for _, fill := range []int64{capacity, 4 * capacity} {
			for ; n < fill; n++ {
				if _, err := m.add(fmt.Appendf(nil, "in-%d", n), false); err != nil {
					t.Fatal(err)
				}
			}
			fp := 0
			for i := range probes {
				if m.Exists(fmt.Appendf(nil, "out-%d-%d", fill, i)) {
					fp++
				}
			}
			got := float64(fp) / float64(probes)
			t.Logf("rate %v, %d items (%d sub-filters, %d pages in the first): measured %.5f", rate, fill, len(m.h.counts), m.h.layer(0).pages, got)
			// The binomial noise of probes draws, 3 sigma.
			if slack := 3 * math.Sqrt(rate*(1-rate)/float64(probes)); got > rate+slack {
				t.Errorf("rate %v after %d items: measured %.5f", rate, fill, got)
			}
		}
	}
}
