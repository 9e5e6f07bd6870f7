package main

import (
	"errors"
	"fmt"

	"github.com/sievedb/sieve"
)

func init() {
	register(
		&command{name: "cf.debug", arity: 2, fn: cmdCFDebug},
		&command{name: "cf.compact", arity: 2, fn: cmdCFCompact, write: true},
	)
}

// cmdCFDebug is CF.DEBUG: RedisBloom's one line of the filter's geometry
// and counts.
func cmdCFDebug(s *Server, r *reply, args [][]byte) {
	info, err := s.ks.st.CFInfo(args[1])
	if err != nil {
		r.bfErr(err, true)
		return
	}
	r.bulkString(fmt.Sprintf("bktsize:%d buckets:%d items:%d deletes:%d filters:%d max_iterations:%d expansion:%d",
		info.BucketSize, info.NumBuckets, info.NumItemsInserted, info.NumItemsDeleted, info.NumFilters,
		info.MaxIteration, info.ExpansionRate))
}

// cmdCFCompact is CF.COMPACT on an existing cuckoo filter. RedisBloom
// moves fingerprints of newer sub-filters into free slots of older ones
// to free whole sub-filters; sieve moves none (a slot freed by CF.DEL is
// already reused by later adds), so it checks the key and answers OK with
// the filter unchanged.
func cmdCFCompact(s *Server, r *reply, args [][]byte) {
	_, err := s.ks.st.CFInfo(args[1])
	switch {
	case errors.Is(err, sieve.ErrNotFound):
		r.err("Cuckoo filter was not found") // RedisBloom's text here
	case err != nil:
		r.bfErr(err, true)
	default:
		r.ok()
	}
}
