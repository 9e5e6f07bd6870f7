package sieve

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// expiryOracle is what one worker knows of its own keys.
type expiryOracle struct {
	value    map[string]string
	deadline map[string]int64 // 0: none
}

// expiryCounts counts what the soak's reads met: the cases it names.
type expiryCounts struct {
	expiredRead, liveRead, racing, absent, violations atomic.Int64
}

// TestStressExpiry is the expiry soak: workers write keys with random
// deadlines (and plain values and deletes) on a small memtable while a
// maintainer flushes and compacts and a clock moves on; each worker reads
// its own keys back and checks each answer against what it wrote and the
// clock read before and after the read: 0 reads of an expired key, 0 live
// keys lost. At the end every key is checked, the clock moves past every
// deadline and a compaction must reclaim the expired data. Replay with
// SIEVE_SEED; SIEVE_STRESS_LONG runs 60 s.
func TestStressExpiry(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("SIEVE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (replay: SIEVE_SEED=%d)", seed, seed)
	dur := 2 * time.Second
	if os.Getenv("SIEVE_STRESS_LONG") != "" {
		dur = 60 * time.Second
	}
	clock := newFakeClock()
	db, err := Open("/db", &Options{FS: vfs.NewMem(), Now: clock.Now, MemTableSize: 128 << 10})
	require.NoError(t, err)
	defer db.Close()

	const workers, keysPer = 6, 300
	oracles := make([]expiryOracle, workers)
	var counts expiryCounts
	stop := make(chan struct{})
	var wg, bg sync.WaitGroup
	bg.Add(2)
	go func() { // the clock: 20 ms of simulated time per real millisecond
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				clock.Advance(20 * time.Millisecond)
			}
		}
	}()
	go func() { // the maintainer
		defer bg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if i%5 == 4 {
				require.NoError(t, db.Compact(nil, nil))
			} else {
				require.NoError(t, db.Flush())
			}
		}
	}()
	deadline := time.Now().Add(dur)
	for w := range workers {
		oracles[w] = expiryOracle{value: map[string]string{}, deadline: map[string]int64{}}
		wg.Add(1)
		go func(w int, rng *rand.Rand) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				expiryStep(t, db, clock, &oracles[w], &counts, rng, fmt.Sprintf("w%d-%04d", w, rng.IntN(keysPer)), i)
			}
		}(w, rand.New(rand.NewPCG(seed, uint64(w))))
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	t.Logf("reads: %d of expired keys (absent as they must be), %d of live expiring keys, %d at their deadline, %d of absent keys; %d violations",
		counts.expiredRead.Load(), counts.liveRead.Load(), counts.racing.Load(), counts.absent.Load(), counts.violations.Load())
	require.Zero(t, counts.violations.Load())
	require.Positive(t, counts.expiredRead.Load(), "no read met an expired key")
	require.Positive(t, counts.liveRead.Load(), "no read met a live expiring key")
	expiryFinalCheck(t, db, clock, oracles)
}

// expiryStep is one worker operation on key: a write (with a deadline,
// plain, or a delete) or a checked read.
func expiryStep(t *testing.T, db *DB, clock *fakeClock, o *expiryOracle, c *expiryCounts, rng *rand.Rand, key string, i int) {
	switch r := rng.IntN(10); {
	case r < 4:
		v := fmt.Sprintf("%s.%d", key, i)
		dl := clock.Now().Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		require.NoError(t, db.PutWithExpiry([]byte(key), []byte(v), dl, nil))
		o.value[key], o.deadline[key] = v, dl.UnixNano()
	case r < 5:
		v := fmt.Sprintf("%s.%d", key, i)
		require.NoError(t, db.Put([]byte(key), []byte(v), nil))
		o.value[key], o.deadline[key] = v, 0
	case r < 6:
		require.NoError(t, db.Delete([]byte(key), nil))
		delete(o.value, key)
	default:
		c0 := clock.ns.Load()
		got, err := db.Get([]byte(key))
		c1 := clock.ns.Load()
		if !checkExpiryRead(t, o, c, key, got, err, c0, c1) {
			c.violations.Add(1)
		}
	}
}

// checkExpiryRead judges one read made between clock readings c0 and c1.
func checkExpiryRead(t *testing.T, o *expiryOracle, c *expiryCounts, key string, got []byte, err error, c0, c1 int64) bool {
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Errorf("%s: %v", key, err)
		return false
	}
	want, ok := o.value[key]
	d := o.deadline[key]
	switch {
	case !ok:
		c.absent.Add(1)
		if err == nil {
			t.Errorf("%s: deleted, read %q", key, got)
			return false
		}
	case d != 0 && d <= c0:
		c.expiredRead.Add(1)
		if err == nil {
			t.Errorf("%s: expired %v before the read, read %q", key, time.Duration(c0-d), got)
			return false
		}
	case d == 0 || d > c1:
		if d != 0 {
			c.liveRead.Add(1)
		}
		if err != nil || string(got) != want {
			t.Errorf("%s: want %q (deadline in %v), got %q, %v", key, want, time.Duration(d-c1), got, err)
			return false
		}
	default: // the deadline fell during the read: either answer
		c.racing.Add(1)
		if err == nil && string(got) != want {
			t.Errorf("%s: want %q or nothing, got %q", key, want, got)
			return false
		}
	}
	return true
}

// expiryFinalCheck reads every key with the clock stopped, then moves it
// past every deadline and checks that a compaction reclaims the space.
func expiryFinalCheck(t *testing.T, db *DB, clock *fakeClock, oracles []expiryOracle) {
	var live, expiring int
	now := clock.ns.Load()
	for _, o := range oracles {
		for k, want := range o.value {
			got, err := db.Get([]byte(k))
			switch d := o.deadline[k]; {
			case d != 0 && d <= now:
				require.ErrorIs(t, err, ErrNotFound, k)
			default:
				require.NoError(t, err, k)
				require.Equal(t, want, string(got), k)
				live++
				if d != 0 {
					expiring++
				}
			}
		}
	}
	require.NoError(t, db.Compact(nil, nil))
	before := tableBytes(db)
	clock.Advance(time.Hour)
	require.NoError(t, db.Compact(nil, nil))
	after := tableBytes(db)
	var plain int
	for _, o := range oracles {
		for k := range o.value {
			if o.deadline[k] == 0 {
				plain++
			}
		}
	}
	it := db.NewIter(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, plain, n, "after every deadline only the plain values remain")
	t.Logf("end: %d live keys (%d expiring) checked; tables %d bytes, %d after every deadline passed and a compaction (%d plain values left); %d expired values dropped by flushes and compactions",
		live, expiring, before, after, plain, db.Metrics().Compaction.Expired)
	require.Positive(t, db.Metrics().Compaction.Expired)
}
