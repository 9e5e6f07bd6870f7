package sketchcol

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// The merge algebra, tested as a property: for random histories of
// commands on one key, every way the engine may group the operands —
// partial merges of any adjacent runs, nested, and full merges at any
// cut (a compaction reaching the base) — gives byte for byte the value of
// applying the commands one at a time to an in-memory sketch.

// histOp is one command of a history: the operand the Store writes, and
// the command applied in memory, one item at a time through the sketch
// types' own methods.
type histOp struct {
	name    string
	operand []byte
	apply   func(t *testing.T, s sketch) sketch
}

type histGen struct {
	rng    *rand.Rand
	family Kind // the family most ops are drawn from
}

func (g *histGen) items(prefix string, max int) [][]byte {
	n := g.rng.IntN(max + 1)
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s%d", prefix, g.rng.IntN(400))
	}
	return out
}

func (g *histGen) bloomSpec() BloomSpec {
	s := BloomSpec{ErrorRate: []float64{0.1, 0.01, 0.001}[g.rng.IntN(3)], Capacity: int64(5 + g.rng.IntN(40)), Expansion: 1 + g.rng.IntN(3)}
	if g.rng.IntN(4) == 0 {
		s.NonScaling, s.Expansion = true, 0
	}
	return s
}

func (g *histGen) cuckooSpec() CuckooSpec {
	bs := 1 + g.rng.IntN(4)
	return CuckooSpec{Capacity: int64(2*bs + g.rng.IntN(40)), BucketSize: bs, MaxIterations: 1 + g.rng.IntN(30), Expansion: g.rng.IntN(4)}
}

// next returns a random command, mostly of g.family.
func (g *histGen) next(t *testing.T) histOp {
	fam := g.family
	if g.rng.IntN(10) == 0 {
		fam = Kind(1 + g.rng.IntN(3))
	}
	if g.rng.IntN(25) == 0 {
		return g.setOp(t, fam)
	}
	switch fam {
	case KindHLL:
		return g.hllOp(t)
	case KindBloom:
		return g.bloomOp(t)
	default:
		return g.cuckooOp(t)
	}
}

func (g *histGen) hllOp(t *testing.T) histOp {
	if g.rng.IntN(6) == 0 { // PFMERGE from a source built in memory
		src := NewHLL()
		for range g.rng.IntN(3000) {
			src.Add(fmt.Appendf(nil, "m%d", g.rng.IntN(100000)))
		}
		v := src.Bytes()
		o, err := PFMergeOp(v)
		require.NoError(t, err)
		return histOp{"pfmerge", o, func(t *testing.T, s sketch) sketch {
			if s == nil {
				s = NewHLL()
			}
			if h, ok := s.(*HLL); ok {
				p, err := ParseHLL(v)
				require.NoError(t, err)
				h.Merge(p)
			}
			return s
		}}
	}
	elems := g.items("e", 30)
	if g.rng.IntN(20) == 0 { // big enough to cross to dense
		for range 2500 {
			elems = append(elems, fmt.Appendf(nil, "b%d", g.rng.Uint64()))
		}
	}
	return histOp{fmt.Sprintf("pfadd×%d", len(elems)), PFAddOp(elems...), func(t *testing.T, s sketch) sketch {
		if s == nil {
			s = NewHLL()
		}
		if h, ok := s.(*HLL); ok {
			for _, e := range elems {
				h.Add(e)
			}
		}
		return s
	}}
}

func (g *histGen) bloomOp(t *testing.T) histOp {
	var spec *BloomSpec
	if g.rng.IntN(3) == 0 {
		s := g.bloomSpec()
		spec = &s
	}
	if spec != nil && g.rng.IntN(3) == 0 {
		o, err := BFReserveOp(*spec)
		require.NoError(t, err)
		return histOp{"bf.reserve", o, func(t *testing.T, s sketch) sketch {
			if s == nil {
				b, err := NewScalableBloom(*spec)
				require.NoError(t, err)
				return b
			}
			return s
		}}
	}
	items := g.items("i", 40)
	o, err := BFAddOp(spec, items...)
	require.NoError(t, err)
	return histOp{fmt.Sprintf("bf.add×%d", len(items)), o, func(t *testing.T, s sketch) sketch {
		if s == nil {
			sp := DefaultBloomSpec()
			if spec != nil {
				sp = *spec
			}
			b, err := NewScalableBloom(sp)
			require.NoError(t, err)
			s = b
		}
		if b, ok := s.(*ScalableBloom); ok {
			for _, it := range items {
				_, _ = b.addHash(itemHash(it), true)
			}
		}
		return s
	}}
}

func (g *histGen) cuckooOp(t *testing.T) histOp {
	var spec *CuckooSpec
	if g.rng.IntN(3) == 0 {
		s := g.cuckooSpec()
		spec = &s
	}
	newCF := func(t *testing.T) *CuckooFilter {
		sp := DefaultCuckooSpec()
		if spec != nil {
			sp = *spec
		}
		c, err := NewCuckooFilter(sp)
		require.NoError(t, err)
		return c
	}
	var (
		o    []byte
		err  error
		kind byte
		name string
	)
	items := g.items("c", 30)
	switch g.rng.IntN(5) {
	case 0:
		if spec != nil {
			o, err = CFReserveOp(*spec)
			require.NoError(t, err)
			return histOp{"cf.reserve", o, func(t *testing.T, s sketch) sketch {
				if s == nil {
					return newCF(t)
				}
				return s
			}}
		}
		fallthrough
	case 1, 2:
		o, err = CFAddOp(spec, items...)
		kind, name = cuckooAdd, "cf.add"
	case 3:
		o, err = CFAddNXOp(spec, items...)
		kind, name = cuckooAddNX, "cf.addnx"
	case 4:
		items = items[:min(len(items), 1)]
		if len(items) == 0 {
			items = [][]byte{[]byte("c1")}
		}
		spec = nil
		o = CFDelOp(items[0])
		kind, name = cuckooDel, "cf.del"
	}
	require.NoError(t, err)
	return histOp{fmt.Sprintf("%s×%d", name, len(items)), o, func(t *testing.T, s sketch) sketch {
		if s == nil {
			s = newCF(t)
		}
		if c, ok := s.(*CuckooFilter); ok {
			for _, it := range items {
				switch kind {
				case cuckooAdd:
					if c.Add(it) != nil {
						c.dropped++
					}
				case cuckooAddNX:
					if _, err := c.AddNX(it); err != nil {
						c.dropped++
					}
				case cuckooDel:
					c.Delete(it)
				}
			}
		}
		return s
	}}
}

// setOp is Restore of a value of family fam, built in memory (for HLL
// sometimes non-canonical: dense with few registers, as Redis's PFMERGE
// writes).
func (g *histGen) setOp(t *testing.T, fam Kind) histOp {
	v := g.value(t, fam)
	o, err := SetOp(v)
	require.NoError(t, err)
	return histOp{"restore-" + fam.String(), o, func(t *testing.T, _ sketch) sketch {
		s, err := decodeValue(v)
		require.NoError(t, err)
		return s
	}}
}

// value returns a value of family fam built in memory.
func (g *histGen) value(t *testing.T, fam Kind) []byte {
	var v []byte
	switch fam {
	case KindHLL:
		h := NewHLL()
		for range g.rng.IntN(50) {
			h.Add(fmt.Appendf(nil, "s%d", g.rng.IntN(1000)))
		}
		v = h.Bytes()
		if g.rng.IntN(2) == 0 {
			v = appendDense(append([]byte(nil), v[:hllHeaderLen]...), &h.reg)
			v[4] = hllEncDense
		}
	case KindBloom:
		b, err := NewScalableBloom(g.bloomSpec())
		require.NoError(t, err)
		for _, it := range g.items("i", 60) {
			_, _ = b.addHash(itemHash(it), true)
		}
		v, _ = b.MarshalBinary()
	default:
		c, err := NewCuckooFilter(g.cuckooSpec())
		require.NoError(t, err)
		for _, it := range g.items("c", 30) {
			_ = c.Add(it)
		}
		v, _ = c.MarshalBinary()
	}
	return v
}

// mergeInAnyGrouping collapses operands the way an LSM may: cut into
// segments, each first partially merged over random adjacent runs
// (nested), then full-merged onto the value of the segments before it.
// It returns the value after every segment.
func mergeInAnyGrouping(t *testing.T, rng *rand.Rand, base []byte, ops [][]byte) (values [][]byte, cuts []int) {
	var m Merger
	hasBase := base != nil
	for start := 0; start < len(ops); {
		end := start + 1 + rng.IntN(len(ops)-start)
		seg := append([][]byte(nil), ops[start:end]...)
		for range rng.IntN(2 * len(seg)) {
			if len(seg) < 2 {
				break
			}
			i := rng.IntN(len(seg) - 1)
			j := i + 2 + rng.IntN(len(seg)-i-1)
			merged, ok := m.PartialMerge(nil, seg[i:j])
			if !ok {
				continue
			}
			seg = append(append(append([][]byte(nil), seg[:i]...), merged), seg[j:]...)
		}
		v, err := m.FullMerge(nil, base, hasBase, seg)
		require.NoError(t, err)
		base, hasBase = v, true
		values = append(values, v)
		cuts = append(cuts, end)
		start = end
	}
	return values, cuts
}

func TestMergeAlgebra(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	histories := 150
	if testing.Short() {
		histories = 30
	}
	for h := range histories {
		g := &histGen{rng: rng, family: Kind(1 + h%3)}
		n := 1 + rng.IntN(25)
		hist := make([]histOp, n)
		ops := make([][]byte, n)
		for i := range hist {
			hist[i] = g.next(t)
			ops[i] = hist[i].operand
		}
		// The key starts missing, or (a third of the time) with a value
		// stored by a Put (Restore), possibly of another kind.
		var base []byte
		var s sketch
		if rng.IntN(3) == 0 {
			base = g.value(t, Kind(1+rng.IntN(3)))
			var err error
			s, err = decodeValue(base)
			require.NoError(t, err)
		}
		// The reference: one command at a time, in memory.
		want := make([][]byte, n+1)
		for i, op := range hist {
			s = op.apply(t, s)
			want[i+1] = s.appendValue(nil)
		}
		for grouping := range 4 {
			values, cuts := mergeInAnyGrouping(t, rng, base, ops)
			for k, v := range values {
				if string(v) != string(want[cuts[k]]) {
					names := make([]string, n)
					for i := range hist {
						names[i] = hist[i].name
					}
					t.Fatalf("history %d, grouping %d: value after %d commands differs from one-at-a-time\ncommands: %v\ncuts: %v",
						h, grouping, cuts[k], names, cuts)
				}
			}
		}
	}
}

// TestPartialMergeKinds checks what PartialMerge folds and what it leaves.
func TestPartialMergeKinds(t *testing.T) {
	var m Merger
	bf, err := BFAddOp(nil, []byte("x"))
	require.NoError(t, err)
	cf, err := CFAddOp(nil, []byte("x"))
	require.NoError(t, err)
	hv := NewHLL()
	hv.Add([]byte("v"))
	set, err := SetOp(hv.Bytes())
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		operands [][]byte
		ok       bool
		kind     byte
	}{
		{"hll+hll", [][]byte{PFAddOp([]byte("a")), PFAddOp([]byte("b"))}, true, kindHLLOp},
		{"bloom+bloom", [][]byte{bf, bf}, true, kindBloomOp},
		{"cuckoo+cuckoo", [][]byte{cf, cf}, true, kindCuckooOp},
		{"single", [][]byte{cf}, true, kindCuckooOp},
		{"hll+bloom: base decides", [][]byte{PFAddOp([]byte("a")), bf}, false, 0},
		{"bloom, set(hll), hll: set wins", [][]byte{bf, set, PFAddOp([]byte("a"))}, true, kindSet},
		{"set(hll), bloom: bloom dropped", [][]byte{set, bf}, true, kindSet},
		{"corrupt operand", [][]byte{PFAddOp([]byte("a")), {kindHLLOp, 9}}, false, 0},
		{"value as operand", [][]byte{hv.Bytes()}, false, 0},
		{"none", nil, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := m.PartialMerge([]byte("k"), tc.operands)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.kind, got[0])
			}
		})
	}
}

// TestMergeWrongType: commands of another kind than the key's are dropped
// by the merge (the Store's reading commands return ErrWrongType), and the
// Reply helpers refuse them.
func TestMergeWrongType(t *testing.T) {
	var m Merger
	h := NewHLL()
	h.Add([]byte("a"))
	bf, err := BFAddOp(nil, []byte("x"))
	require.NoError(t, err)
	cf, err := CFAddOp(nil, []byte("x"))
	require.NoError(t, err)
	got, err := m.FullMerge(nil, h.Bytes(), true, [][]byte{bf, cf, PFAddOp([]byte("b"))})
	require.NoError(t, err)
	h.Add([]byte("b"))
	require.Equal(t, h.Bytes(), got)

	bloom, err := m.FullMerge(nil, nil, false, [][]byte{bf})
	require.NoError(t, err)
	_, err = PFAddReply(bloom, []byte("a"))
	require.ErrorIs(t, err, ErrWrongType)
	_, err = PFCountValues(h.Bytes(), bloom)
	require.ErrorIs(t, err, ErrWrongType)
	_, err = PFMergeOp(bloom)
	require.ErrorIs(t, err, ErrWrongType)
	_, err = CFExistsReply(bloom, []byte("x"))
	require.ErrorIs(t, err, ErrWrongType)
	_, err = BFExistsReply(h.Bytes(), []byte("x"))
	require.ErrorIs(t, err, ErrWrongType)
	_, err = BFAddReply(h.Bytes(), nil, []byte("x"))
	require.ErrorIs(t, err, ErrWrongType)
	_, err = CFDelReply(bloom, []byte("x"))
	require.ErrorIs(t, err, ErrWrongType)
	ok, err := BFExistsReply(bloom, []byte("x"))
	require.NoError(t, err)
	require.Equal(t, []bool{true}, ok)
}

// TestMergeCorruptOperand: a malformed operand or base fails FullMerge of
// its key with ErrCorruption (never a panic, never a silent answer) and
// PartialMerge declines it.
func TestMergeCorruptOperand(t *testing.T) {
	var m Merger
	good := PFAddOp([]byte("a"))
	bad := [][]byte{
		{},
		{0x77},
		{kindHLLOp},
		{kindHLLOp, 2, 0, 0},
		{kindHLLOp, 1, 0, 1, 0, 0, 0x10}, // rank 64
		{kindHLLOp, 1, 0, 2, 5, 0, 0x04, 5, 0, 0x04},
		{kindBloomOp, 1, 0, 1},
		{kindBloomOp, 1, 2, 0},
		{kindCuckooOp, 1, 0, 1, 9, 0, 0, 0, 0, 0, 0, 0, 0},
		{kindSet, 1, 'H', 'Y'},
		{'H', 'Y', 'L', 'L'},
	}
	for i, b := range bad {
		_, err := m.FullMerge([]byte("k"), nil, false, [][]byte{good, b})
		require.Error(t, err, "case %d", i)
		require.True(t, errors.Is(err, ErrCorruption), "case %d: %v", i, err)
		_, ok := m.PartialMerge([]byte("k"), [][]byte{good, b})
		require.False(t, ok, "case %d", i)
	}
	_, err := m.FullMerge([]byte("k"), []byte("not a sketch"), true, [][]byte{good})
	require.ErrorIs(t, err, ErrCorruption)
	_, err = m.FullMerge([]byte("k"), nil, false, nil)
	require.Error(t, err)
}
