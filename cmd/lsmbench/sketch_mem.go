package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/sketchcol"
)

type sketchLab struct {
	cfg  sketchLabConfig
	ctx  context.Context
	prog *progress
}

// memoryRow is one structure in the memory table.
type memoryRow struct {
	Structure string  `json:"structure"`
	Bytes     float64 `json:"bytes"`
	BitsPerID float64 `json:"bits_per_id"`
	Answers   string  `json:"answers"`
	How       string  `json:"how"`
}

// sampleIDs bounds what is built for real; larger n is scaled from it.
const sampleIDs = 1_000_000

// memory builds DESIGN.md's table for the user's n and p: what remembering
// n IDs costs in each structure and what each can answer.
func (l *sketchLab) memory() []memoryRow {
	n, p, ks := float64(l.cfg.N), l.cfg.Rate, l.cfg.KeySize
	row := func(name string, bytes float64, answers, how string) memoryRow {
		return memoryRow{Structure: name, Bytes: bytes, BitsPerID: 8 * bytes / n, Answers: answers, How: how}
	}
	sample := min(l.cfg.N, sampleIDs)
	mapBytes := measureMapBytes(sample, ks)
	f := filter.CuckooFingerprintBits(p)
	cf, _ := filter.NewCuckooTableFilter(uint64(sample), f)
	cblob, _ := cf.MarshalBinary()
	hllBytes, hllEnc := measureHLLBytes(min(l.cfg.N, 200_000), ks)
	return []memoryRow{
		row("exact set (Go map[string]struct{})", mapBytes*n, "membership, exact",
			fmt.Sprintf("measured at %s IDs (%.0f B/ID), scaled", commas(int64(sample)), mapBytes)),
		row("sorted array of IDs", n*float64(ks), "membership, exact (binary search)", fmt.Sprintf("n × %d B", ks)),
		row(fmt.Sprintf("Bloom, classic (k = %d)", filter.OptimalK(filter.BitsPerKey(p))), n*filter.BitsPerKey(p)/8,
			"membership, "+pct(p)+" false positives, no delete", fmt.Sprintf("−n·ln p/(ln 2)² = %.2f bits/ID", filter.BitsPerKey(p))),
		row("Bloom, blocked (sieve's table filter)", n*filter.BloomBitsPerKey(p)/8,
			"membership, "+pct(p)+" false positives, no delete", fmt.Sprintf("filter.BloomBitsPerKey(p) = %.2f bits/ID", filter.BloomBitsPerKey(p))),
		row(fmt.Sprintf("cuckoo (f = %d)", f), float64(len(cblob))/float64(sample)*n,
			"membership, ≤ "+pct(8/math.Exp2(float64(f)))+" false positives, delete",
			fmt.Sprintf("filter.NewCuckooTableFilter at %s IDs, scaled", commas(int64(sample)))),
		row("bitmap (dense integer IDs 0..n−1)", n/8, "membership, exact; only for dense integer IDs", "n bits"),
		row("HyperLogLog (sketchcol, Redis format)", float64(hllBytes), "count only, ±0.81% standard error; not membership",
			fmt.Sprintf("sketchcol.HLL.Bytes(), %s encoding", hllEnc)),
	}
}

// measureMapBytes returns the heap bytes per entry of a map[string]struct{}
// holding n IDs of keySize bytes: the larger of what building it added to
// the live heap and what dropping it took away, so that memory something
// else releases meanwhile (the lab's earlier stages) does not hide it.
func measureMapBytes(n, keySize int) float64 {
	ks := keyspace{num: n, keySize: keySize}
	key := make([]byte, keySize)
	live := func() float64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	before := live()
	set := make(map[string]struct{})
	for i := range n {
		set[string(ks.present(key, uint64(i)))] = struct{}{}
	}
	built := live()
	runtime.KeepAlive(set)
	set = nil
	dropped := live()
	return math.Max(0, math.Max(built-before, built-dropped)) / float64(n)
}

// measureHLLBytes returns the size of the Redis encoding of an HLL that
// counted n IDs, and that encoding's name. Beyond a few thousand IDs it is
// the dense 12,304 bytes, whatever n.
func measureHLLBytes(n, keySize int) (int, string) {
	h := sketchcol.NewHLL()
	ks := keyspace{num: n, keySize: keySize}
	key := make([]byte, keySize)
	for i := range n {
		h.Add(ks.present(key, uint64(i)))
	}
	b := h.Bytes()
	return len(b), hllEncoding(b)
}

// hllEncoding names the encoding of a Redis HLL value: byte 4 of the
// header is 0 for dense and 1 for sparse.
func hllEncoding(b []byte) string {
	if len(b) > 4 && b[4] == 1 {
		return "sparse"
	}
	return "dense"
}

func printMemory(w io.Writer, c *sketchLabConfig, rows []memoryRow) {
	fmt.Fprintf(w, "1. Remembering %s IDs of %d B (rate p = %s)\n", commas(int64(c.N)), c.KeySize, pct(c.Rate))
	fmt.Fprintf(w, "%-38s %10s %9s  %-52s %s\n", "structure", "memory", "bits/ID", "answers", "from")
	for _, r := range rows {
		fmt.Fprintf(w, "%-38s %10s %9.2f  %-52s %s\n", r.Structure, humanBytes(int64(r.Bytes)), r.BitsPerID, r.Answers, r.How)
	}
	fmt.Fprintf(w, "A filter answers \"maybe\" or \"certainly not\": never let one decide permissions or billing.\n\n")
}
