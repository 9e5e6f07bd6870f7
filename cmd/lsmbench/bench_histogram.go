package main

import (
	"math"
	"math/bits"
	"time"
)

// histogram is a log-linear latency histogram in nanoseconds, in the manner
// of HdrHistogram: values below 64 get a bucket each, larger values fall in
// one of 32 buckets per power of two, so a bucket is at most 1/32 (3.1%) of
// its values wide. Recording is a few integer instructions and no
// allocation; each benchmark goroutine owns one and they are merged at the
// end. The zero value is ready to use; a histogram is not safe for
// concurrent use.
type histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64
	min, max uint64
}

const (
	histSubBits = 5
	histSub     = 1 << histSubBits                 // buckets per power of two
	histBuckets = (64 - histSubBits + 1) * histSub // the largest uint64 lands in the last one
)

// bucketOf maps v to its bucket: v itself below 2·histSub, and above that
// shift·histSub + (v >> shift), where shift keeps the top histSubBits+1 bits.
func bucketOf(v uint64) int {
	shift := max(0, bits.Len64(v)-histSubBits-1)
	return shift*histSub + int(v>>uint(shift))
}

// bucketRange returns the smallest value of bucket b and its width.
func bucketRange(b int) (lo, width uint64) {
	if b < 2*histSub {
		return uint64(b), 1
	}
	shift := b/histSub - 1
	return uint64(b-shift*histSub) << uint(shift), 1 << uint(shift)
}

func (h *histogram) record(d time.Duration) { h.recordN(d, 1) }

// recordN records d as the latency of w operations: a sample standing for
// the w-1 operations that were not timed.
func (h *histogram) recordN(d time.Duration, w uint64) {
	v := uint64(max(0, d))
	h.counts[bucketOf(v)] += w
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n += w
	h.sum += float64(v) * float64(w)
}

func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

func (h *histogram) count() uint64 { return h.n }

func (h *histogram) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// quantile returns the q-quantile (0 ≤ q ≤ 1) in nanoseconds, interpolating
// linearly inside the bucket that holds it and clamping to the exact
// minimum and maximum.
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	q = math.Max(0, math.Min(1, q))
	rank := q * float64(h.n) // how many values lie at or below the answer
	var seen float64
	for b, c := range h.counts {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			lo, width := bucketRange(b)
			v := float64(lo) + float64(width)*(rank-seen)/float64(c)
			return math.Max(float64(h.min), math.Min(float64(h.max), v))
		}
		seen += float64(c)
	}
	return float64(h.max)
}

// latencySummary is what reports show of a histogram, in microseconds.
type latencySummary struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func (h *histogram) summary() *latencySummary {
	if h.n == 0 {
		return nil
	}
	us := func(ns float64) float64 { return ns / 1e3 }
	return &latencySummary{
		Mean: us(h.mean()), Min: us(float64(h.min)),
		P50: us(h.quantile(0.50)), P90: us(h.quantile(0.90)),
		P99: us(h.quantile(0.99)), P999: us(h.quantile(0.999)),
		Max: us(float64(h.max)),
	}
}

// Timing policy. Reading the clock once per operation (each operation's
// end is the next one's start) costs one clock read per operation. Where
// that is more than clockBudget of an operation — time.Now can cost 20 ns
// or 150 ns depending on the machine's clock source and load — the loop
// times only one operation in sampleEvery(...), with two clock reads, and
// records it with that weight. The first calibrationOps operations of each
// thread are always timed, to measure what an operation costs.
const (
	calibrationOps = 1000
	clockBudget    = 0.02
	maxSampleEvery = 128
)

// sampleEvery returns 1 (time every operation) or the sampling stride that
// keeps clock reads within clockBudget of an operation costing opNs.
func sampleEvery(clockNs, opNs float64) int {
	if !(opNs > 0) || clockNs <= clockBudget*opNs {
		return 1
	}
	return min(maxSampleEvery, int(math.Ceil(2*clockNs/(clockBudget*opNs))))
}

// clockCost measures what one time.Now costs here, in nanoseconds: the
// fastest of several batches, since on a busy machine a batch that was
// descheduled only looks slower.
func clockCost() float64 {
	const batches, n = 20, 10_000
	best := math.Inf(1)
	for range batches {
		start := time.Now()
		var t time.Time
		for range n {
			t = time.Now()
		}
		best = math.Min(best, float64(t.Sub(start).Nanoseconds())/n)
	}
	return best
}
