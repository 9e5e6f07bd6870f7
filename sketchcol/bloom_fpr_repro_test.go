package sketchcol

import (
	"fmt"
	"math/bits"
	"os"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestBloomLowErrorRateFPR (a reproduction, run with SIEVE_REPRO=1; it
// fails today): a Bloom filter reserved at a low error rate shows a
// false-positive rate well above it. One non-scaling sub-filter of 1000
// items at 1e-6 (m = 28,800 bits, k = 20) should show about two false
// positives in 2,000,000 probes; it shows about ten. The filter package's
// probes are g, g+step, g+2·step, … (mod 2^64, each mapped to a bit by its
// top bits: filter.setKM/testKM) with step the hash rotated by 32 bits. An
// item whose step is within 2^64/m of 0 probes a run of fewer than k
// adjacent bits, all set with probability about 2^-(bits in the run), so
// the rate has a floor of about 2/(m·k·ln 2) per sub-filter (7e-6 here,
// 1e-5 for the 1e-9 filters of TestStoreStress) whatever the requested
// rate; about half the false positives seen are such items. Noticed in
// TestStoreStress (false positives among its new items at 1e-9), whose
// contested-item check therefore tolerates a few items nobody added.
func TestBloomLowErrorRateFPR(t *testing.T) {
	if os.Getenv("SIEVE_REPRO") == "" {
		t.Skip("reproduction of a known false-positive-rate floor; SIEVE_REPRO=1 runs it")
	}
	const (
		rate     = 1e-6
		capacity = 1000
		probes   = 2_000_000
	)
	b, err := NewScalableBloom(BloomSpec{ErrorRate: rate, Capacity: capacity, NonScaling: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range capacity {
		if _, err := b.Add(fmt.Appendf(nil, "in:%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	m := b.layers[0].M()
	fp, narrow := 0, 0
	for i := range probes {
		item := fmt.Appendf(nil, "out:%d", i)
		if !b.Exists(item) {
			continue
		}
		fp++
		k := layerKey(itemHash(item))
		step := bits.RotateLeft64(xxhash.Sum64(k[:]), 32) // filter.kmStart of filter.hashKey
		if span := min(step, -step); span < (1<<63)/m*2 { // the k probes span at most k bits
			narrow++
		}
	}
	fpr := float64(fp) / probes
	t.Logf("m = %d bits, k = %d: %d false positives in %d probes (%.2g; requested %g), %d of them with a step within 2^64/m of 0",
		m, b.layers[0].K(), fp, probes, fpr, rate, narrow)
	if fpr > 4*rate {
		t.Errorf("false-positive rate %.2g is %.0f times the requested %g", fpr, fpr/rate, rate)
	}
}
