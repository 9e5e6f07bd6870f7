package main

import (
	"errors"
	"math"
	"strconv"

	"github.com/sievedb/sieve/sketchcol"
)

// RedisBloom's CMS.* and TOPK.* on the Store. The Store's errors carry
// RedisBloom's texts ("CMS: key does not exist", ...), which are the
// replies.

func init() {
	register(
		&command{name: "cms.initbydim", arity: 4, fn: cmdCMSInitByDim, write: true},
		&command{name: "cms.initbyprob", arity: 4, fn: cmdCMSInitByProb, write: true},
		&command{name: "cms.incrby", arity: -4, fn: cmdCMSIncrBy, write: true},
		&command{name: "cms.query", arity: -3, fn: cmdCMSQuery},
		&command{name: "cms.merge", arity: -4, fn: cmdCMSMerge, write: true},
		&command{name: "cms.info", arity: 2, fn: cmdCMSInfo},
		&command{name: "topk.reserve", arity: -3, fn: cmdTopKReserve, write: true},
		&command{name: "topk.add", arity: -3, fn: cmdTopKAdd, write: true},
		&command{name: "topk.incrby", arity: -4, fn: cmdTopKIncrBy, write: true},
		&command{name: "topk.query", arity: -3, fn: cmdTopKQuery},
		&command{name: "topk.count", arity: -3, fn: cmdTopKCount},
		&command{name: "topk.list", arity: -2, fn: cmdTopKList},
		&command{name: "topk.info", arity: 2, fn: cmdTopKInfo},
	)
}

// counterErr answers a Store error of a CMS.*/TOPK.* command.
func (r *reply) counterErr(err error) {
	if errors.Is(err, sketchcol.ErrWrongType) {
		r.wrongType()
		return
	}
	if msg, ok := sketchcol.RedisBloomText(err); ok {
		r.err(msg)
		return
	}
	r.storeErr(err)
}

// positiveInt parses a dimension argument, answering bad with msg.
func positiveInt(r *reply, b []byte, msg string) (int, bool) {
	n, ok := parseInt(b)
	if !ok || n <= 0 || n > 1<<31 {
		r.err(msg)
		return 0, false
	}
	return int(n), true
}

// dimension parses a Count-Min or Top-K dimension as RedisBloom does, an
// integer from 1 to max, answering msg otherwise. One that parses but is
// larger than sieve holds gets RedisBloom's reply for a sketch it cannot
// allocate (from the Store, or tooLarge here above 2³¹).
func dimension(r *reply, b []byte, max int64, msg string) (int64, bool) {
	n, ok := parseInt(b)
	if !ok || n < 1 || n > max {
		r.err(msg)
		return 0, false
	}
	return n, true
}

func cmdCMSInitByDim(s *Server, r *reply, args [][]byte) {
	w, ok := dimension(r, args[2], math.MaxInt64, sketchcol.ErrCMSInvalidWidth.Error())
	if !ok {
		return
	}
	d, ok := dimension(r, args[3], math.MaxInt64, sketchcol.ErrCMSInvalidDepth.Error())
	switch {
	case !ok:
		return
	case w > math.MaxInt64/d:
		r.err(sketchcol.ErrCMSInvalidInit.Error())
		return
	case w > 1<<31 || d > 1<<31:
		r.err(sketchcol.ErrCMSTooLarge.Error())
		return
	}
	defer s.ks.lockWrite(args[1])()
	if err := s.ks.st.CMSInitByDim(args[1], int(w), int(d)); err != nil {
		r.counterErr(err)
		return
	}
	r.ok()
}

func cmdCMSInitByProb(s *Server, r *reply, args [][]byte) {
	e, err1 := strconv.ParseFloat(string(args[2]), 64)
	p, err2 := strconv.ParseFloat(string(args[3]), 64)
	switch {
	case err1 != nil:
		r.err(sketchcol.ErrCMSInvalidError.Error())
		return
	case err2 != nil:
		r.err(sketchcol.ErrCMSInvalidProb.Error())
		return
	}
	defer s.ks.lockWrite(args[1])()
	if err := s.ks.st.CMSInitByProb(args[1], e, p); err != nil {
		r.counterErr(err)
		return
	}
	r.ok()
}

// itemIncrements splits "item increment [item increment ...]"; a count
// that does not parse answers badNumber.
func itemIncrements(r *reply, args [][]byte, name, badNumber string) ([][]byte, []int64, bool) {
	if len(args)%2 != 0 {
		r.wrongArgs(name)
		return nil, nil, false
	}
	items := make([][]byte, 0, len(args)/2)
	incrs := make([]int64, 0, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		n, ok := parseInt(args[i+1])
		if !ok {
			r.err(badNumber)
			return nil, nil, false
		}
		items, incrs = append(items, args[i]), append(incrs, n)
	}
	return items, incrs, true
}

func cmdCMSIncrBy(s *Server, r *reply, args [][]byte) {
	incrBy(s, r, args, "CMS.INCRBY", "CMS: Cannot parse number", s.ks.st.CMSIncrBy, (*reply).int64s)
}

// incrBy is CMS.INCRBY and TOPK.INCRBY: key item increment [...], applied
// under the key's lock by apply, answered by answer.
func incrBy[R any](s *Server, r *reply, args [][]byte, name, badNumber string,
	apply func(key []byte, items [][]byte, incrs []int64) (R, error), answer func(*reply, R)) {
	items, incrs, ok := itemIncrements(r, args[2:], name, badNumber)
	if !ok {
		return
	}
	defer s.ks.lockWrite(args[1])()
	out, err := apply(args[1], items, incrs)
	if err != nil {
		r.counterErr(err)
		return
	}
	answer(r, out)
}

func cmdCMSQuery(s *Server, r *reply, args [][]byte) {
	est, err := s.ks.st.CMSQuery(args[1], args[2:]...)
	if err != nil {
		r.counterErr(err)
		return
	}
	r.int64s(est)
}

// cmdCMSMerge is CMS.MERGE dest numKeys src... [WEIGHTS w...].
func cmdCMSMerge(s *Server, r *reply, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok || n <= 0 {
		r.err(sketchcol.ErrCMSNumKeys.Error())
		return
	}
	if int64(len(args)-3) < n {
		r.err(sketchcol.ErrCMSKeysWeights.Error())
		return
	}
	srcs, rest := args[3:3+n], args[3+n:]
	var weights []int64
	if len(rest) > 0 {
		if !eq(rest[0], "weights") || int64(len(rest)-1) != n {
			r.err(sketchcol.ErrCMSKeysWeights.Error())
			return
		}
		for _, w := range rest[1:] {
			v, ok := parseInt(w)
			if !ok {
				r.err("CMS: invalid weight value")
				return
			}
			weights = append(weights, v)
		}
	}
	defer s.ks.lockKeys(append([][]byte{args[1]}, srcs...))()
	defer s.ks.modified(args[1]) // RedisBloom signals the destination, written or not
	if err := s.ks.st.CMSMerge(args[1], srcs, weights); err != nil {
		r.counterErr(err)
		return
	}
	r.ok()
}

func cmdCMSInfo(s *Server, r *reply, args [][]byte) {
	info, err := s.ks.st.CMSInfo(args[1])
	if err != nil {
		r.counterErr(err)
		return
	}
	r.array(6)
	r.bulkString("width")
	r.int(int64(info.Width))
	r.bulkString("depth")
	r.int(int64(info.Depth))
	r.bulkString("count")
	r.int(int64(info.Count))
}

// cmdTopKReserve is TOPK.RESERVE key topk [width depth decay].
func cmdTopKReserve(s *Server, r *reply, args [][]byte) {
	if len(args) != 3 && len(args) != 6 {
		r.wrongArgs("TOPK.RESERVE")
		return
	}
	k, ok := dimension(r, args[2], math.MaxUint32, sketchcol.ErrTopKInvalidK.Error())
	if !ok {
		return
	}
	w, dp, decay := int64(8), int64(7), 0.9
	if len(args) == 6 {
		if w, ok = dimension(r, args[3], math.MaxUint32, sketchcol.ErrTopKInvalidWidth.Error()); !ok {
			return
		}
		if dp, ok = dimension(r, args[4], math.MaxUint32, sketchcol.ErrTopKInvalidDepth.Error()); !ok {
			return
		}
		var err error
		if decay, err = strconv.ParseFloat(string(args[5]), 64); err != nil || !(decay > 0 && decay <= 1) {
			r.err(sketchcol.ErrTopKInvalidDecay.Error())
			return
		}
	}
	if k > 1<<31 || w > 1<<31 || dp > 1<<31 {
		r.err(sketchcol.ErrTopKTooLarge.Error())
		return
	}
	spec := sketchcol.TopKSpec{K: int(k), Width: int(w), Depth: int(dp), Decay: decay}
	defer s.ks.lockWrite(args[1])()
	if err := s.ks.st.TopKReserve(args[1], spec.K, spec.Width, spec.Depth, spec.Decay); err != nil {
		r.counterErr(err)
		return
	}
	r.ok()
}

// expelled answers TOPK.ADD/INCRBY: per item the item it pushed out of
// the top k, or nil.
func (r *reply) expelled(out [][]byte) {
	r.array(len(out))
	for _, e := range out {
		if e == nil {
			r.null()
		} else {
			r.bulk(e)
		}
	}
}

func cmdTopKAdd(s *Server, r *reply, args [][]byte) {
	defer s.ks.lockWrite(args[1])()
	out, err := s.ks.st.TopKAdd(args[1], args[2:]...)
	if err != nil {
		r.counterErr(err)
		return
	}
	r.expelled(out)
}

// topKIncrText is RedisBloom 2.4.23's reply to a bad TOPK.INCRBY
// increment, byte for byte (its C source continues the string literal on
// a second line, spaces included).
const topKIncrText = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000"

// cmdTopKIncrBy is TOPK.INCRBY as RedisBloom runs it: the items before
// the first bad increment are added, and the reply is their expelled
// items followed by the error as the array's last element (RedisBloom
// declares an element per item and stops there, which frames the reply
// right only when the bad increment is the last; sieve's array is as
// long as what it holds).
func cmdTopKIncrBy(s *Server, r *reply, args [][]byte) {
	if len(args)%2 != 0 {
		r.wrongArgs("TOPK.INCRBY")
		return
	}
	var items [][]byte
	var incrs []int64
	bad := false
	for i := 2; i < len(args) && !bad; i += 2 {
		n, ok := parseInt(args[i+1])
		if bad = !ok || n < 0 || n > 100000; !bad {
			items, incrs = append(items, args[i]), append(incrs, n)
		}
	}
	defer s.ks.lockWrite(args[1])()
	var out [][]byte
	var err error
	if len(items) > 0 {
		out, err = s.ks.st.TopKIncrBy(args[1], items, incrs)
	} else {
		_, err = s.ks.st.TopKInfo(args[1]) // the key's errors come first
	}
	switch {
	case err != nil:
		r.counterErr(err)
	case !bad:
		r.expelled(out)
	default:
		r.array(len(out) + 1)
		for _, e := range out {
			if e == nil {
				r.null()
			} else {
				r.bulk(e)
			}
		}
		r.err(topKIncrText)
	}
}

func cmdTopKQuery(s *Server, r *reply, args [][]byte) {
	in, err := s.ks.st.TopKQuery(args[1], args[2:]...)
	if err != nil {
		r.counterErr(err)
		return
	}
	r.ints(in)
}

// cmdTopKCount is TOPK.COUNT key item... (deprecated in RedisBloom).
func cmdTopKCount(s *Server, r *reply, args [][]byte) {
	n, err := s.ks.st.TopKCount(args[1], args[2:]...)
	if err != nil {
		r.counterErr(err)
		return
	}
	r.array(len(n))
	for _, c := range n {
		r.int(c)
	}
}

// cmdTopKList is TOPK.LIST key [WITHCOUNT].
func cmdTopKList(s *Server, r *reply, args [][]byte) {
	switch {
	case len(args) == 2:
		items, err := s.ks.st.TopKList(args[1])
		if err != nil {
			r.counterErr(err)
			return
		}
		r.array(len(items))
		for _, it := range items {
			r.bulk(it)
		}
	case len(args) == 3 && eq(args[2], "withcount"):
		items, err := s.ks.st.TopKListWithCount(args[1])
		if err != nil {
			r.counterErr(err)
			return
		}
		r.array(2 * len(items))
		for _, it := range items {
			r.bulk(it.Item)
			r.int(it.Count)
		}
	default:
		r.syntax()
	}
}

func cmdTopKInfo(s *Server, r *reply, args [][]byte) {
	info, err := s.ks.st.TopKInfo(args[1])
	if err != nil {
		r.counterErr(err)
		return
	}
	r.array(8)
	r.bulkString("k")
	r.int(int64(info.K))
	r.bulkString("width")
	r.int(int64(info.Width))
	r.bulkString("depth")
	r.int(int64(info.Depth))
	r.bulkString("decay")
	r.bulkString(strconv.FormatFloat(info.Decay, 'g', -1, 64))
}

// int64s answers an array of integers.
func (r *reply) int64s(ns []int64) {
	r.array(len(ns))
	for _, n := range ns {
		r.int(n)
	}
}
