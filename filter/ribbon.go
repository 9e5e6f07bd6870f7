package filter

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"sync"
)

// The Standard Ribbon filter (FormatRibbon, see FORMAT.md), after Dillinger
// and Walzer, "Ribbon filter: practically smaller than Bloom and Xor"
// (2021), written here from the paper.
//
// Each key is one linear equation over GF(2): a start slot s in [0, m−w]
// and a w-bit coefficient row c (w = 128, bit 0 always set) select the
// solution rows Z[s+i] for the set bits i of c, and their XOR must equal
// the key's r-bit fingerprint. The builder solves the m×r system by
// on-the-fly Gaussian elimination in the band (each row is reduced against
// the row stored at its leading slot until it finds an empty slot), then
// back-substitution from the last slot down. A query recomputes the XOR: an
// absent key's fingerprint is independent of Z, so it passes with
// probability 2^-r, for r·m/n bits per key with m about 3% above n.
//
// The solution is stored interleaved (column-major inside blocks of 64
// slots: block b holds one 64-bit word per column), so a query reads the
// same few words of three consecutive blocks, two or three cache lines.
// Fractional bits per key: the first u blocks' keys use r+1 columns (the
// words of column r are stored for blocks 0 .. u+1, as far as those keys'
// rows reach), the others r, so an absent key passes with probability
// p·2^-(r+1) + (1−p)·2^-r, where p = 64u/(m−127) is the chance that its
// start lies in the first u blocks.

const (
	ribbonW         = 128
	ribbonTrailer   = 31 // n u64, seed u64, m u64, u u32, r u8, version u8, format u8
	ribbonVersion   = 1
	ribbonMaxR      = 30
	ribbonMaxSlots  = 1 << 40
	ribbonAttempts  = 8
	ribbonSeedSteps = 0xD1B54A32D192ED03
)

// Ribbon returns the Standard Ribbon policy at bitsPerKey bits per key,
// clamped to [1, 30] (NaN means 7); fractional values are honoured (see
// above). Its Name is "sieve.ribbon/<bitsPerKey>". At 7 bits/key it gives
// about 0.95% false positives, where a blocked Bloom filter needs about 10
// bits/key; it is slower to build than a Bloom filter (go test -run '^$'
// -bench Build ./filter compares their ns/key).
//
// Construction fails with small probability; the builder retries with
// other seeds and a little more room, and after eight failures writes a
// blocked Bloom block at the same bits/key (Finish never fails), which its
// BuildReport says. Builds share the fuse builders' concurrency bound.
func Ribbon(bitsPerKey float64) Policy {
	b := bitsPerKey
	switch {
	case math.IsNaN(b):
		b = 7
	case b < 1:
		b = 1
	case b > ribbonMaxR:
		b = ribbonMaxR
	}
	return &ribbonPolicy{policyBase: policyBase{"sieve.ribbon/" + strconv.FormatFloat(b, 'g', -1, 64), FormatRibbon}, bitsPerKey: b}
}

type ribbonPolicy struct {
	policyBase
	bitsPerKey float64
}

func (p *ribbonPolicy) NewBuilder() Builder { return &ribbonBuilder{p: p} }

// BitsPerKey returns the policy's bits per key.
func (p *ribbonPolicy) BitsPerKey() float64 { return p.bitsPerKey }

// ribbonOverhead is ε, the spare starting slots (m − 127 ≈ n·(1+ε)) that
// construction with attempt a (0-based) uses for n keys. Standard Ribbon
// needs ε to grow with log n: the rows waiting for a slot behave like a
// random walk with drift −ε, whose maximum over n steps must stay below w.
// Measured with w = 128: ε = 3% fails about 1 in 10 builds of 200k keys
// and 3 in 8 of 1M keys; 4% fails 2 in 8 of 1M, 5% none of 8. The first
// two attempts take a quarter percent more per doubling of n above 250k
// (3.5% at 1M: a failure is a retry, and each percent costs about 0.07
// bits/key), later ones half a percent more each.
func ribbonOverhead(n int, attempt int) float64 {
	eps := 0.03
	if n > 250_000 {
		eps += 0.0025 * math.Log2(float64(n)/250_000)
	}
	return eps + 0.005*float64(max(0, attempt-1))
}

// ribbonGeometry returns the slots m, result bits r and upper blocks u of
// the filter of n keys at bitsPerKey for construction attempt 0: m leaves
// ribbonOverhead spare starting slots, and the r·m + 64·(u+2) bits of the
// solution are the budget n·bitsPerKey (at least one column).
func ribbonGeometry(n int, bitsPerKey float64) (m uint64, r int, u uint32) {
	return ribbonGeometryAt(n, bitsPerKey, 0)
}

func ribbonGeometryAt(n int, bitsPerKey float64, attempt int) (m uint64, r int, u uint32) {
	if n == 0 {
		return 0, 1, 0
	}
	m = uint64(math.Ceil(float64(n)*(1+ribbonOverhead(n, attempt)))) + ribbonW - 1
	m = (m + 63) &^ 63
	budget := float64(n) * bitsPerKey
	cols := math.Floor(budget / float64(m))
	if cols < 1 {
		return m, 1, 0
	}
	if cols >= ribbonMaxR {
		return m, ribbonMaxR, 0
	}
	r = int(cols)
	extraBlocks := uint64((budget - cols*float64(m)) / 64)
	if extraBlocks >= 3 {
		u = uint32(min(extraBlocks-2, m/64))
	}
	return m, r, u
}

// ribbonExtra is E, the number of blocks (from block 0) that store r+1
// columns: the u upper blocks and the two their keys' rows reach into.
func ribbonExtra(blocks uint64, u uint32) uint64 {
	if u == 0 {
		return 0
	}
	return min(blocks, uint64(u)+2)
}

// ribbonFPR is the expected false-positive rate of a block's geometry.
func ribbonFPR(m uint64, r int, u uint32) float64 {
	if m < ribbonW {
		return 0
	}
	p := min(1, 64*float64(u)/float64(m-ribbonW+1))
	return p*math.Exp2(-float64(r+1)) + (1-p)*math.Exp2(-float64(r))
}

// ribbonRow is a key's equation: its start slot, coefficient row (bit i
// of lo|hi<<64 selects slot start+i; bit 0 is set) and fingerprint. The
// start takes the top bits of x and the fingerprint its low 32 bits; the
// row comes from a second mix y of x: lo = y | 1 and hi = the high word of
// y·φ, so no bit of the row is a linear function of another.
func ribbonRow(h, seed, starts uint64) (start, lo, hi uint64, fp uint32) {
	x := fuseMix(h, seed)
	start, _ = bits.Mul64(x, starts)
	y := fuseMix(x, 0xC2B2AE3D27D4EB4F)
	hi, _ = bits.Mul64(y, golden64)
	return start, y | 1, hi, uint32(x)
}

// ribbonSlot is one slot of the band under construction.
type ribbonSlot struct {
	lo, hi uint64
	res    uint32
}

var ribbonScratchPool = sync.Pool{New: func() any { return new([]ribbonSlot) }}

// testRibbonFailures, when positive, makes that many construction
// attempts fail, for the tests of retry and fallback.
var testRibbonFailures int

type ribbonBuilder struct {
	hashCollector
	p      *ribbonPolicy
	report BuildReport
}

func (b *ribbonBuilder) LastBuild() BuildReport { return b.report }

// Finish returns the block and resets the builder.
func (b *ribbonBuilder) Finish() []byte {
	hs := b.take()
	b.report = BuildReport{}
	if hs.len() == 0 {
		return ribbonBlock(nil, 0, 0, 0, 1, 0)
	}
	acquireBuildSlot()
	defer releaseBuildSlot()
	sp := ribbonScratchPool.Get().(*[]ribbonSlot)
	defer ribbonScratchPool.Put(sp)
	failures := testRibbonFailures
	for attempt := range ribbonAttempts {
		seed := uint64(attempt) * ribbonSeedSteps
		m, r, u := ribbonGeometryAt(hs.len(), b.p.bitsPerKey, attempt)
		band := (*sp)[:0]
		band = append(band, make([]ribbonSlot, m)...)
		*sp = band
		ok := failures == 0 && ribbonBand(band, hs, seed, r, u)
		if failures > 0 {
			failures--
		}
		if ok {
			b.report.Retries = attempt
			return ribbonSolve(band, hs.len(), seed, m, r, u)
		}
	}
	b.report = BuildReport{Retries: ribbonAttempts - 1, FellBack: true}
	return fallbackBloom(hs, b.p.bitsPerKey)
}

// ribbonBand inserts every key's row into band, reporting false if some
// row reduces to 0 = non-zero (the system has no solution with this seed).
func ribbonBand(band []ribbonSlot, hs hashList, seed uint64, r int, u uint32) bool {
	m := uint64(len(band))
	starts := m - ribbonW + 1
	upper := 64 * uint64(u) // keys starting below use r+1 columns
	for _, ch := range ribbonByStart(hs, seed, starts) {
		for _, h := range ch {
			s, lo, hi, fp := ribbonRow(h, seed, starts)
			cols := r
			if s < upper {
				cols++
			}
			res := fp & (1<<cols - 1)
			for {
				sl := &band[s]
				if sl.lo == 0 {
					sl.lo, sl.hi, sl.res = lo, hi, res
					break
				}
				lo ^= sl.lo
				hi ^= sl.hi
				res ^= sl.res
				if lo == 0 {
					if hi == 0 {
						if res != 0 {
							return false
						}
						break // a repeated equation
					}
					tz := bits.TrailingZeros64(hi)
					lo, hi = hi>>tz, 0
					s += 64 + uint64(tz)
					continue
				}
				tz := bits.TrailingZeros64(lo)
				lo = lo>>tz | hi<<(64-tz)
				hi >>= tz
				s += uint64(tz)
			}
		}
	}
	return true
}

// ribbonSortMin is the key count from which ribbonBand inserts the rows in
// the order of their start slots: a band of more than about 2^16 slots
// (24 bytes each) no longer fits a core's cache, and rows inserted in
// random order then miss it at every step.
const ribbonSortMin = 1 << 16

// ribbonByStart returns the hashes of hs in the order of their rows' start
// slots, by a counting sort on buckets of 256 slots (the order inside a
// bucket does not matter: the elimination gives the same solution space
// in any order). Small filters keep the collector's order.
func ribbonByStart(hs hashList, seed, starts uint64) [][]uint64 {
	if hs.len() < ribbonSortMin {
		return hs.chunks
	}
	buckets := (starts + 255) / 256
	start := make([]int, buckets+1)
	bucketOf := func(h uint64) uint64 {
		s, _ := bits.Mul64(fuseMix(h, seed), starts)
		return s / 256
	}
	for _, ch := range hs.chunks {
		for _, h := range ch {
			start[bucketOf(h)+1]++
		}
	}
	for b := range buckets {
		start[b+1] += start[b]
	}
	sorted := make([]uint64, hs.len())
	for _, ch := range hs.chunks {
		for _, h := range ch {
			b := bucketOf(h)
			sorted[start[b]] = h
			start[b]++
		}
	}
	return [][]uint64{sorted}
}

// ribbonSolve back-substitutes the band, from the last slot down, into the
// interleaved solution and returns the block.
func ribbonSolve(band []ribbonSlot, n int, seed, m uint64, r int, u uint32) []byte {
	blocks := m / 64
	extra := ribbonExtra(blocks, u)
	cols := r
	if u > 0 {
		cols++
	}
	words := make([]uint64, blocks*uint64(r)+extra)
	// win[j] is the solution of column j at slots s+1 .. s+128 (bit i of
	// lo|hi<<64 is slot s+1+i) while slot s is solved.
	var winLo, winHi [ribbonMaxR + 1]uint64
	for s := int64(m) - 1; s >= 0; s-- {
		sl := band[s]
		clo := sl.lo>>1 | sl.hi<<63
		chi := sl.hi >> 1
		b := uint64(s) / 64
		off := b*uint64(r) + min(b, extra)
		stored := r
		if b < extra {
			stored++
		}
		for j := range cols {
			var z uint64
			if sl.lo != 0 {
				z = (uint64(sl.res>>j) ^ uint64(bits.OnesCount64(clo&winLo[j]^chi&winHi[j]))) & 1
			}
			winHi[j] = winHi[j]<<1 | winLo[j]>>63
			winLo[j] = winLo[j]<<1 | z
			if j < stored {
				words[off+uint64(j)] |= z << (uint64(s) % 64)
			}
		}
	}
	return ribbonBlock(words, n, seed, m, r, u)
}

func ribbonBlock(words []uint64, n int, seed, m uint64, r int, u uint32) []byte {
	out := make([]byte, 8*len(words)+ribbonTrailer)
	for i, w := range words {
		binary.LittleEndian.PutUint64(out[8*i:], w)
	}
	t := out[8*len(words):]
	binary.LittleEndian.PutUint64(t[0:], uint64(n))
	binary.LittleEndian.PutUint64(t[8:], seed)
	binary.LittleEndian.PutUint64(t[16:], m)
	binary.LittleEndian.PutUint32(t[24:], u)
	t[28] = byte(r)
	t[29] = ribbonVersion
	t[30] = byte(FormatRibbon)
	return out
}

// ribbonReader probes a FormatRibbon block in place.
type ribbonReader struct {
	data   []byte // the solution words
	seed   uint64
	starts uint64 // m − 127
	upper  uint64 // 64·u
	last   uint64 // the last block
	extra  uint64
	r      int
}

func openRibbon(data []byte) (Reader, error) {
	t, err := blockTrailer(data, ribbonTrailer, "Ribbon")
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	n, seed, m, u := le.Uint64(t[0:]), le.Uint64(t[8:]), le.Uint64(t[16:]), le.Uint32(t[24:])
	r, ver := int(t[28]), t[29]
	body := uint64(len(data) - ribbonTrailer)
	switch {
	case ver != ribbonVersion:
		return nil, malformed("Ribbon block of version %d, want %d", ver, ribbonVersion)
	case r < 1 || r > ribbonMaxR:
		return nil, malformed("Ribbon block has r = %d, want 1..%d", r, ribbonMaxR)
	case n == 0 && (m != 0 || u != 0 || body != 0):
		return nil, malformed("Ribbon block of no keys has %d slots", m)
	case n == 0:
		return emptyFilter{}, nil
	case m < ribbonW || m%64 != 0 || m > ribbonMaxSlots:
		return nil, malformed("Ribbon block has %d slots, want a multiple of 64 in %d..2^40", m, ribbonW)
	case n > m:
		return nil, malformed("Ribbon block claims %d keys in %d slots", n, m)
	case uint64(u) > m/64:
		return nil, malformed("Ribbon block has %d upper blocks of %d", u, m/64)
	}
	blocks := m / 64
	extra := ribbonExtra(blocks, u)
	if body != 8*(blocks*uint64(r)+extra) {
		return nil, malformed("Ribbon block has %d body bytes for %d blocks of %d columns (%d of %d)", body, blocks, r, extra, r+1)
	}
	return &ribbonReader{data: data[:body], seed: seed, starts: m - ribbonW + 1, upper: 64 * uint64(u),
		last: blocks - 1, extra: extra, r: r}, nil
}

// MayContain computes the key's r (or r+1) result bits from the three
// blocks its row spans and compares them with its fingerprint. The
// coefficient row is shifted once to the blocks' alignment (c0, c1, c2
// over blocks b, b+1, b+2), so a column costs three loads, three ANDs and
// a popcount.
func (r *ribbonReader) MayContain(key []byte) bool { return r.MayContainHash(hashKey(key)) }

// MayContainHash implements HashReader.
func (r *ribbonReader) MayContainHash(h uint64) bool {
	s, clo, chi, fp := ribbonRow(h, r.seed, r.starts)
	cols := r.r
	if s < r.upper {
		cols++
	}
	b := s / 64
	o := s % 64
	c0 := clo << o
	c1 := clo>>(64-o) | chi<<o // Go: a shift by 64 gives 0
	c2 := chi >> (64 - o)
	b2 := min(b+2, r.last) // c2 is 0 when o = 0, and otherwise b+2 ≤ last
	o0 := 8 * (b*uint64(r.r) + min(b, r.extra))
	o1 := 8 * ((b+1)*uint64(r.r) + min(b+1, r.extra))
	o2 := 8 * (b2*uint64(r.r) + min(b2, r.extra))
	n := 8 * uint64(cols)
	d := r.data
	s0, s1, s2 := d[o0:o0+n], d[o1:o1+n], d[o2:o2+n]
	le := binary.LittleEndian
	var acc uint32
	for j := uint(0); len(s0) >= 8 && len(s1) >= 8 && len(s2) >= 8; j++ {
		x := le.Uint64(s0)&c0 ^ le.Uint64(s1)&c1 ^ le.Uint64(s2)&c2
		acc |= uint32(bits.OnesCount64(x)&1) << j
		s0, s1, s2 = s0[8:], s1[8:], s2[8:]
	}
	return acc == fp&(1<<cols-1)
}

// inspectRibbon fills the Ribbon fields of info from a valid block.
func inspectRibbon(data []byte, info *BlockInfo) {
	t := data[len(data)-ribbonTrailer:]
	le := binary.LittleEndian
	info.Keys = le.Uint64(t[0:])
	info.Slots = le.Uint64(t[16:])
	info.UpperBlocks = le.Uint32(t[24:])
	info.ResultBits = int(t[28])
	info.FilterBits = 8 * uint64(len(data)-ribbonTrailer)
}
