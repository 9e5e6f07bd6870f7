package prefetch

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Hints for slices that end exactly where a PROT_NONE page begins: a hint
// that turned into a real load past the slice would fault here.
func TestReadBeforeGuardPage(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	require.NoError(t, syscall.Mprotect(mem[page:], syscall.PROT_NONE))
	for _, n := range []int{1, 7, 63, 64, 65, 1000, page} {
		b := mem[page-n : page]
		for i := range b {
			b[i] = byte(i)
		}
		Read(b)
		Write(b)
		for i := range b {
			require.Equal(t, byte(i), b[i])
		}
	}
}
