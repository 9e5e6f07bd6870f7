package memtable

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
)

// TestKeyFilterRate: no added key is ever ruled out, and the rate at which
// absent keys pass is what a filter blocked to 64-bit words gives at 10
// bits a key (≈1.8%; a cache-line-blocked one ≈0.9%, a classic one 0.82%).
func TestKeyFilterRate(t *testing.T) {
	const n = 100000
	f := newKeyFilter(10 * n)
	for i := 0; i < n; i++ {
		f.add(keyHash([]byte(fmt.Sprintf("key%08d", 2*i))))
	}
	fp := 0
	for i := 0; i < n; i++ {
		require.True(t, f.mayContain(keyHash([]byte(fmt.Sprintf("key%08d", 2*i)))), "false negative")
		if f.mayContain(keyHash([]byte(fmt.Sprintf("key%08d", 2*i+1)))) {
			fp++
		}
	}
	rate := float64(fp) / n
	t.Logf("FPR %.3f%% at 10 bits/key, %d probes", 100*rate, filterProbes)
	require.Less(t, rate, 0.025)
	require.Greater(t, rate, 0.002, "a filter this size cannot do better: is it consulted?")
	require.Nil(t, newKeyFilter(0))
	require.False(t, math.IsNaN(rate))
}

// TestFilteredGetWhileAdding: a reader that Gets the keys the writer has
// finished adding finds every one, though the filter's bits are being set
// concurrently (run with -race).
func TestFilteredGetWhileAdding(t *testing.T) {
	const n = 20000
	m := NewWithFilter(10 * n)
	var done, reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(0); i < n; i++ {
			if i == n/2 {
				// Halfway, until the reader has read: a descheduled
				// reader would otherwise see the writer finish first,
				// and check nothing concurrently.
				for reads.Load() == 0 {
					runtime.Gosched()
				}
			}
			m.Add(uint64(i+1), base.KindSet, []byte(fmt.Sprintf("k%06d", i)), []byte("v"))
			done.Store(i + 1)
		}
	}()
	missed, checked := 0, 0
	for d := done.Load(); d < n; d = done.Load() {
		if d == 0 {
			continue
		}
		i := (int64(checked) * 7919) % d
		found := false
		m.Get([]byte(fmt.Sprintf("k%06d", i)), base.SeqNumMax, func(base.InternalKey, []byte) bool { found = true; return false })
		if !found {
			missed++
		}
		checked++
		reads.Store(int64(checked))
	}
	wg.Wait()
	require.Zero(t, missed, "of %d Gets of added keys", checked)
	require.Positive(t, checked)
	absent := 0
	for i := 0; i < 1000; i++ {
		m.Get([]byte(fmt.Sprintf("x%06d", i)), base.SeqNumMax, func(base.InternalKey, []byte) bool { absent++; return false })
	}
	require.Zero(t, absent)
}

// BenchmarkGetAbsent: a Get of a key the memtable (100k entries) does not
// hold, with and without the key filter.
func BenchmarkGetAbsent(b *testing.B) {
	for _, bitsPerEntry := range []int64{0, 10} {
		b.Run(fmt.Sprintf("filter-bits=%d", bitsPerEntry), func(b *testing.B) {
			const n = 100000
			m := NewWithFilter(bitsPerEntry * n)
			for i := 0; i < n; i++ {
				m.Add(uint64(i+1), base.KindSet, []byte(fmt.Sprintf("key%013d", (i*7919%n)*2)), make([]byte, 100))
			}
			keys := make([][]byte, 1024)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("key%013d", (i*7919%n)*2+1))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Get(keys[i&1023], base.SeqNumMax, func(base.InternalKey, []byte) bool { return false })
			}
		})
	}
}

// TestKeyHashIsFilterHash: the root's lookup hashes a key once for the
// memtables and the table filters, so the two hashes must be one.
func TestKeyHashIsFilterHash(t *testing.T) {
	for _, k := range []string{"", "a", "key0000000000042", string(make([]byte, 100))} {
		require.Equal(t, filter.HashKey([]byte(k)), KeyHash([]byte(k)), "%q", k)
	}
}

// TestHasSuccessiveMerges: the counter shortcut answers as the exact count
// does, for keys under, at and over the limit, with colliding keys.
func TestHasSuccessiveMerges(t *testing.T) {
	for _, bits := range []int64{0, 64 * 32, 1 << 20} {
		m := NewWithFilter(bits)
		seq := uint64(0)
		add := func(k string, kind base.Kind) {
			seq++
			m.Add(seq, kind, []byte(k), []byte("v"))
		}
		for i := 0; i < 300; i++ {
			add(fmt.Sprintf("k%03d", i%100), base.KindMerge) // 3 each
		}
		for i := 0; i < 5; i++ {
			add("hot", base.KindMerge)
		}
		add("reset", base.KindMerge)
		add("reset", base.KindSet)
		add("reset", base.KindMerge)
		for _, limit := range []int{1, 3, 4, 5, 6} {
			for _, k := range []string{"k000", "k042", "hot", "reset", "absent"} {
				want := m.SuccessiveMerges([]byte(k), limit) >= limit
				if got := m.HasSuccessiveMerges([]byte(k), limit); got != want {
					t.Fatalf("bits %d, limit %d, key %s: HasSuccessiveMerges = %v, SuccessiveMerges says %v", bits, limit, k, got, want)
				}
			}
		}
	}
}
