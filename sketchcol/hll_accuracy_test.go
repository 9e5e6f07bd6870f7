package sketchcol

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// Accuracy of PFCOUNT: relative error over cardinalities 1..10,000,000.
// The standard error of HyperLogLog with m = 16384 registers is
// 1.04/√m ≈ 0.81%; the test holds the estimator to |error| ≤ 3 × that
// (2.44%) in ≥ 99.7% of trials and to an RMS error close to 0.81% where
// the asymptotic regime holds (n ≥ 10^4). An estimate off by one counts
// as within: below n = 41 a single register collision is already more
// than 2.44%, and no estimator can see it.
//
// A trial is one (sequence, checkpoint) pair: each sequence adds distinct
// elements one by one and is estimated at ~170 log-spaced cardinalities.
// To be fast the default run draws the 64-bit hashes from a PRNG (an ideal
// hash) for 24 sequences and checks MurmurHash64A on real elements with
// one sequence to 10^6; SIEVE_LONG=1 runs 400 PRNG sequences and one
// real-element sequence to 10^7 (a few minutes).

const hllStdErr = 1.04 / 128 // 1.04/√16384

// hllAddHash adds a 64-bit hash as hllPosition does.
func (h *HLL) addHash64(x uint64) {
	i := int(x & (hllRegisters - 1))
	h.set(i, uint8(bits.TrailingZeros64(x>>hllP|1<<hllQ)+1))
}

func checkpoints(limit int) []int {
	var out []int
	for f := 1.0; f <= float64(limit); f *= 1.1 {
		n := int(math.Round(f))
		if len(out) == 0 || n > out[len(out)-1] {
			out = append(out, n)
		}
	}
	return append(out, limit)
}

type accuracy struct {
	trials, within     int
	sumSq, sumAbs, sum float64 // over n ≥ 10^4
	large              int
	worst              float64
	worstN             int
}

func (a *accuracy) record(n int, est int64) {
	e := (float64(est) - float64(n)) / float64(n)
	a.trials++
	if math.Abs(e) <= 3*hllStdErr || math.Abs(float64(est)-float64(n)) <= 1 {
		a.within++
	}
	if math.Abs(e) > math.Abs(a.worst) {
		a.worst, a.worstN = e, n
	}
	if n >= 10000 {
		a.large++
		a.sumSq += e * e
		a.sumAbs += math.Abs(e)
		a.sum += e
	}
}

func (a *accuracy) String() string {
	return fmt.Sprintf("%d trials, %.3f%% within ±%.2f%%; n ≥ 10^4: RMS error %.3f%%, mean |error| %.3f%%, bias %+.3f%%; worst %+.2f%% at n=%d",
		a.trials, 100*float64(a.within)/float64(a.trials), 300*hllStdErr,
		100*math.Sqrt(a.sumSq/float64(a.large)), 100*a.sumAbs/float64(a.large), 100*a.sum/float64(a.large),
		100*a.worst, a.worstN)
}

func TestHLLAccuracy(t *testing.T) {
	long := os.Getenv("SIEVE_LONG") != ""
	seqs, limit, realLimit := 24, 10_000_000, 1_000_000
	if long {
		seqs, realLimit = 400, 10_000_000
	} else if testing.Short() || raceEnabled {
		seqs, limit, realLimit = 4, 1_000_000, 100_000
	}
	seed := uint64(testutil.Seed(t))
	var acc accuracy
	cps := checkpoints(limit)
	for s := range seqs {
		rng := rand.New(rand.NewPCG(seed, uint64(s)))
		h := NewHLL()
		n := 0
		for _, cp := range cps {
			for ; n < cp; n++ {
				h.addHash64(rng.Uint64())
			}
			acc.record(n, h.Count())
		}
	}
	t.Logf("PRNG hashes, %d sequences to %d: %v", seqs, limit, &acc)

	var real accuracy
	h := NewHLL()
	n := 0
	buf := make([]byte, 0, 32)
	for _, cp := range checkpoints(realLimit) {
		for ; n < cp; n++ {
			buf = fmt.Appendf(buf[:0], "user:%d:%d", seed, n)
			h.Add(buf)
		}
		real.record(n, h.Count())
	}
	t.Logf("MurmurHash64A of real elements, one sequence to %d: %v", realLimit, &real)

	require.GreaterOrEqual(t, float64(acc.within)/float64(acc.trials), 0.997, "%v", &acc)
	rms := math.Sqrt(acc.sumSq / float64(acc.large))
	require.InDelta(t, hllStdErr, rms, 0.15*hllStdErr, "RMS error %v", &acc)
	require.InDelta(t, 0, acc.sum/float64(acc.large), 0.2*hllStdErr, "bias %v", &acc)
	require.GreaterOrEqual(t, float64(real.within)/float64(real.trials), 0.98, "%v", &real)
}
