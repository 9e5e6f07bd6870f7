package rangedel

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
)

// brute is MaxCovering computed from the tombstones themselves.
func brute(ts []Tombstone, key []byte, readSeq uint64) uint64 {
	var best uint64
	for _, t := range ts {
		if bytes.Compare(t.Start, key) <= 0 && bytes.Compare(key, t.End) < 0 && t.Seq <= readSeq && t.Seq > best {
			best = t.Seq
		}
	}
	return best
}

func randTombstones(rng *rand.Rand, n int) []Tombstone {
	ts := make([]Tombstone, n)
	for i := range ts {
		a, b := rng.Intn(50), rng.Intn(50)
		if a > b {
			a, b = b, a
		}
		ts[i] = Tombstone{Start: []byte(fmt.Sprintf("%02d", a)), End: []byte(fmt.Sprintf("%02d", b)), Seq: uint64(1 + rng.Intn(30))}
	}
	return ts
}

// TestBuildModel checks Build, Merge, Visible, Clip and the block
// round trip against the tombstones for random sets.
func TestBuildModel(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	checked := 0
	for round := 0; round < 300; round++ {
		ts := randTombstones(rng, rng.Intn(12))
		split := rng.Intn(len(ts) + 1)
		l := Build(ts)
		m := Merge(Build(ts[:split]), Build(ts[split:]))
		dec, err := Decode(Encode(nil, lFrags(l)))
		if err != nil {
			t.Fatalf("round %d: decode of encoded list: %v", round, err)
		}
		for k := 0; k < 52; k++ {
			key := []byte(fmt.Sprintf("%02d", k))
			for _, rs := range []uint64{0, 5, 15, 31} {
				want := brute(ts, key, rs)
				for name, got := range map[string]uint64{
					"build": l.MaxCovering(key, rs), "merge": m.MaxCovering(key, rs),
					"decoded": dec.MaxCovering(key, rs), "visible": l.Visible(rs).MaxCovering(key, ^uint64(0)),
				} {
					if got != want {
						t.Fatalf("round %d %s: MaxCovering(%s, %d) = %d, want %d (tombstones %v)", round, name, key, rs, got, want, ts)
					}
				}
				if want > 0 {
					checked++
				}
			}
		}
		lo, hi := []byte(fmt.Sprintf("%02d", rng.Intn(50))), []byte(fmt.Sprintf("%02d", rng.Intn(50)))
		clipped := &List{Frags: l.Clip(lo, hi)}
		for k := 0; k < 52; k++ {
			key := []byte(fmt.Sprintf("%02d", k))
			want := uint64(0)
			if bytes.Compare(lo, key) <= 0 && bytes.Compare(key, hi) < 0 {
				want = brute(ts, key, 100)
			}
			if got := clipped.MaxCovering(key, 100); got != want {
				t.Fatalf("round %d: clip [%s,%s) at %s = %d, want %d", round, lo, hi, key, got, want)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no covered key was checked")
	}
}

func lFrags(l *List) []Fragment {
	if l == nil {
		return nil
	}
	return l.Frags
}

// TestCompact checks that Compact keeps each stripe's newest tombstone
// and drops the oldest stripe's where allowed.
func TestCompact(t *testing.T) {
	l := Build([]Tombstone{{[]byte("a"), []byte("c"), 9}, {[]byte("a"), []byte("c"), 7}, {[]byte("b"), []byte("d"), 3}})
	stripe := func(s uint64) int { // one snapshot at 5
		if s <= 5 {
			return 0
		}
		return 1
	}
	out, dropped := Compact(l, stripe, nil)
	want := []Fragment{{[]byte("a"), []byte("b"), []uint64{9}}, {[]byte("b"), []byte("c"), []uint64{9, 3}}, {[]byte("c"), []byte("d"), []uint64{3}}}
	if !reflect.DeepEqual(out, want) || dropped != 2 {
		t.Fatalf("Compact = %v (%d dropped), want %v (2)", out, dropped, want)
	}
	out, dropped = Compact(l, stripe, func(_, _ []byte) bool { return true })
	want = []Fragment{{[]byte("a"), []byte("c"), []uint64{9}}}
	if !reflect.DeepEqual(out, want) || dropped != 4 {
		t.Fatalf("Compact with drops = %v (%d dropped), want %v (4)", out, dropped, want)
	}
}

// TestDecodeRejects lists blocks the decoder must refuse.
func TestDecodeRejects(t *testing.T) {
	enc := func(fs ...Fragment) []byte { return Encode(nil, fs) }
	for name, b := range map[string][]byte{
		"truncated":      enc(Fragment{[]byte("a"), []byte("b"), []uint64{1}})[:4],
		"empty range":    enc(Fragment{[]byte("a"), []byte("a"), []uint64{1}}),
		"reversed":       enc(Fragment{[]byte("b"), []byte("a"), []uint64{1}}),
		"overlap":        enc(Fragment{[]byte("a"), []byte("c"), []uint64{1}}, Fragment{[]byte("b"), []byte("d"), []uint64{1}}),
		"no seqs":        enc(Fragment{[]byte("a"), []byte("b"), nil}),
		"seqs ascending": enc(Fragment{[]byte("a"), []byte("b"), []uint64{1, 2}}),
		"seq too large":  enc(Fragment{[]byte("a"), []byte("b"), []uint64{1 << 60}}),
		"trailing":       append(enc(Fragment{[]byte("a"), []byte("b"), []uint64{1}}), 0),
		"huge count":     {0xff, 0xff, 0x03},
	} {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// FuzzDecode: the decoder never panics, and what it accepts encodes back
// to a block that decodes to the same list, whose lookups agree with its
// tombstones.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(nil, nil))
	f.Add(Encode(nil, []Fragment{{[]byte("a"), []byte("b"), []uint64{1}}}))
	f.Add(Encode(nil, []Fragment{{[]byte("a"), []byte("c"), []uint64{9, 7}}, {[]byte("c"), []byte("d"), []uint64{3}}}))
	f.Add(Encode(nil, []Fragment{{[]byte(""), []byte("\x00"), []uint64{1<<56 - 1}}}))
	f.Add([]byte{0xff, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Decode(b)
		if err != nil {
			return
		}
		l2, err := Decode(Encode(nil, lFrags(l)))
		if err != nil || !reflect.DeepEqual(l, l2) {
			t.Fatalf("round trip: %v, %v vs %v", err, l, l2)
		}
		ts := l.Tombstones()
		for _, fr := range lFrags(l) {
			for _, key := range [][]byte{fr.Start, fr.End} {
				if got, want := l.MaxCovering(key, ^uint64(0)), brute(ts, key, ^uint64(0)); got != want {
					t.Fatalf("MaxCovering(%q) = %d, want %d", key, got, want)
				}
			}
		}
	})
}
