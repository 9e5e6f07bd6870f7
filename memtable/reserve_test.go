package memtable

import (
	"encoding/binary"
	"math/rand"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
)

// TestAddAllocatesOutsideLock checks that Add's inserts, splits included,
// take every node and children array from what reserve set aside before
// the lock: none is allocated under it, where an allocation could wait
// on the garbage collector or on page faults while readers wait on the
// lock. It also checks that most inserts took the unlocked descent's
// path (leafFor found the leaf) and that splits did happen.
func TestAddAllocatesOutsideLock(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	m := NewWithFilter(1 << 20)
	const n = 50000
	key := make([]byte, 16)
	leafOnly := 0
	for i := range n {
		binary.BigEndian.PutUint64(key, rng.Uint64())
		binary.BigEndian.PutUint64(key[8:], uint64(i))
		e := makeEntry(key, base.MakeTrailer(uint64(i+1), base.KindSet))
		if _, _, _, ok := m.tree.leafFor(&e); ok {
			leafOnly++
		}
		m.Add(uint64(i+1), base.KindSet, key, []byte("v"))
	}
	if m.tree.unreserved != 0 {
		t.Fatalf("%d node slabs or children arrays allocated inside inserts, want 0", m.tree.unreserved)
	}
	if m.tree.len != n {
		t.Fatalf("tree holds %d entries, want %d", m.tree.len, n)
	}
	if leafOnly < n*9/10 || leafOnly == n {
		t.Fatalf("%d of %d inserts split nothing: want most, not all (splits must happen)", leafOnly, n)
	}
	// Every entry is found, in order.
	var prev *entry
	count := 0
	m.tree.ascend(nil, func(e *entry) bool {
		if prev != nil && !lessEntry(prev, e) {
			t.Fatalf("entries out of order at %d", count)
		}
		prev = e
		count++
		return true
	})
	if count != n {
		t.Fatalf("ascend saw %d entries, want %d", count, n)
	}
}
