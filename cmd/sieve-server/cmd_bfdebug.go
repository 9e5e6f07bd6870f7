package main

import (
	"fmt"
	"strconv"
)

func init() {
	register(&command{name: "bf.debug", arity: 2, fn: cmdBFDebug})
}

// cmdBFDebug is BF.DEBUG: "size:<items>", then one line per sub-filter in
// RedisBloom's form, with sieve's geometry (a blocked filter in pages:
// its bits and hashes differ from RedisBloom's for the same request).
func cmdBFDebug(s *Server, r *reply, args [][]byte) {
	layers, err := s.ks.st.BFDebug(args[1])
	if err != nil {
		r.bfErr(err, false)
		return
	}
	var items int64
	for _, l := range layers {
		items += l.Items
	}
	r.array(1 + len(layers))
	r.bulkString("size:" + strconv.FormatInt(items, 10))
	for _, l := range layers {
		r.bulkString(fmt.Sprintf("bytes:%d bits:%d hashes:%d hashwidth:64 capacity:%d size:%d ratio:%g",
			l.Bytes, l.Bits, l.Hashes, l.Capacity, l.Items, l.ErrorRate))
	}
}
