package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

// writeLog records the sizes of the writes a Writer makes.
type writeLog struct {
	buf   bytes.Buffer
	sizes []int
}

func (l *writeLog) Write(p []byte) (int, error) {
	l.sizes = append(l.sizes, len(p))
	return l.buf.Write(p)
}

// TestWriterWritesWholeHugePages: a table reaches its file in writes of
// writeBufSize (2 MiB) at offsets that are multiples of it, all but the
// last, so that a file system caching in large folios can give each one a
// 2 MiB folio (see writeBufSize). Two tables written one after the other
// share a pooled buffer and each reads back whole.
func TestWriterWritesWholeHugePages(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 200)
	for round := 0; round < 2; round++ {
		var l writeLog
		w := NewWriter(&l, WriterOptions{})
		const n = 40000 // about 9 MiB before compression
		for i := 0; i < n; i++ {
			for j := range val {
				val[j] = byte(rng.Uint32())
			}
			k := base.MakeInternalKey([]byte(fmt.Sprintf("key%08d-%d", i, round)), uint64(i+1), base.KindSet)
			require.NoError(t, w.Add(k, val))
		}
		meta, err := w.Finish()
		require.NoError(t, err)
		require.Greater(t, len(l.sizes), 1, "a table of %d bytes should take more than one write", meta.Size)
		for i, s := range l.sizes[:len(l.sizes)-1] {
			require.Equal(t, writeBufSize, s, "write %d of %d", i, len(l.sizes))
		}
		require.EqualValues(t, l.buf.Len(), meta.Size)
		r := openTable(t, l.buf.Bytes(), ReaderOptions{})
		it := r.NewIter(nil, nil)
		count := 0
		for ok := it.First(); ok; ok = it.Next() {
			count++
		}
		require.NoError(t, it.Close())
		require.Equal(t, n, count)
		require.NoError(t, r.Close())
	}
}

// BenchmarkMappedFaultIn measures what a fresh read-only memory map of a
// 64 MiB file costs to fault in (one read per 4 KiB page, the map made
// and released in each iteration, the file in the page cache), for a file
// written in 256 KiB writes (the table writer's old buffer) and in
// writeBufSize writes. Where the file system caches 2 MiB-aligned 2 MiB
// writes in 2 MiB folios (ext4 and xfs on recent kernels), the second map
// is faulted in 2 MiB at a time (doc/performance.md):
//
//	go test -run=NONE -bench=BenchmarkMappedFaultIn ./sstable
func BenchmarkMappedFaultIn(b *testing.B) {
	const size = 64 << 20
	for _, ws := range []int{256 << 10, writeBufSize} {
		b.Run(fmt.Sprintf("writes=%dKiB", ws>>10), func(b *testing.B) {
			f := writeRandomFile(b, size, ws)
			b.SetBytes(size)
			var sum byte
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
				if err != nil {
					b.Fatal(err)
				}
				for off := 0; off < size; off += 4096 {
					sum += m[off]
				}
				if err := syscall.Munmap(m); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if sum == 1 {
				b.Log(sum) // keep the reads
			}
		})
	}
}

// BenchmarkMappedRandomRead measures a dependent random read (each offset
// computed from the byte read before, so that the misses do not overlap)
// from an already faulted-in read-only map of a 64 MiB file written in
// 256 KiB or writeBufSize writes: what, beyond the cheaper fault-in
// (BenchmarkMappedFaultIn), 2 MiB page-table entries change for a read
// that misses the TLB (doc/performance.md).
//
//	go test -run=NONE -bench=BenchmarkMappedRandomRead ./sstable
func BenchmarkMappedRandomRead(b *testing.B) {
	const size = 64 << 20
	for _, ws := range []int{256 << 10, writeBufSize} {
		b.Run(fmt.Sprintf("writes=%dKiB", ws>>10), func(b *testing.B) {
			f := writeRandomFile(b, size, ws)
			m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
			require.NoError(b, err)
			defer syscall.Munmap(m)
			var sum byte
			for i := 0; i < size; i += 4096 { // fault the map in first
				sum += m[i]
			}
			b.ResetTimer()
			j := 0
			for i := 0; i < b.N; i++ {
				j = (j*1103515245 + 12345 + int(m[j])) & (size - 1)
				sum += m[j]
			}
			b.StopTimer()
			if sum == 1 {
				b.Log(sum) // keep the reads
			}
		})
	}
}

// writeRandomFile writes size random bytes to a new file in writes of ws
// bytes and returns it open for reading (closed when b ends).
func writeRandomFile(b *testing.B, size, ws int) *os.File {
	path := filepath.Join(b.TempDir(), "file")
	f, err := os.Create(path)
	require.NoError(b, err)
	buf := make([]byte, ws)
	rng := rand.New(rand.NewPCG(1, 2))
	for off := 0; off < size; off += ws {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		_, err := f.Write(buf)
		require.NoError(b, err)
	}
	require.NoError(b, f.Close())
	f, err = os.Open(path)
	require.NoError(b, err)
	b.Cleanup(func() { f.Close() })
	return f
}
