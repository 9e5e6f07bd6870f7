package sketchcol

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// Interop with a real redis-server through the Store (skipped when
// redis-server is not installed): bytes Dump-ed here and SET there count
// the same there; bytes GET from there and Restore-d here count the same
// here; and both sides keep agreeing as more elements are added to each.
func TestStoreRedisInterop(t *testing.T) {
	r := startRedis(t)
	s := openTestStore(t, nil, nil)
	seed := uint64(testutil.Seed(t))
	for _, n := range []int{0, 1, 100, 2500, 50000} { // empty, sparse, sparse, near promotion, dense
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			elems := testElems(seed+uint64(n), n)
			more := testElems(seed+uint64(n)+1, 300)
			key := fmt.Sprintf("k%d", n)

			// Here → Redis: PFAdd through the Store (half with replies,
			// half blind), Dump, SET into Redis.
			_, err := s.PFAdd(k(key))
			require.NoError(t, err)
			for i := 0; i < len(elems); i += 100 {
				batch := elems[i:min(i+100, len(elems))]
				if i%200 == 0 {
					_, err = s.PFAdd(k(key), batch...)
				} else {
					err = s.PFAddBlind(k(key), batch...)
				}
				require.NoError(t, err)
			}
			ours, err := s.Dump(k(key))
			require.NoError(t, err)
			r.mustOK(t, "SET", "from-sieve", ours)
			want, err := s.PFCount(k(key))
			require.NoError(t, err)
			require.Equal(t, want, r.mustInt(t, "PFCOUNT", "from-sieve"), "PFCOUNT in Redis of sieve's bytes")

			// Redis → here: PFADD in Redis, GET (stale cache), Restore.
			r.do("DEL", "native")
			if n == 0 {
				r.mustInt(t, "PFADD", "native")
			}
			pfaddRedis(t, r, "native", elems)
			theirs := r.mustBytes(t, "GET", "native")
			require.NoError(t, s.Restore(k("restored"), theirs))
			got, err := s.PFCount(k("restored"))
			require.NoError(t, err)
			require.Equal(t, r.mustInt(t, "PFCOUNT", "native"), got, "PFCOUNT here of Redis's bytes")
			require.Equal(t, want, got, "same elements, same count on both sides")

			// Both sides keep agreeing: the same further adds in Redis (on
			// sieve's bytes) and here (on Redis's bytes), with the same
			// PFADD replies.
			for _, e := range more {
				added, err := s.PFAdd(k("restored"), e)
				require.NoError(t, err)
				require.Equal(t, r.mustInt(t, "PFADD", "from-sieve", e) == 1, added, "PFADD reply")
			}
			got, err = s.PFCount(k("restored"))
			require.NoError(t, err)
			require.Equal(t, r.mustInt(t, "PFCOUNT", "from-sieve"), got)

			// And a union across the two systems' bytes.
			require.NoError(t, s.Restore(k("from-redis"), r.mustBytes(t, "GET", "from-sieve")))
			require.NoError(t, s.PFMerge(k("union"), k(key), k("from-redis")))
			r.mustOK(t, "PFMERGE", "union", "native", "from-sieve")
			u, err := s.PFCount(k("union"))
			require.NoError(t, err)
			require.Equal(t, r.mustInt(t, "PFCOUNT", "union"), u)
			d, err := s.Dump(k("union"))
			require.NoError(t, err)
			r.mustOK(t, "SET", "union-bytes", d)
			require.Equal(t, u, r.mustInt(t, "PFCOUNT", "union-bytes"))
			_, err = r.do("DEL", "union", "from-sieve")
			require.NoError(t, err)
			require.NoError(t, s.ColumnFamily().Delete(k("union"), nil))
		})
	}
}
