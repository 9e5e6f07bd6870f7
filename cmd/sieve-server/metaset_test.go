package main

import (
	"fmt"
	"math/rand"
	"testing"
	"unsafe"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestMetaSetModel runs random puts, gets and deletes on metaSets against
// a map, with few tags (so that different keys share one) and keys short
// and long (inline and not), through every representation: the first
// entry alone, the slice, the map. It counts the representations reached.
func TestMetaSetModel(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	reached := map[string]int{}
	for round := 0; round < 200; round++ {
		var m metaSet
		model := map[string][8]byte{}
		nkeys := 1 + rng.Intn(3*metaSetSmall)
		for step := 0; step < 400; step++ {
			i := rng.Intn(nkeys)
			key := []byte(fmt.Sprintf("k%d", i))
			if i%3 == 0 {
				key = []byte(fmt.Sprintf("a-key-longer-than-inline-%040d", i))
			}
			tag := uint32(i % 3)
			switch rng.Intn(3) {
			case 0:
				var c [8]byte
				rng.Read(c[:])
				m.put(key, tag, c)
				model[string(key)] = c
			case 1:
				m.del(key, tag)
				delete(model, string(key))
			}
			c, ok := m.get(key, tag)
			want, wok := model[string(key)]
			require.Equal(t, wok, ok, "seed %d round %d step %d", seed, round, step)
			require.Equal(t, want, c, "seed %d round %d step %d", seed, round, step)
			switch {
			case m.big != nil:
				reached["map"]++
			case len(m.small) > 0:
				reached["slice"]++
			case m.hasFirst:
				reached["first"]++
			}
		}
		for k, want := range model {
			c, ok := m.get([]byte(k), 0) // a wrong tag finds nothing but in the map
			if ok {
				require.Equal(t, want, c)
			}
		}
	}
	t.Logf("representations reached: %v", reached)
	for _, r := range []string{"first", "slice", "map"} {
		require.NotZero(t, reached[r], "seed %d: %s never reached", seed, r)
	}
}

// TestStripeSize: a keyspace stripe is two cache lines, so that
// neighbouring stripes, locked by different connections, share none.
func TestStripeSize(t *testing.T) {
	if n := unsafe.Sizeof(ksStripe{}); n != 128 {
		t.Fatalf("ksStripe is %d bytes, want 128 (fix its padding)", n)
	}
}
