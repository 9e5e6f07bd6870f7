package prefetch

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// A prefetch must not fault or write, whatever the slice's length and
// alignment (including a last byte at the very end of an allocation).
func TestReadAnySlice(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := append([]byte(nil), buf...)
	Read(nil)
	Read(buf[:0])
	Write(nil)
	Write(buf[:0])
	for _, off := range []int{0, 1, 63, 64, 65, 4000, 4095} {
		for _, n := range []int{1, 2, 63, 64, 65, 128, 1000} {
			if off+n > len(buf) {
				continue
			}
			Read(buf[off : off+n])
			Write(buf[off : off+n])
		}
	}
	Read(buf)
	require.Equal(t, want, buf)
}

func BenchmarkRead2KiB(b *testing.B) {
	buf := make([]byte, 2048)
	for b.Loop() {
		Read(buf)
	}
}

// TestObject: Object on a struct, on nil and on a zero size changes
// nothing and does not fault.
func TestObject(t *testing.T) {
	v := struct{ a, b [40]uint64 }{}
	v.a[0] = 7
	Object(unsafe.Pointer(&v), unsafe.Sizeof(v))
	Object(nil, 64)
	Object(unsafe.Pointer(&v), 0)
	if v.a[0] != 7 {
		t.Fatal("Object changed memory")
	}
}
