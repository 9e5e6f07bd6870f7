package sketchcol

import (
	"fmt"
	"testing"
)

// Benchmarks of the building blocks the Store will use. Quote medians of
// -count 5 and ratios against a peer measured in the same run.

func benchElems(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "user:%d", i)
	}
	return out
}

func hllWith(n int) *HLL {
	h := NewHLL()
	for _, e := range benchElems(n) {
		h.Add(e)
	}
	return h
}

// BenchmarkPFAddOp: building the blind PFADD operand (hash, sort,
// encode). Reported per element.
func BenchmarkPFAddOp(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		elems := benchElems(n)
		b.Run(fmt.Sprint("elems=", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = PFAddOp(elems...)
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "elems/s")
		})
	}
}

// BenchmarkHLLAdd is the in-memory peer: one element into an HLL.
func BenchmarkHLLAdd(b *testing.B) {
	elems := benchElems(1 << 16)
	h := NewHLL()
	i := 0
	for b.Loop() {
		h.Add(elems[i&(1<<16-1)])
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "elems/s")
}

// BenchmarkHLLFullMerge: a base plus 16 single-element PFADD operands,
// collapsed into a value with a fresh cache (what a read before compaction
// and a compaction reaching the base do).
func BenchmarkHLLFullMerge(b *testing.B) {
	var ops [][]byte
	for _, e := range benchElems(16) {
		ops = append(ops, PFAddOp(append([]byte("new:"), e...)))
	}
	for _, tc := range []struct {
		name string
		n    int
	}{{"sparse-base", 500}, {"dense-base", 100000}} {
		base := hllWith(tc.n).Bytes()
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var m Merger
			for b.Loop() {
				if _, err := m.FullMerge(nil, base, true, ops); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHLLPartialMerge: folding 16 PFADD operands of 16 elements.
func BenchmarkHLLPartialMerge(b *testing.B) {
	var ops [][]byte
	elems := benchElems(256)
	for i := 0; i < 256; i += 16 {
		ops = append(ops, PFAddOp(elems[i:i+16]...))
	}
	b.ReportAllocs()
	var m Merger
	for b.Loop() {
		if _, ok := m.PartialMerge(nil, ops); !ok {
			b.Fatal("declined")
		}
	}
}

// BenchmarkPFCount: one value, with a valid cache (every merged value) and
// with a stale one (a value restored from Redis after PFADD).
func BenchmarkPFCount(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"sparse", 1000}, {"dense", 100000}} {
		v := hllWith(tc.n).Bytes()
		stale := append([]byte(nil), v...)
		stale[15] |= hllCardInvalid
		b.Run(tc.name+"/cached", func(b *testing.B) {
			for b.Loop() {
				if _, err := PFCountValues(v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/uncached", func(b *testing.B) {
			for b.Loop() {
				if _, err := PFCountValues(stale); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	vs := [][]byte{hllWith(1000).Bytes(), hllWith(100000).Bytes(), hllWith(5000).Bytes()}
	b.Run("union-of-3", func(b *testing.B) {
		for b.Loop() {
			if _, err := PFCountValues(vs...); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBloomOpFold: PartialMerge of 16 Bloom operands of 64 items
// (ordered union of hashes). Reported per item.
func BenchmarkBloomOpFold(b *testing.B) {
	var ops [][]byte
	elems := benchElems(1024)
	for i := 0; i < 1024; i += 64 {
		o, err := BFAddOp(nil, elems[i:i+64]...)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, o)
	}
	b.ReportAllocs()
	var m Merger
	for b.Loop() {
		if _, ok := m.PartialMerge(nil, ops); !ok {
			b.Fatal("declined")
		}
	}
	b.ReportMetric(float64(b.N*1024)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkBloomFullMerge: a 100k-item filter (1%) plus one operand of
// 64 items: decode, 64 adds, encode.
func BenchmarkBloomFullMerge(b *testing.B) {
	bf, err := NewScalableBloom(BloomSpec{ErrorRate: 0.01, Capacity: 100000, Expansion: 2})
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range benchElems(50000) {
		_, _ = bf.Add(e)
	}
	base, _ := bf.MarshalBinary()
	op, _ := BFAddOp(nil, benchElems(64)...)
	b.SetBytes(int64(len(base)))
	var m Merger
	for b.Loop() {
		if _, err := m.FullMerge(nil, base, true, [][]byte{op}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedisPFADD is the peer for PFADD throughput: pipelined PFADDs
// of 16 elements to a redis-server on loopback (skipped without it).
func BenchmarkRedisPFADD(b *testing.B) { benchRedisPFADD(b) }

// benchRedisPFADD runs PFADDs of 16 elements to one key, pipelined 64
// deep, and reports elements per second.
func benchRedisPFADD(b *testing.B) {
	s := startRedis(b)
	elems := benchElems(1 << 16)
	const batch, depth = 16, 64
	i := 0
	b.ResetTimer()
	for n := 0; n < b.N; n += depth {
		for range depth {
			args := []any{"PFADD", "bench"}
			for range batch {
				args = append(args, elems[i&(1<<16-1)])
				i++
			}
			s.send(args...)
		}
		if err := s.flush(); err != nil {
			b.Fatal(err)
		}
		for range depth {
			if _, err := s.read(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "elems/s")
}
