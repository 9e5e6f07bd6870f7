package filter

import (
	"encoding/binary"
	"math/bits"
	"runtime"
	"strconv"
	"sync"

	"github.com/FastFilter/xorfilter"
)

// The binary fuse filter (FormatBinaryFuse, see FORMAT.md): Graf and
// Lemire's 3-wise binary fuse filter ("Binary Fuse Filters: Fast and
// Smaller Than Xor Filters", JEA 2022). A key's three fingerprint slots lie
// in three consecutive segments; the XOR of the three slots equals the
// key's f-bit fingerprint, so an absent key passes with probability 2^-f
// for about 1.13·f bits per key (9.0 at f = 8 for a million keys).
//
// The construction (hypergraph peeling) is github.com/FastFilter/xorfilter's;
// the block layout, the hashing from sieve's one xxhash per key and the
// reader are this package's, so the bytes on disk do not depend on the
// library's serialization. Construction can fail to find a peeling order
// (the library gives up after xorfilter.MaxIterations seeds, which for
// distinct hashes does not happen in practice); the builder then retries
// with the keys' hashes salted differently, and after fuseAttempts salts
// builds a blocked Bloom block instead (Finish never fails), which its
// BuildReport says.

const (
	fuseTrailerLen = 35 // n u64, salt u64, seed u64, L u32, S u32, f u8, version u8, format u8
	fuseVersion    = 1
	fuseMaxSegLen  = 1 << 18
	fuseAttempts   = 3
)

// BinaryFuse returns the 3-wise binary fuse policy with 8- or 16-bit
// fingerprints (other values are rounded to the nearer of the two). Its
// Name is "sieve.binaryfuse/<bits>". The false-positive rate is 2^-f
// (0.39% at f = 8, 0.0015% at f = 16); the size is about 1.125·f bits per
// key for large tables and up to about 1.25·f for tables of a few
// thousand keys.
//
// Building takes about 24 bytes per key of scratch memory. Builders'
// scratch is pooled, and at most GOMAXPROCS fuse or Ribbon constructions
// run at once (others wait), which bounds that memory.
func BinaryFuse(fingerprintBits int) Policy {
	f := 8
	if fingerprintBits > 12 {
		f = 16
	}
	return &fusePolicy{policyBase: policyBase{"sieve.binaryfuse/" + strconv.Itoa(f), FormatBinaryFuse}, f: f}
}

type fusePolicy struct {
	policyBase
	f int
}

func (p *fusePolicy) NewBuilder() Builder { return &fuseBuilder{p: p} }

// FingerprintBits returns f.
func (p *fusePolicy) FingerprintBits() int { return p.f }

// BuildReport says how a builder's last Finish went: how many times the
// construction was retried with other hash salts or seeds, and whether it
// gave up and wrote a blocked Bloom block instead of its own format.
type BuildReport struct {
	Retries  int
	FellBack bool
}

// BuildReporter is implemented by the builders of static filters (binary
// fuse, Ribbon) whose construction can fail and fall back.
type BuildReporter interface {
	LastBuild() BuildReport
}

// buildSlots bounds the fuse and Ribbon constructions running at once:
// each holds tens of bytes per key of scratch memory.
var buildSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))

func acquireBuildSlot() { buildSlots <- struct{}{} }
func releaseBuildSlot() { <-buildSlots }

// fuseScratch is the pooled construction memory of one build.
type fuseScratch struct {
	b    xorfilter.BinaryFuseBuilder
	keys []uint64
}

var fuseScratchPool = sync.Pool{New: func() any { return new(fuseScratch) }}

// testFuseFailures, when positive, makes that many construction attempts
// fail, for the tests of retry and fallback.
var testFuseFailures int

type fuseBuilder struct {
	hashCollector
	p      *fusePolicy
	report BuildReport
}

func (b *fuseBuilder) LastBuild() BuildReport { return b.report }

// fuseSalt is the value XORed into every hash on attempt i.
func fuseSalt(attempt int) uint64 { return uint64(attempt) * golden64 }

// Finish returns the block and resets the builder.
func (b *fuseBuilder) Finish() []byte {
	hs := b.take()
	b.report = BuildReport{}
	if hs.len() == 0 {
		return fuseBlock[uint8](nil, b.p.f, 0, 0, 0, 0, 0)
	}
	acquireBuildSlot()
	defer releaseBuildSlot()
	s := fuseScratchPool.Get().(*fuseScratch)
	defer fuseScratchPool.Put(s)
	if cap(s.keys) < hs.len() {
		s.keys = make([]uint64, 0, hs.len())
	}
	failures := testFuseFailures
	for attempt := range fuseAttempts {
		salt := fuseSalt(attempt)
		s.keys = s.keys[:0]
		for _, ch := range hs.chunks {
			for _, h := range ch {
				s.keys = append(s.keys, h^salt)
			}
		}
		var out []byte
		if failures > 0 {
			failures--
		} else if b.p.f == 8 {
			if f, err := xorfilter.BuildBinaryFuse[uint8](&s.b, s.keys); err == nil {
				out = fuseBlock(f.Fingerprints, 8, hs.len(), salt, f.Seed, f.SegmentLength, f.SegmentCount)
			}
		} else {
			if f, err := xorfilter.BuildBinaryFuse[uint16](&s.b, s.keys); err == nil {
				out = fuseBlock(f.Fingerprints, 16, hs.len(), salt, f.Seed, f.SegmentLength, f.SegmentCount)
			}
		}
		if out != nil {
			b.report.Retries = attempt
			return out
		}
	}
	b.report.Retries = fuseAttempts - 1
	b.report.FellBack = true
	return fallbackBloom(hs, fuseFallbackBits(b.p.f))
}

// fuseFallbackBits is the bits/key of the Bloom block written when a fuse
// construction fails: about the fuse filter's own size.
func fuseFallbackBits(f int) float64 { return 1.125 * float64(f) }

// fallbackBloom builds the blocked Bloom block of hs at bitsPerKey.
func fallbackBloom(hs hashList, bitsPerKey float64) []byte {
	bb := Bloom(bitsPerKey).NewBuilder().(*blockedBuilder)
	bb.hashCollector = hashCollector{chunks: hs.chunks, n: hs.n}
	return bb.Finish()
}

// fuseBlock lays out a block: the fingerprints (fps is []uint8 or
// []uint16), then the trailer.
func fuseBlock[T uint8 | uint16](fps []T, f, n int, salt, seed uint64, segLen, segCount uint32) []byte {
	w := f / 8
	out := make([]byte, len(fps)*w+fuseTrailerLen)
	for i, v := range fps {
		if w == 1 {
			out[i] = byte(v)
		} else {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
		}
	}
	t := out[len(fps)*w:]
	binary.LittleEndian.PutUint64(t[0:], uint64(n))
	binary.LittleEndian.PutUint64(t[8:], salt)
	binary.LittleEndian.PutUint64(t[16:], seed)
	binary.LittleEndian.PutUint32(t[24:], segLen)
	binary.LittleEndian.PutUint32(t[28:], segCount)
	t[32] = byte(f)
	t[33] = fuseVersion
	t[34] = byte(FormatBinaryFuse)
	return out
}

// fuseGeom is the geometry of a block, shared by its readers.
type fuseGeom struct {
	salt, seed  uint64
	segLen      uint32 // L, a power of two
	segCountLen uint32 // S·L
}

// fuseMix is the library's hash of a (salted) key hash: murmur64's
// finalizer of key + seed.
func fuseMix(x, seed uint64) uint64 { return mix64(x + seed) }

// slots returns the fingerprint and the three slots of hash h.
func (g *fuseGeom) slots(h uint64) (fp uint64, h0, h1, h2 uint32) {
	x := fuseMix(h^g.salt, g.seed)
	hi, _ := bits.Mul64(x, uint64(g.segCountLen))
	h0 = uint32(hi)
	h1 = h0 + g.segLen
	h2 = h1 + g.segLen
	h1 ^= uint32(x>>18) & (g.segLen - 1)
	h2 ^= uint32(x) & (g.segLen - 1)
	return x ^ x>>32, h0, h1, h2
}

type fuse8Reader struct {
	g   fuseGeom
	fps []byte
}

func (r *fuse8Reader) MayContain(key []byte) bool { return r.MayContainHash(hashKey(key)) }

// MayContainHash implements HashReader.
func (r *fuse8Reader) MayContainHash(h uint64) bool {
	fp, h0, h1, h2 := r.g.slots(h)
	return byte(fp)^r.fps[h0]^r.fps[h1]^r.fps[h2] == 0
}

type fuse16Reader struct {
	g   fuseGeom
	fps []byte
}

func (r *fuse16Reader) MayContain(key []byte) bool { return r.MayContainHash(hashKey(key)) }

// MayContainHash implements HashReader.
func (r *fuse16Reader) MayContainHash(h uint64) bool {
	fp, h0, h1, h2 := r.g.slots(h)
	le := binary.LittleEndian
	return uint16(fp)^le.Uint16(r.fps[2*h0:])^le.Uint16(r.fps[2*h1:])^le.Uint16(r.fps[2*h2:]) == 0
}

func openFuse(data []byte) (Reader, error) {
	t, err := blockTrailer(data, fuseTrailerLen, "binary fuse")
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	n := le.Uint64(t[0:])
	g := fuseGeom{salt: le.Uint64(t[8:]), seed: le.Uint64(t[16:]), segLen: le.Uint32(t[24:])}
	segCount := le.Uint32(t[28:])
	f, ver := int(t[32]), t[33]
	body := uint64(len(data) - fuseTrailerLen)
	switch {
	case ver != fuseVersion:
		return nil, malformed("binary fuse block of version %d, want %d", ver, fuseVersion)
	case f != 8 && f != 16:
		return nil, malformed("binary fuse block has %d-bit fingerprints, want 8 or 16", f)
	case n == 0 && (segCount != 0 || body != 0):
		return nil, malformed("binary fuse block of no keys has %d segments and %d body bytes", segCount, body)
	case n == 0:
		return emptyFilter{}, nil
	case g.segLen == 0 || g.segLen&(g.segLen-1) != 0 || g.segLen > fuseMaxSegLen:
		return nil, malformed("binary fuse block has segment length %d, want a power of two ≤ %d", g.segLen, fuseMaxSegLen)
	case segCount == 0 || (uint64(segCount)+2)*uint64(g.segLen) > 1<<32-1:
		return nil, malformed("binary fuse block has %d segments of %d", segCount, g.segLen)
	case body != (uint64(segCount)+2)*uint64(g.segLen)*uint64(f/8):
		return nil, malformed("binary fuse block has %d body bytes for %d+2 segments of %d %d-bit fingerprints", body, segCount, g.segLen, f)
	case n > uint64(segCount+2)*uint64(g.segLen):
		return nil, malformed("binary fuse block claims %d keys in %d slots", n, uint64(segCount+2)*uint64(g.segLen))
	}
	g.segCountLen = segCount * g.segLen
	if f == 8 {
		return &fuse8Reader{g: g, fps: data[:body]}, nil
	}
	return &fuse16Reader{g: g, fps: data[:body]}, nil
}
