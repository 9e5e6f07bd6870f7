package sstable

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

// A corrupt stored block whose header claims a large decoded length (here
// 32x its 256 KiB, the most decodedLen accepts) is refused by its checksum
// before anything of that size is allocated, pooled or not.
func TestDecodeStoredCorruptHeaderAllocatesLittle(t *testing.T) {
	const n = 256 << 10
	stored := make([]byte, n+blockTrailerLen)
	k := binary.PutUvarint(stored, 32*n) // snappy header: decoded length
	for i := k; i < n; i++ {
		stored[i] = byte(i)
	}
	stored[n] = byte(blockTypeSnappy)
	binary.LittleEndian.PutUint32(stored[n+1:], blockChecksum(stored[:n+1])^1)
	for _, pooled := range []bool{true, false} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := decodeStored(stored, blockCtx(7, "data", 0), pooled)
		runtime.ReadMemStats(&after)
		require.Nil(t, v)
		require.ErrorIs(t, err, base.ErrCorruption)
		require.Contains(t, err.Error(), "checksum mismatch")
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "pooled=%v", pooled)
	}
}
