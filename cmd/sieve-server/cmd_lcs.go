package main

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest
// common subsequence of two strings, by Redis's dynamic programming, with
// its matches reported in Redis's order (from the end of the strings).

func init() {
	register(&command{name: "lcs", arity: -3, fn: cmdLCS})
}

// lcsMaxCells bounds the table (4 bytes a cell: 1 GiB). Redis allocates
// whatever the strings need and answers this error only when the
// allocation fails; sieve refuses a table over this size.
const lcsMaxCells = 1 << 28

type lcsOpts struct {
	idx, length, withLen bool
	minLen               int64
}

func cmdLCS(s *Server, r *reply, args [][]byte) {
	var ab [2][]byte
	for i, k := range args[1:3] {
		t, v, err := s.ks.lookup(k)
		switch {
		case err != nil:
			r.storeErr(err)
			return
		case t.isSketch():
			r.err("ERR The specified keys must contain string values")
			return
		}
		ab[i] = v
	}
	var o lcsOpts
	for i := 3; i < len(args); i++ {
		switch {
		case eq(args[i], "idx"):
			o.idx = true
		case eq(args[i], "len"):
			o.length = true
		case eq(args[i], "withmatchlen"):
			o.withLen = true
		case eq(args[i], "minmatchlen") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				r.notInt()
				return
			}
			o.minLen = max(n, 0)
			i++
		default:
			r.syntax()
			return
		}
	}
	if o.idx && o.length {
		r.err("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	a, b := ab[0], ab[1]
	if int64(len(a)+1)*int64(len(b)+1) > lcsMaxCells {
		r.err("ERR Insufficient memory, failed allocating transient memory for LCS")
		return
	}
	lcsReply(r, a, b, lcsTable(a, b), o)
}

// lcsTable returns the table whose cell i*(len(b)+1)+j is the length of
// the LCS of a[:i] and b[:j].
func lcsTable(a, b []byte) []uint32 {
	w := len(b) + 1
	t := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				t[i*w+j] = t[(i-1)*w+j-1] + 1
			default:
				t[i*w+j] = max(t[(i-1)*w+j], t[i*w+j-1])
			}
		}
	}
	return t
}

// lcsMatch is one run of matching bytes: a[a0:a1+1] == b[b0:b1+1].
type lcsMatch struct{ a0, a1, b0, b1 int }

// lcsWalk walks the table back from the end of both strings and returns
// the subsequence and its runs, last run first (Redis's order).
func lcsWalk(a, b []byte, t []uint32) ([]byte, []lcsMatch) {
	w := len(b) + 1
	n := t[len(a)*w+len(b)]
	seq := make([]byte, n)
	var runs []lcsMatch
	var cur *lcsMatch
	i, j := len(a), len(b)
	for i > 0 && j > 0 {
		if a[i-1] == b[j-1] {
			n--
			seq[n] = a[i-1]
			if cur != nil && cur.a0 == i && cur.b0 == j {
				cur.a0, cur.b0 = i-1, j-1
			} else {
				runs = append(runs, lcsMatch{i - 1, i - 1, j - 1, j - 1})
				cur = &runs[len(runs)-1]
			}
			i, j = i-1, j-1
			continue
		}
		cur = nil
		if t[(i-1)*w+j] > t[i*w+j-1] {
			i--
		} else {
			j--
		}
	}
	return seq, runs
}

func lcsReply(r *reply, a, b []byte, t []uint32, o lcsOpts) {
	total := int64(t[len(t)-1])
	if o.length && !o.idx {
		r.int(total)
		return
	}
	seq, runs := lcsWalk(a, b, t)
	if !o.idx {
		r.bulk(seq)
		return
	}
	var shown []lcsMatch
	for _, m := range runs {
		if int64(m.a1-m.a0+1) >= o.minLen {
			shown = append(shown, m)
		}
	}
	r.array(4)
	r.bulkString("matches")
	r.array(len(shown))
	for _, m := range shown {
		r.array(2 + b2i(o.withLen))
		r.array(2)
		r.int(int64(m.a0))
		r.int(int64(m.a1))
		r.array(2)
		r.int(int64(m.b0))
		r.int(int64(m.b1))
		if o.withLen {
			r.int(int64(m.a1 - m.a0 + 1))
		}
	}
	r.bulkString("len")
	r.int(total)
}
