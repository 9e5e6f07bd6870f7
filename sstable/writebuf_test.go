package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
