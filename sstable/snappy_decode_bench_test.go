package sstable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/s2"
)

// benchBlockContents is a data block's worth of YCSB-like entries: 16-byte
// keys and 100-byte values made of 50 random printable bytes written twice.
func benchBlockContents(size int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var raw []byte
	for i := 0; len(raw) < size; i++ {
		raw = fmt.Appendf(raw, "\x00\x10\x64key%013d", 2*i)
		v := make([]byte, 50)
		for j := range v {
			v[j] = byte(' ' + r.IntN(95))
		}
		raw = append(append(raw, v...), v...)
	}
	return raw
}

// BenchmarkSnappyDecode compares golang/snappy's decoder with s2's on one
// 3 KiB data block in Snappy format (the format both read).
func BenchmarkSnappyDecode(b *testing.B) {
	raw := benchBlockContents(DefaultBlockSize)
	stored, _ := compressBlock(SnappyCompression, raw, make([]byte, s2.MaxEncodedLen(len(raw))))
	dst := make([]byte, len(raw))
	b.Run("golang-snappy", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for range b.N {
			if _, err := snappy.Decode(dst, stored); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("s2", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for range b.N {
			if _, err := s2.Decode(dst, stored); err != nil {
				b.Fatal(err)
			}
		}
	})
}
