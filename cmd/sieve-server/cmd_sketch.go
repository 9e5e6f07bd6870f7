package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
)

// RedisBloom's BF.* and CF.* on the Store, with RedisBloom's replies.

func init() {
	register(
		&command{name: "bf.reserve", arity: -4, fn: cmdBFReserve, write: true},
		&command{name: "bf.add", arity: 3, fn: cmdBFAdd, write: true},
		&command{name: "bf.madd", arity: -3, fn: cmdBFMAdd, write: true},
		&command{name: "bf.insert", arity: -4, fn: cmdBFInsert, write: true},
		&command{name: "bf.exists", arity: 3, fn: cmdBFExists},
		&command{name: "bf.mexists", arity: -3, fn: cmdBFMExists},
		&command{name: "bf.card", arity: 2, fn: cmdBFCard},
		&command{name: "bf.info", arity: -2, fn: cmdBFInfo},
		&command{name: "bf.scandump", arity: 3, fn: cmdBFScanDump},
		&command{name: "bf.loadchunk", arity: 4, fn: cmdBFLoadChunk, write: true},
		&command{name: "cf.reserve", arity: -3, fn: cmdCFReserve, write: true},
		&command{name: "cf.add", arity: 3, fn: cmdCFAdd, write: true},
		&command{name: "cf.addnx", arity: 3, fn: cmdCFAdd, write: true},
		&command{name: "cf.insert", arity: -4, fn: cmdCFInsert, write: true},
		&command{name: "cf.insertnx", arity: -4, fn: cmdCFInsert, write: true},
		&command{name: "cf.scandump", arity: 3, fn: cmdCFScanDump},
		&command{name: "cf.loadchunk", arity: 4, fn: cmdCFLoadChunk, write: true},
		&command{name: "cf.exists", arity: 3, fn: cmdCFExists},
		&command{name: "cf.mexists", arity: -3, fn: cmdCFMExists},
		&command{name: "cf.del", arity: 3, fn: cmdCFDel, write: true},
		&command{name: "cf.count", arity: 3, fn: cmdCFCount},
		&command{name: "cf.info", arity: 2, fn: cmdCFInfo},
	)
}

// bfErr answers a Store error of a BF.*/CF.* command as RedisBloom would.
func (r *reply) bfErr(err error, cuckoo bool) {
	switch {
	case errors.Is(err, sketchcol.ErrWrongType):
		r.wrongType()
	case errors.Is(err, sketchcol.ErrItemExists):
		r.err("ERR item exists")
	case errors.Is(err, sketchcol.ErrCFTooLarge):
		r.err(sketchcol.ErrCFTooLarge.Error())
	case errors.Is(err, sketchcol.ErrFilterFull):
		if cuckoo {
			r.err("Filter is full") // RedisBloom's texts without a code are sent as they are
		} else {
			r.err("ERR non scaling filter is full")
		}
	case errors.Is(err, sieve.ErrNotFound):
		r.err("ERR not found")
	case errors.Is(err, sketchcol.ErrInvalidArgument):
		r.err("ERR " + err.Error())
	default:
		r.storeErr(err)
	}
}

func parseRate(r *reply, b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		r.err("ERR bad error rate")
		return 0, false
	}
	if f <= 0 || f >= 1 {
		r.err("ERR (0 < error rate range < 1) ") // RedisBloom's text, its space included
		return 0, false
	}
	return f, true
}

func parseCapacity(r *reply, b []byte) (int64, bool) {
	n, ok := parseInt(b)
	if !ok {
		r.err("ERR bad capacity")
		return 0, false
	}
	if n <= 0 {
		r.err("ERR (capacity should be larger than 0)")
		return 0, false
	}
	return n, true
}

func parseExpansion(r *reply, b []byte) (int, bool) {
	n, ok := parseInt(b)
	if !ok {
		r.err("ERR bad expansion")
		return 0, false
	}
	if n < 1 || n > 32768 {
		r.err("ERR expansion should be greater or equal to 1")
		return 0, false
	}
	return int(n), true
}

func cmdBFReserve(s *Server, r *reply, args [][]byte) {
	rate, ok := parseRate(r, args[2])
	if !ok {
		return
	}
	capacity, ok := parseCapacity(r, args[3])
	if !ok {
		return
	}
	var o sketchcol.BFReserveOptions
	for i := 4; i < len(args); i++ {
		switch {
		case eq(args[i], "nonscaling"):
			o.NonScaling = true
		case eq(args[i], "expansion") && i+1 < len(args):
			if o.Expansion, ok = parseExpansion(r, args[i+1]); !ok {
				return
			}
			i++
		default:
			r.wrongArgs("BF.RESERVE")
			return
		}
	}
	if o.NonScaling && o.Expansion != 0 {
		r.err("Nonscaling filters cannot expand")
		return
	}
	defer s.ks.lockWrite(args[1])()
	if err := s.ks.st.BFReserve(args[1], rate, capacity, &o); err != nil {
		r.bfErr(err, false)
		return
	}
	r.ok()
}

func cmdBFAdd(s *Server, r *reply, args [][]byte) {
	defer s.ks.lockWrite(args[1])()
	added, err := s.ks.st.BFAdd(args[1], args[2])
	if err != nil {
		r.bfErr(err, false)
		return
	}
	r.boolInt(added)
}

// bfMulti answers BF.MADD/BF.INSERT: one integer per item that was
// tried, then RedisBloom's error in place of the item that did not fit.
func (r *reply) bfMulti(added []bool, n int, err error) {
	if err != nil && !errors.Is(err, sketchcol.ErrFilterFull) {
		r.bfErr(err, false)
		return
	}
	if err == nil {
		r.ints(added)
		return
	}
	r.array(len(added) + 1)
	for _, a := range added {
		r.boolInt(a)
	}
	r.err("ERR non scaling filter is full")
}

func cmdBFMAdd(s *Server, r *reply, args [][]byte) {
	defer s.ks.lockWrite(args[1])()
	added, err := s.ks.st.BFMAdd(args[1], args[2:]...)
	r.bfMulti(added, len(args)-2, err)
}

func cmdBFInsert(s *Server, r *reply, args [][]byte) {
	var o sketchcol.BFInsertOptions
	var ok bool
	items := -1
	for i := 2; i < len(args) && items < 0; i++ {
		switch a := args[i]; {
		case eq(a, "capacity") && i+1 < len(args):
			if o.Capacity, ok = parseCapacity(r, args[i+1]); !ok {
				return
			}
			i++
		case eq(a, "error") && i+1 < len(args):
			if o.ErrorRate, ok = parseRate(r, args[i+1]); !ok {
				return
			}
			i++
		case eq(a, "expansion") && i+1 < len(args):
			if o.Expansion, ok = parseExpansion(r, args[i+1]); !ok {
				return
			}
			i++
		case eq(a, "nocreate"):
			o.NoCreate = true
		case eq(a, "nonscaling"):
			o.NonScaling = true
		case eq(a, "items"):
			items = i + 1
		default:
			r.err("ERR unknown argument received")
			return
		}
	}
	if items < 0 || items >= len(args) {
		r.wrongArgs("BF.INSERT")
		return
	}
	if o.NoCreate && (o.Capacity != 0 || o.ErrorRate != 0) {
		r.err("ERR NOCREATE cannot be used together with CAPACITY or ERROR")
		return
	}
	if o.NonScaling && o.Expansion != 0 {
		r.err("Nonscaling filters cannot expand")
		return
	}
	defer s.ks.lockWrite(args[1])()
	added, err := s.ks.st.BFInsert(args[1], &o, args[items:]...)
	r.bfMulti(added, len(args)-items, err)
}

func cmdBFExists(s *Server, r *reply, args [][]byte) {
	ok, err := s.ks.st.BFExists(args[1], args[2])
	if err != nil {
		r.bfErr(err, false)
		return
	}
	r.boolInt(ok)
}

func cmdBFMExists(s *Server, r *reply, args [][]byte) {
	oks, err := s.ks.st.BFMExists(args[1], args[2:]...)
	if err != nil {
		r.bfErr(err, false)
		return
	}
	r.ints(oks)
}

func cmdBFCard(s *Server, r *reply, args [][]byte) {
	n, err := s.ks.st.BFCard(args[1])
	if err != nil {
		r.bfErr(err, false)
		return
	}
	r.int(n)
}

func cmdBFInfo(s *Server, r *reply, args [][]byte) {
	info, err := s.ks.st.BFInfo(args[1])
	if err != nil {
		r.bfErr(err, false)
		return
	}
	fields := []struct {
		name, arg string
		v         int64
	}{
		{"Capacity", "capacity", info.Capacity},
		{"Size", "size", info.Size},
		{"Number of filters", "filters", info.Filters},
		{"Number of items inserted", "items", info.ItemsInserted},
		{"Expansion rate", "expansion", info.ExpansionRate},
	}
	put := func(v int64, name string) {
		if name == "Expansion rate" && v == 0 {
			r.null()
		} else {
			r.int(v)
		}
	}
	if len(args) == 3 {
		for _, f := range fields {
			if eq(args[2], f.arg) {
				r.array(1)
				put(f.v, f.name)
				return
			}
		}
		r.err("ERR Invalid information value")
		return
	}
	if len(args) > 3 {
		r.wrongArgs("BF.INFO")
		return
	}
	r.array(2 * len(fields))
	for _, f := range fields {
		r.status(f.name)
		put(f.v, f.name)
	}
}

func cmdCFReserve(s *Server, r *reply, args [][]byte) {
	if len(args)%2 == 0 {
		r.wrongArgs("cf.reserve")
		return
	}
	capacity, ok := parseInt(args[2])
	if !ok {
		r.err("Bad capacity")
		return
	}
	var o sketchcol.CFReserveOptions
	if !cfReserveOption(r, args, "maxiterations", 1, 65535, &o.MaxIterations) ||
		!cfReserveOption(r, args, "bucketsize", 1, 255, &o.BucketSize) ||
		!cfReserveOption(r, args, "expansion", 0, 32768, &o.Expansion) {
		return
	}
	if o.Expansion == 0 && argIndex(args, "expansion") > 0 {
		o.NonScaling = true // RedisBloom's EXPANSION 0
	}
	bs := o.BucketSize
	if bs == 0 {
		bs = 2 // RedisBloom's default
	}
	if int64(bs)*2 > capacity {
		r.err("Capacity must be at least (BucketSize * 2)")
		return
	}
	defer s.ks.lockWrite(args[1])()
	if err := s.ks.st.CFReserve(args[1], capacity, &o); err != nil {
		r.bfErr(err, true)
		return
	}
	r.ok()
}

// cfReserveOption reads CF.RESERVE's option name (anywhere after the
// capacity, as RedisBloom finds it) into *v, answering RedisBloom's error
// when it does not parse or is out of [lo, hi]; absent, *v is left 0.
func cfReserveOption(r *reply, args [][]byte, name string, lo, hi int64, v *int) bool {
	i := argIndex(args, name)
	if i < 0 {
		return true
	}
	up := strings.ToUpper(name)
	n, ok := int64(0), i+1 < len(args)
	if ok {
		n, ok = parseInt(args[i+1])
	}
	switch {
	case !ok:
		r.err("Couldn't parse " + up)
		return false
	case n < lo || n > hi:
		r.err(fmt.Sprintf("%s: value must be an integer between %d and %d, inclusive.", up, lo, hi))
		return false
	}
	*v = int(n)
	return true
}

// argIndex is the index of the first argument after the key that is name
// (in any case), or -1.
func argIndex(args [][]byte, name string) int {
	for i := 2; i < len(args); i++ {
		if eq(args[i], name) {
			return i
		}
	}
	return -1
}

func cmdCFAdd(s *Server, r *reply, args [][]byte) {
	defer s.ks.lockWrite(args[1])()
	if info, err := s.ks.st.CFInfo(args[1]); err == nil && info.NumFilters >= cfMaxExpansions {
		r.err("Maximum expansions reached") // RedisBloom checks it before every add
		return
	}
	var ok bool
	var err error
	if lower(args[0]) == "cf.addnx" {
		ok, err = s.ks.st.CFAddNX(args[1], args[2])
	} else {
		ok, err = s.ks.st.CFAdd(args[1], args[2])
	}
	if err != nil {
		r.bfErr(err, true)
		return
	}
	r.boolInt(ok)
}

func cmdCFExists(s *Server, r *reply, args [][]byte) {
	ok, err := s.ks.st.CFExists(args[1], args[2])
	if err != nil {
		r.bfErr(err, true)
		return
	}
	r.boolInt(ok)
}

func cmdCFMExists(s *Server, r *reply, args [][]byte) {
	oks, err := s.ks.st.CFMExists(args[1], args[2:]...)
	if err != nil {
		r.bfErr(err, true)
		return
	}
	r.ints(oks)
}

func cmdCFDel(s *Server, r *reply, args [][]byte) {
	defer s.ks.lockWrite(args[1])()
	ok, err := s.ks.st.CFDel(args[1], args[2])
	if errors.Is(err, sieve.ErrNotFound) {
		r.err("Not found") // RedisBloom's CF.DEL text
		return
	}
	if err != nil {
		r.bfErr(err, true)
		return
	}
	r.boolInt(ok)
}

func cmdCFCount(s *Server, r *reply, args [][]byte) {
	n, err := s.ks.st.CFCount(args[1], args[2])
	if err != nil {
		r.bfErr(err, true)
		return
	}
	r.int(n)
}

func cmdCFInfo(s *Server, r *reply, args [][]byte) {
	info, err := s.ks.st.CFInfo(args[1])
	if err != nil {
		r.bfErr(err, true)
		return
	}
	fields := []struct {
		name string
		v    int64
	}{
		{"Size", info.Size},
		{"Number of buckets", info.NumBuckets},
		{"Number of filters", info.NumFilters},
		{"Number of items inserted", info.NumItemsInserted},
		{"Number of items deleted", info.NumItemsDeleted},
		{"Bucket size", info.BucketSize},
		{"Expansion rate", info.ExpansionRate},
		{"Max iterations", info.MaxIteration},
	}
	r.array(2 * len(fields))
	for _, f := range fields {
		r.status(f.name)
		r.int(f.v)
	}
}

// cmdBFScanDump is BF.SCANDUMP key iter: [next iter, chunk], [0, ""] at
// the end (sieve's chunks, loaded by BF.LOADCHUNK of sieve-server).
func cmdBFScanDump(s *Server, r *reply, args [][]byte) {
	iter, ok := parseInt(args[2])
	if !ok {
		r.err("Second argument must be numeric")
		return
	}
	next, chunk, err := s.ks.st.BFScanDump(args[1], iter)
	if err != nil {
		r.bfErr(err, false)
		return
	}
	r.array(2)
	r.int(next)
	r.bulk(chunk)
}

// cmdBFLoadChunk is BF.LOADCHUNK key iter chunk.
func cmdBFLoadChunk(s *Server, r *reply, args [][]byte) {
	iter, ok := parseInt(args[2])
	if !ok {
		r.err("ERR Second argument must be numeric")
		return
	}
	defer s.ks.lockWrite(args[1])()
	if t, _, err := s.ks.lookup(args[1]); err == nil && t != typeNone && t != typeBloom {
		r.wrongType()
		return
	}
	if err := s.ks.st.BFLoadChunk(args[1], iter, args[3]); err != nil {
		if errors.Is(err, sieve.ErrCorruption) {
			r.err("ERR received bad data")
			return
		}
		r.bfErr(err, false)
		return
	}
	r.ok()
}

// cfMaxExpansions is RedisBloom's limit on a cuckoo filter's sub-filters
// for CF.INSERT (CFMaxExpansions).
const cfMaxExpansions = 32

// cmdCFInsert is CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE]
// ITEMS item...: per item 1 (added), 0 (INSERTNX: present) or -1 (full).
func cmdCFInsert(s *Server, r *reply, args [][]byte) {
	capacity, create, items := int64(1024), true, -1
	for i := 2; i < len(args) && items < 0; {
		switch a := args[i]; {
		case eq(a, "capacity"):
			if i+1 == len(args) {
				r.wrongArgs(lower(args[0]))
				return
			}
			n, ok := parseInt(args[i+1])
			switch {
			case !ok:
				r.err("Bad capacity")
				return
			case n < 4:
				r.err("Capacity must be at least (BucketSize * 2)")
				return
			}
			capacity, i = n, i+2
		case eq(a, "nocreate"):
			create, i = false, i+1
		case eq(a, "items"):
			items = i + 1
		default:
			r.err("Unknown argument received")
			return
		}
	}
	if items < 0 || items == len(args) {
		r.wrongArgs(lower(args[0]))
		return
	}
	defer s.ks.lockWrite(args[1])()
	if !s.cfInsertReady(r, args[1], capacity, create) {
		return
	}
	nx := eq(args[0], "cf.insertnx")
	r.array(len(args) - items)
	for _, it := range args[items:] {
		var ok bool
		var err error
		if nx {
			ok, err = s.ks.st.CFAddNX(args[1], it)
		} else {
			ok, err = s.ks.st.CFAdd(args[1], it)
		}
		switch {
		case errors.Is(err, sketchcol.ErrFilterFull):
			r.int(-1)
		case err != nil:
			r.bfErr(err, true)
		default:
			r.boolInt(ok)
		}
	}
}

// cfInsertReady creates key's filter for CF.INSERT if missing (and
// allowed), refuses a filter at RedisBloom's maximum expansions, and
// answers the error otherwise. REQUIRES: key's lock.
func (s *Server) cfInsertReady(r *reply, key []byte, capacity int64, create bool) bool {
	info, err := s.ks.st.CFInfo(key)
	switch {
	case errors.Is(err, sieve.ErrNotFound) && create:
		if err := s.ks.st.CFReserve(key, capacity, nil); err != nil {
			r.bfErr(err, true)
			return false
		}
		return true
	case err != nil:
		r.bfErr(err, true)
		return false
	case info.NumFilters >= cfMaxExpansions:
		r.err("Maximum expansions reached")
		return false
	}
	return true
}

// cmdCFScanDump is CF.SCANDUMP key iter: [next iter, chunk], [0, nil]
// at the end (at once for an empty filter, as RedisBloom does). The
// chunks are sieve's (Store.CFScanDump): the header, then pages.
func cmdCFScanDump(s *Server, r *reply, args [][]byte) {
	iter, ok := parseInt(args[2])
	if !ok || iter < 0 {
		r.err("Invalid position")
		return
	}
	info, err := s.ks.st.CFInfo(args[1])
	var next int64
	var chunk []byte
	if err == nil && (iter > 0 || info.NumItemsInserted > 0) {
		next, chunk, err = s.ks.st.CFScanDump(args[1], iter)
	}
	if err != nil {
		r.bfErr(err, true)
		return
	}
	r.array(2)
	r.int(next)
	if next == 0 {
		r.null()
		return
	}
	r.bulk(chunk)
}

// cmdCFLoadChunk is CF.LOADCHUNK key iter chunk: chunk 1 of CF.SCANDUMP
// (the header, or a filter stored whole) creates the missing key; each
// later chunk writes pages into it.
func cmdCFLoadChunk(s *Server, r *reply, args [][]byte) {
	iter, ok := parseInt(args[2])
	if !ok || iter <= 0 {
		r.err("Invalid position")
		return
	}
	defer s.ks.lockWrite(args[1])()
	_, err := s.ks.st.CFInfo(args[1])
	switch {
	case iter == 1 && err == nil:
		r.err("ERR item exists")
	case iter == 1 && !errors.Is(err, sieve.ErrNotFound):
		r.bfErr(err, true)
	case iter == 1 && (len(args[3]) == 0 || (args[3][0] != kindCuckoo && args[3][0] != kindPagedCF)):
		r.err("Invalid header")
	case iter == 1:
		if err := s.ks.st.CFLoadChunk(args[1], iter, args[3]); err != nil {
			r.err("Invalid header")
			return
		}
		r.ok()
	case err != nil:
		r.bfErr(err, true)
	default:
		if err := s.ks.st.CFLoadChunk(args[1], iter, args[3]); err != nil {
			r.err("Couldn't load chunk!")
			return
		}
		r.ok()
	}
}
