package filter

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestFormatGolden pins the bytes of small blocks and values of every format
// as annotated dumps (testdata/format.golden). Any change to hashing, probe
// positions or layout shows up here as a readable diff; regenerate with
//
//	go test ./filter/ -run TestFormatGolden -rewrite
//
// and review it: a changed layout needs a new format code (FORMAT.md).
func TestFormatGolden(t *testing.T) {
	var out strings.Builder
	for _, p := range []Policy{Bloom(10), Bloom(3), StandardBloom(10), Cuckoo(12), Cuckoo(7)} {
		for _, n := range []int{1, 40} {
			b := p.NewBuilder()
			for i := range n {
				b.Add(fmt.Appendf(nil, "key%013d", i))
			}
			data := b.Finish()
			info, err := Inspect(data)
			require.NoError(t, err)
			fmt.Fprintf(&out, "== %s over key0000000000000..%d\n%s\n", p.Name(), n-1, info)
			dumpBlock(&out, data, info)
		}
	}
	bf, err := NewStandardBloomFilter(20, 0.1)
	require.NoError(t, err)
	cf, err := NewCuckooTableFilter(10, 12)
	require.NoError(t, err)
	for _, k := range []string{"apple", "pear", "plum"} {
		bf.Add([]byte(k))
		require.NoError(t, cf.Add([]byte(k)))
	}
	benc, _ := bf.MarshalBinary()
	cenc, _ := cf.MarshalBinary()
	fmt.Fprintf(&out, "== StandardBloomFilter(20, 0.1) with apple, pear, plum\n")
	dumpFields(&out, benc, []field{{"code", 1}, {"k", 1}, {"m", 8}, {"capacity", 8}, {"errorRate", 8}, {"count", 8}})
	dumpRows(&out, "bits", benc[bloomValueHeaderLen:], 16)
	fmt.Fprintf(&out, "== CuckooTableFilter(10, 12) with apple, pear, plum\n")
	dumpFields(&out, cenc, []field{{"code", 1}, {"f", 1}, {"N", 4}, {"capacity", 8}, {"count", 8}})
	dumpRows(&out, "bucket", cenc[cuckooValueHeaderLen:], 6)

	testutil.Golden(t, filepath.Join("testdata", "format.golden"), out.String(), "format changed; see the test's comment")
}

type field struct {
	name string
	size int
}

// dumpFields prints consecutive little-endian fields of b.
func dumpFields(out *strings.Builder, b []byte, fs []field) {
	for _, f := range fs {
		var v uint64
		switch f.size {
		case 1:
			v = uint64(b[0])
		case 4:
			v = uint64(binary.LittleEndian.Uint32(b))
		case 8:
			v = binary.LittleEndian.Uint64(b)
		}
		fmt.Fprintf(out, "  %-9s %-16s = %d\n", f.name, hex.EncodeToString(b[:f.size]), v)
		b = b[f.size:]
	}
}

func dumpRows(out *strings.Builder, what string, b []byte, width int) {
	for i := 0; i < len(b); i += width {
		fmt.Fprintf(out, "  %s %3d: %s\n", what, i/width, hex.EncodeToString(b[i:min(i+width, len(b))]))
	}
}

func dumpBlock(out *strings.Builder, data []byte, info BlockInfo) {
	switch info.Format {
	case FormatBlockedBloom:
		for l := range int(info.Lines) {
			line := data[l*lineBytes : (l+1)*lineBytes]
			fmt.Fprintf(out, "  line %d (selector %d):\n", l, line[lineBytes-1]>>(8-info.SelectorBits))
			dumpRows(out, "   ", line, 32)
		}
		dumpFields(out, data[len(data)-blockedTrailerLen:], []field{{"n", 8}, {"L", 4}, {"k", 1}, {"c", 1}, {"code", 1}})
	case FormatStandardBloom:
		dumpRows(out, "bits", data[:len(data)-standardTrailerLen], 32)
		dumpFields(out, data[len(data)-standardTrailerLen:], []field{{"n", 8}, {"m", 8}, {"k", 1}, {"code", 1}})
	case FormatCuckoo:
		l := newCuckooLayout(info.FingerprintBits)
		for i := range info.Buckets {
			w := l.load(data, i)
			fmt.Fprintf(out, "  bucket %2d: %s slots %x %x %x %x\n", i,
				hex.EncodeToString(data[uint64(i)*l.stride:uint64(i+1)*l.stride]),
				l.slot(w, 0), l.slot(w, 1), l.slot(w, 2), l.slot(w, 3))
		}
		dumpFields(out, data[len(data)-cuckooTrailerLen:], []field{{"n", 8}, {"entries", 8}, {"N", 4}, {"f", 1}, {"code", 1}})
	}
}
