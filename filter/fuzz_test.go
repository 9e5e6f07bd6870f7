package filter

import (
	"bytes"
	"errors"
	"testing"
)

// Fuzz targets for every decoder. Seed corpora live in
// testdata/fuzz/<FuzzName>/ (written by gen_fuzz_seeds.go); run one with
//
//	go test -run '^$' -fuzz '^FuzzOpenBlock$' -fuzztime 60s ./filter/

// FuzzOpenBlock feeds arbitrary bytes to OpenBlock and, when they are
// accepted, probes the reader and checks Inspect agrees.
func FuzzOpenBlock(f *testing.F) {
	for _, p := range tablePolicies {
		f.Add(build(p, randomKeys(61, 10)))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := OpenBlock(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType) {
				t.Fatalf("error wraps neither ErrMalformed nor ErrUnknownType: %v", err)
			}
			return
		}
		for _, k := range [][]byte{nil, []byte("a"), data} {
			r.MayContain(k)
		}
		if _, err := Inspect(data); err != nil {
			t.Fatalf("OpenBlock accepted what Inspect rejects: %v", err)
		}
	})
}

// FuzzBuildRoundTrip builds each policy's block from fuzzed keys and checks
// that every key is found.
func FuzzBuildRoundTrip(f *testing.F) {
	f.Add([]byte("a\x00bb\x00ccc"), uint8(0))
	f.Add([]byte("\x00\x00\x00"), uint8(2))
	f.Fuzz(func(t *testing.T, blob []byte, which uint8) {
		p := []Policy{Bloom(1 + float64(which%40)), StandardBloom(1 + float64(which%40)), Cuckoo(4 + int(which%13)),
			BinaryFuse(8 + 8*int(which%2)), Ribbon(1 + float64(which%60)/4)}[which%5]
		keys := bytes.Split(blob, []byte{0})
		b := p.NewBuilder()
		for _, k := range keys {
			b.Add(k)
		}
		r, err := OpenBlock(b.Finish())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !r.MayContain(k) {
				t.Fatalf("%s: false negative for %q", p.Name(), k)
			}
		}
	})
}

// FuzzBloomUnmarshal: accepted input re-encodes to itself, and the decoded
// filter works.
func FuzzBloomUnmarshal(f *testing.F) {
	bf, _ := NewStandardBloomFilter(20, 0.01)
	bf.Add([]byte("x"))
	enc, _ := bf.MarshalBinary()
	f.Add(enc)
	f.Add([]byte{byte(FormatStandardBloomValue)})
	f.Fuzz(func(t *testing.T, data []byte) {
		var g StandardBloomFilter
		if err := g.UnmarshalBinary(data); err != nil {
			return
		}
		again, err := g.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs (%v)", err)
		}
		g.Add(data)
		if !g.Test(data) {
			t.Fatal("false negative after Add")
		}
		_ = g.EstimatedCount() + g.ExpectedFPR()
	})
}

// FuzzCuckooUnmarshal: accepted input re-encodes to itself, and the decoded
// filter survives adds and deletes without losing a key.
func FuzzCuckooUnmarshal(f *testing.F) {
	cf, _ := NewCuckooTableFilter(20, 12)
	_ = cf.Add([]byte("x"))
	enc, _ := cf.MarshalBinary()
	f.Add(enc, []byte("key"))
	f.Add([]byte{byte(FormatCuckooTableValue), 13}, []byte{})
	f.Fuzz(func(t *testing.T, data, key []byte) {
		var c CuckooTableFilter
		if err := c.UnmarshalBinary(data); err != nil {
			return
		}
		again, err := c.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs (%v)", err)
		}
		if c.Add(key) == nil {
			if !c.Test(key) {
				t.Fatal("false negative after Add")
			}
			if !c.Delete(key) {
				t.Fatal("Delete of an added key not found")
			}
		}
		_ = c.Count(key)
		if c.Len() > 4*uint64(c.Buckets()) {
			t.Fatalf("Len %d exceeds %d slots", c.Len(), 4*c.Buckets())
		}
	})
}

// FuzzFuseRibbonBlock starts from valid binary fuse and Ribbon blocks and
// lets the fuzzer change their bytes: the decoders must refuse
// inconsistent geometry as ErrMalformed (or the code as unknown) and never
// panic or read outside the block, and a block they accept must answer
// for every key.
func FuzzFuseRibbonBlock(f *testing.F) {
	for _, p := range []Policy{BinaryFuse(8), BinaryFuse(16), Ribbon(7), Ribbon(2.5), Ribbon(13)} {
		for _, n := range []int{0, 1, 5, 200} {
			f.Add(build(p, randomKeys(uint64(n), n)))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := OpenBlock(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType) {
				t.Fatalf("error wraps neither ErrMalformed nor ErrUnknownType: %v", err)
			}
			return
		}
		for i := range 64 {
			r.MayContain([]byte{byte(i), byte(i >> 3)})
		}
		r.MayContain(data)
		info, err := Inspect(data)
		if err != nil {
			t.Fatalf("OpenBlock accepted what Inspect rejects: %v", err)
		}
		_ = info.String()
		_ = info.ExpectedFPR()
	})
}
