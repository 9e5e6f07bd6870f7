package sketchcol

import "fmt"

// Every value and operand of the sketch column family starts with a kind
// byte; all but the HyperLogLog value (whose first byte is the 'H' of
// Redis's "HYLL") follow it with a version byte. The codes are one linear
// enum, never reused (FORMAT.md, "Kinds").
const (
	kindSet        = 0x01 // operand: replace the value (Restore)
	kindHLLOp      = 0x10 // operand: raise HLL registers
	kindBloomValue = 0x20 // value: scalable Bloom filter
	kindBloomOp    = 0x21 // operand: Bloom adds
	// 0x22, 0x23: the paged Bloom header and its operand; 0x28, 0x29: a
	// Bloom page and its operand (pbloom.go, pbloom_page.go)
	kindCuckooValue = 0x30 // value: scalable cuckoo filter
	kindCuckooOp    = 0x31 // operand: cuckoo add/addnx/delete records
	kindCMSValue    = 0x40 // value: Count-Min sketch
	kindCMSOp       = 0x41 // operand: Count-Min increments
	kindTopKValue   = 0x50 // value: Top-K (HeavyKeeper)
	kindTopKOp      = 0x51 // operand: Top-K adds
	// 0x42..0x44, 0x4a, 0x4b: the paged Count-Min header, its operand,
	// dump, page and page operand (cms_paged.go); 0x52..0x54, 0x58, 0x59:
	// the paged Top-K's (topk_paged.go); 0x60, 0x68, 0x69: a paged
	// string's header, page and page operand (strpage.go)
	kindHLLValue = 'H' // value: Redis HyperLogLog ("HYLL" magic)

	version1 = 1
)

// Kind is the kind of sketch a key holds.
type Kind uint8

const (
	KindNone   Kind = iota // no value
	KindHLL                // HyperLogLog (Redis format)
	KindBloom              // scalable Bloom filter
	KindCuckoo             // scalable cuckoo filter
	KindCMS                // Count-Min sketch
	KindTopK               // Top-K (HeavyKeeper)
)

func (k Kind) String() string {
	switch k {
	case KindHLL:
		return "hyperloglog"
	case KindBloom:
		return "bloom"
	case KindCuckoo:
		return "cuckoo"
	case KindCMS:
		return "count-min"
	case KindTopK:
		return "topk"
	}
	return "none"
}

// kindName names a kind byte in error messages.
func kindName(b byte) string {
	switch b {
	case kindSet:
		return "set operand"
	case kindHLLOp:
		return "HLL operand"
	case kindBloomValue:
		return "Bloom value"
	case kindBloomOp:
		return "Bloom operand"
	case kindCuckooValue:
		return "cuckoo value"
	case kindCuckooOp:
		return "cuckoo operand"
	case kindHLLValue:
		return "HLL value"
	case kindCMSValue:
		return "Count-Min value"
	case kindCMSOp:
		return "Count-Min operand"
	case kindTopKValue:
		return "Top-K value"
	case kindTopKOp:
		return "Top-K operand"
	case kindPagedBloom:
		return "paged Bloom header"
	case kindPagedBloomDump:
		return "paged Bloom dump"
	case kindPagedBloomOp:
		return "paged Bloom operand"
	case kindBloomPage:
		return "Bloom page"
	case kindBloomPageOp:
		return "Bloom page operand"
	case kindPagedCuckoo:
		return "paged cuckoo header"
	case kindPagedCuckooOp:
		return "paged cuckoo operand"
	case kindPagedCuckooDump:
		return "paged cuckoo dump"
	case kindCuckooPage:
		return "cuckoo page"
	case kindCuckooPageOp:
		return "cuckoo page operand"
	case kindPagedCMS:
		return "paged Count-Min header"
	case kindPagedCMSOp:
		return "paged Count-Min operand"
	case kindPagedCMSDump:
		return "paged Count-Min dump"
	case kindPagedTopK:
		return "paged Top-K header"
	case kindPagedTopKOp:
		return "paged Top-K operand"
	case kindPagedTopKDump:
		return "paged Top-K dump"
	case kindStrHeader:
		return "paged string header"
	case kindStrPage:
		return "string page"
	case kindStrPageOp:
		return "string page operand"
	}
	return "unknown kind"
}

// checkValueKind checks the kind and version bytes of one of sieve's own
// values or operands.
func checkValueKind(data []byte, want byte) error {
	switch {
	case len(data) < 2:
		return corruptf("%s of %d bytes has no kind and version", kindName(want), len(data))
	case data[0] != want:
		return corruptf("%s expected, found %s (kind byte %#02x)", kindName(want), kindName(data[0]), data[0])
	case data[1] != version1:
		return corruptf("%s has unknown version %d", kindName(want), data[1])
	}
	return nil
}

// checkValueHeader is checkValueKind for a value whose fixed header is
// headerLen bytes, which it checks are there.
func checkValueHeader(data []byte, want byte, headerLen int) error {
	if err := checkValueKind(data, want); err != nil {
		return err
	}
	if len(data) < headerLen {
		return corruptf("%s of %d bytes is shorter than its %d-byte header", kindName(want), len(data), headerLen)
	}
	return nil
}

// KindOf returns the kind of sketch a stored value holds, from its first
// byte only; ValidateValue checks the whole value.
func KindOf(value []byte) (Kind, error) {
	if len(value) == 0 {
		return KindNone, corruptf("empty sketch value")
	}
	switch value[0] {
	case kindHLLValue:
		return KindHLL, nil
	case kindBloomValue, kindPagedBloom, kindPagedBloomDump:
		return KindBloom, nil
	case kindCuckooValue, kindPagedCuckoo, kindPagedCuckooDump:
		return KindCuckoo, nil
	case kindCMSValue, kindPagedCMS, kindPagedCMSDump:
		return KindCMS, nil
	case kindTopKValue, kindPagedTopK, kindPagedTopKDump:
		return KindTopK, nil
	}
	return KindNone, corruptf("not a sketch value: %s (kind byte %#02x)", kindName(value[0]), value[0])
}

// expectKind checks that a stored value (nil = missing key) holds want:
// ErrWrongType when it holds another kind of sketch, an error wrapping
// ErrCorruption when it is no sketch value at all.
func expectKind(cur []byte, want Kind) error {
	if cur == nil {
		return nil
	}
	k, err := KindOf(cur)
	if err != nil {
		return err
	}
	if k != want {
		return fmt.Errorf("%w: key holds a %s, not a %s", ErrWrongType, k, want)
	}
	return nil
}
