package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/sketchcol"
)

// TestDifferentialRedis sends the same random sequences of string and PF*
// commands to sieve-server and to a real redis-server and compares every
// reply and, after every command, the GET bytes of the keys it touched.
//
// Accepted differences, counted and printed (sketchcol/FORMAT.md,
// "Compatibility with redis-server"): two HLL values with the same
// registers in different encodings (Redis keeps a value dense once dense
// and PFMERGE makes a dense result from a dense source; sieve's merged
// value is canonical; VAL runs may split differently). The value is then
// resynchronised (sieve's key is SET to Redis's bytes) so the sequence
// goes on. Corrupting HLL bytes in place is left to Redis's own suite
// (make redis-hll-suite): there Redis answers from a cache it trusts,
// sieve refuses the value.
func TestDifferentialRedis(t *testing.T) {
	raddr := startRedis(t)
	s := startServer(t, "", nil)
	red := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: time.Minute})
	defer red.Close()
	sie := newClient(t, s.Addr())
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	steps := 3000
	if testing.Short() {
		steps = 500
	}
	if v := os.Getenv("SIEVE_DIFF_STEPS"); v != "" {
		steps, _ = strconv.Atoi(v)
	}
	g := &diffGen{rng: rng, red: red, keys: []string{"k0", "k1", "k2", "k3", "k4", "h{t}"}}
	// A sparse HLL whose runs cover twice the registers: only multi-key
	// PFCOUNT reads it (a single-key PFCOUNT would answer Redis's cached
	// count, which sieve does not trust; see the comment above).
	corrupt := "HYLL\x01\x00\x00\x00" + strings.Repeat("\x00", 8) + "\x7f\xff\x7f\xff"
	for _, c := range []*redis.Client{red, sie} {
		if err := c.Set(ctx, "corrupt{hll}", corrupt, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var st diffStats
	trace := os.Getenv("SIEVE_DIFF_TRACE") != "" // log every step
	byName := map[string][2]int{}                // replies compared per command: [ok, error]
	for step := 0; step < steps; step++ {
		args := g.command(step)
		want, got := do(red, args...), do(sie, args...)
		if trace {
			t.Logf("step %d %s: %q", step, show(args), want)
		}
		if want != got && !sameTTL(args[0].(string), want, got) {
			t.Fatalf("step %d %s: redis %q, sieve %q", step, show(args), want, got)
		}
		n := byName[args[0].(string)]
		n[b2i(strings.HasPrefix(want, "ERR:"))]++
		byName[args[0].(string)] = n
		for _, kk := range g.keys {
			st.compareGet(t, red, sie, step, args, kk)
		}
	}
	t.Logf("replies compared, [ok errors] per command: %v", byName)
	t.Logf("%d steps; %d GETs of HLL values compared (%d dense), %d differed in encoding only (same registers; resynchronised)", steps, st.compared, st.dense, st.diverged)
}

// diffGen draws TestDifferentialRedis's commands from rng.
type diffGen struct {
	rng  *rand.Rand
	red  *redis.Client // Redis, for the HLL values it holds
	keys []string
}

func (g *diffGen) key() string  { return g.keys[g.rng.IntN(len(g.keys))] }
func (g *diffGen) elem() string { return "e" + strconv.Itoa(g.rng.IntN(2000)) }

func (g *diffGen) str() string {
	b := make([]byte, g.rng.IntN(12))
	for i := range b {
		const alphabet = "abcXYZ019 \x00\xff-"
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// isHLL reports whether Redis holds an HLL at k.
func (g *diffGen) isHLL(k string) bool {
	v, err := g.red.Get(ctx, k).Result()
	return err == nil && isHLLString([]byte(v))
}

// command draws the key and the command of step.
func (g *diffGen) command(step int) []any {
	k := g.key()
	if g.rng.IntN(4) == 0 {
		return g.bitCommand(k)
	}
	if g.rng.IntN(8) == 0 {
		return g.expiryCommand(k)
	}
	op := g.rng.IntN(116)
	switch {
	case op < 62:
		return g.hllOrSetCommand(op, k, step)
	case op >= 100:
		return g.everydayCommand(op-100, k)
	}
	return g.stringCommand(op, k)
}

// diffAt are absolute deadlines (unix seconds) far in the future, so
// that EXPIREAT's GT and LT compare the same way on both servers.
var diffAt = []string{"4102444800", "4133980800", "4165516800", "1", "-5", "abc", "99999999999999999"}

// expiryCommand: the expiry commands, with deadlines that do not pass
// during the run (relative ones of 1,000 s or more) or are already past.
func (g *diffGen) expiryCommand(k string) []any {
	flags := [][]any{nil, {"nx"}, {"xx"}, {"gt"}, {"lt"}, {"nx", "xx"}, {"gt", "lt"}, {"bogus"}}
	switch op := g.rng.IntN(12); op {
	case 0, 1:
		f := flags[g.rng.IntN(3)] // GT and LT only with absolute deadlines
		return append([]any{[]string{"expire", "pexpire"}[op], k, []string{"1000", "5000", "0", "-1", "x"}[g.rng.IntN(5)]}, f...)
	case 2, 3:
		at := diffAt[g.rng.IntN(len(diffAt))]
		if op == 3 {
			at += "000"
		}
		return append([]any{[]string{"expireat", "pexpireat"}[op-2], k, at}, flags[g.rng.IntN(len(flags))]...)
	case 4:
		return []any{[]string{"ttl", "pttl", "expiretime", "pexpiretime"}[g.rng.IntN(4)], k}
	case 5:
		return []any{"persist", k}
	case 6:
		return []any{[]string{"setex", "psetex"}[g.rng.IntN(2)], k, []string{"1000", "5000000", "0", "-3"}[g.rng.IntN(4)], g.str()}
	case 7, 8:
		opt := [][]any{{"ex", "1000"}, {"px", "5000000"}, {"exat", "4102444800"}, {"keepttl"}, {"ex", "0"}, {"ex", "1000", "keepttl"}, {"nx", "ex", "2000"}}
		return append([]any{"set", k, g.str()}, opt[g.rng.IntN(len(opt))]...)
	case 9:
		opt := [][]any{nil, {"ex", "1000"}, {"persist"}, {"pxat", "4102444800000"}, {"ex", "-1"}, {"persist", "ex", "5"}}
		return append([]any{"getex", k}, opt[g.rng.IntN(len(opt))]...)
	case 10:
		if !g.isHLL(k) { // damaged HLL bytes: see TestDifferentialRedis's comment
			return []any{"append", k, g.str()}
		}
	}
	return []any{"ttl", k}
}

// sameTTL accepts two replies of a time-to-live command that differ only
// by the time between the two servers' answers.
func sameTTL(cmd, want, got string) bool {
	tol := map[string]int64{"ttl": 1, "expiretime": 1, "pttl": 1000, "pexpiretime": 1000}[cmd]
	if tol == 0 {
		return false
	}
	a, err1 := strconv.ParseInt(want, 10, 64)
	b, err2 := strconv.ParseInt(got, 10, 64)
	return err1 == nil && err2 == nil && a > 0 && b > 0 && max(a-b, b-a) <= tol
}

// diffFloats are INCRBYFLOAT's increments: numbers strtold reads, and
// some it refuses or that overflow.
var diffFloats = []string{"1.5", "-0.25", "1e3", "0x10", "abc", "1e5000", "3", "-3.0e-2", "inf", "0.1",
	"1e-20", "12345678.9", "-1e15", "007", "+2", ".5", "5.", "1e", " 1", "-0", "1.5e-4940", "0x1.8p1"}

// diffInts are INCRBY's increments, with some that Redis's string2ll
// refuses (leading zeros, a plus sign, "-0", spaces).
var diffInts = []string{"012", "+1", "-0", " 1", "1 ", "00", "9223372036854775807", "-9223372036854775808", "9223372036854775808"}

// everydayCommand: GETDEL, MSETNX, RENAME, RENAMENX, COPY, INCRBYFLOAT,
// LCS (op 0..15).
func (g *diffGen) everydayCommand(op int, k string) []any {
	k2 := g.key()
	switch {
	case op < 2:
		return []any{"getdel", k}
	case op < 4:
		return []any{"msetnx", k, g.str(), k2, g.str()}
	case op < 6:
		return []any{[]string{"rename", "renamenx"}[g.rng.IntN(2)], k, k2}
	case op < 9:
		args := []any{"copy", k, k2}
		if g.rng.IntN(4) == 0 {
			args = append(args, "db", "0")
		}
		if g.rng.IntN(2) == 0 {
			args = append(args, "replace")
		}
		return args
	case op < 12:
		if g.rng.IntN(3) == 0 {
			return []any{"incrby", k, diffInts[g.rng.IntN(len(diffInts))]}
		}
		if g.rng.IntN(3) > 0 {
			k = "float" // a key that holds numbers: the sums' formatting
		}
		return []any{"incrbyfloat", k, diffFloats[g.rng.IntN(len(diffFloats))]}
	}
	if g.isHLL(k) || g.isHLL(k2) { // a dense HLL's table would be 150M cells
		return []any{"strlen", k}
	}
	args := []any{"lcs", k, k2}
	switch g.rng.IntN(5) {
	case 1:
		args = append(args, "len")
	case 2:
		args = append(args, "idx")
	case 3:
		args = append(args, "idx", "minmatchlen", strconv.Itoa(g.rng.IntN(4)-1), "withmatchlen")
	case 4:
		args = append(args, "withmatchlen", "idx")
	}
	return args
}

// hllOrSetCommand: PFADD, PFCOUNT, PFMERGE, SET (op < 62).
func (g *diffGen) hllOrSetCommand(op int, k string, step int) []any {
	switch {
	case op < 30:
		args := []any{"pfadd", k}
		for n := g.rng.IntN(4); n > 0; n-- {
			args = append(args, g.elem())
		}
		if g.rng.IntN(10) == 0 { // bulk add: through the sparse→dense promotion
			for n := 0; n < 1500; n++ {
				args = append(args, g.elem()+strconv.Itoa(step))
			}
		}
		return args
	case op < 42:
		args := []any{"pfcount", k}
		for n := g.rng.IntN(4) - 1; n > 0; n-- { // multi-key: Redis's order of checks
			args = append(args, g.key())
		}
		if len(args) > 2 && g.rng.IntN(3) == 0 { // a corrupted HLL among them
			i := 1 + g.rng.IntN(len(args)-1)
			args = append(args[:i], append([]any{"corrupt{hll}"}, args[i:]...)...)
		}
		return args
	case op < 48:
		return []any{"pfmerge", k, g.key(), g.key()}
	case op < 58:
		return []any{"set", k, g.str()}
	default: // SET of HLL bytes taken from Redis
		if v, err := g.red.Get(ctx, g.key()).Result(); err == nil && isHLLString([]byte(v)) {
			return []any{"set", k, v}
		}
		return []any{"get", k}
	}
}

// stringCommand: the string and key commands (op >= 62).
func (g *diffGen) stringCommand(op int, k string) []any {
	switch {
	case op < 72:
		return []any{"get", k}
	case op < 75:
		return []any{"del", k, g.key()}
	case op < 78:
		return []any{"exists", k, g.key()}
	case op < 81:
		return []any{"strlen", k}
	case op < 84:
		return []any{"type", k}
	case op < 88:
		return []any{"getrange", k, strconv.Itoa(g.rng.IntN(30) - 10), strconv.Itoa(g.rng.IntN(30) - 10)}
	case op < 92:
		if g.isHLL(k) {
			return []any{"get", k}
		}
		return []any{"append", k, g.str()}
	case op < 95:
		if g.isHLL(k) {
			return []any{"strlen", k}
		}
		return []any{"setrange", k, strconv.Itoa(g.rng.IntN(20)), g.str()}
	default:
		args := []any{[]string{"incr", "decr", "incrby"}[g.rng.IntN(3)], k}
		if args[0] == "incrby" {
			args = append(args, strconv.Itoa(g.rng.IntN(100)-50))
		}
		return args
	}
}

// diffStats counts TestDifferentialRedis's HLL comparisons.
type diffStats struct{ diverged, compared, dense int }

// compareGet compares the GET of kk on both servers after step's args and
// resynchronises sieve's value when it differs in encoding only.
func (st *diffStats) compareGet(t *testing.T, red, sie *redis.Client, step int, args []any, kk string) {
	t.Helper()
	rv, rerr := red.Get(ctx, kk).Result()
	sv, serr := sie.Get(ctx, kk).Result()
	if fmt.Sprint(rerr) != fmt.Sprint(serr) {
		t.Fatalf("step %d %s: GET %s: redis err %v, sieve err %v", step, show(args), kk, rerr, serr)
	}
	if rerr != nil {
		return
	}
	if isHLLString([]byte(rv)) {
		st.compared++
		if rv[4] == 0 {
			st.dense++
		}
	}
	if rv == sv {
		return
	}
	if !sameRegisters(rv, sv) || rv[8:16] != sv[8:16] && (rv[15]&0x80 != 0) != (sv[15]&0x80 != 0) {
		t.Fatalf("step %d %s: GET %s differs beyond the documented cases:\nredis %q\nsieve %q", step, show(args), kk, clipS(rv), clipS(sv))
	}
	st.diverged++
	if err := sie.Set(ctx, kk, rv, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// sameRegisters reports whether two HLL strings hold the same registers.
func sameRegisters(a, b string) bool {
	ha, err1 := sketchcol.ParseHLL([]byte(a))
	hb, err2 := sketchcol.ParseHLL([]byte(b))
	return err1 == nil && err2 == nil && ha.Equal(hb)
}

func show(args []any) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		s := fmt.Sprint(a)
		if len(s) > 40 {
			s = s[:40] + fmt.Sprintf("...(%d bytes)", len(s))
		}
		b.WriteString(strconv.Quote(s))
	}
	return b.String()
}

func clipS(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// TestDifferentialRedisPipelined sends random pipelines (1..40 commands)
// of the same kinds of commands to both servers: sieve-server writes the
// SETs and PFADDs of a pipeline as one batch (deferred.go), so the replies
// within a pipeline, and the values after it, must still be Redis's.
func TestDifferentialRedisPipelined(t *testing.T) {
	raddr := startRedis(t)
	s := startServer(t, "", nil)
	red := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: time.Minute})
	defer red.Close()
	sie := newClient(t, s.Addr())
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	pipelines := 400
	if testing.Short() {
		pipelines = 100
	}
	g := &pipeGen{rng: rng, hkeys: []string{"h0", "h1", "h2", "h3"}, skeys: []string{"s0", "s1", "s2"}, mayBeHLL: map[string]bool{}}
	all := append(append([]string{}, g.hkeys...), g.skeys...)
	for p := 0; p < pipelines; p++ {
		cmds := g.pipeline()
		want, got := runPipeline(red, cmds), runPipeline(sie, cmds)
		for i := range cmds {
			if want[i] != got[i] {
				t.Fatalf("pipeline %d command %d/%d %s: redis %q, sieve %q", p, i, len(cmds), show(cmds[i]), clipS(want[i]), clipS(got[i]))
			}
		}
		for _, k := range all {
			g.compareGet(t, red, sie, p, k)
		}
	}
	t.Logf("%d pipelines compared", pipelines)
}

// pipeGen draws TestDifferentialRedisPipelined's pipelines from rng.
type pipeGen struct {
	rng          *rand.Rand
	hkeys, skeys []string
	lastHLL      string // the last HLL value read from Redis
	// mayBeHLL marks the string keys a PFADD may have made an HLL since
	// their last SET: APPEND to those would corrupt the HLL bytes, which
	// Redis reads on without checking and sieve refuses (left to Redis's
	// own suite, see TestDifferentialRedis); a GET is sent instead.
	mayBeHLL map[string]bool
}

func (g *pipeGen) pick(ks []string) string { return ks[g.rng.IntN(len(ks))] }
func (g *pipeGen) elem() string            { return "e" + strconv.Itoa(g.rng.IntN(3000)) }

// pipeline draws a pipeline of 1..40 commands.
func (g *pipeGen) pipeline() [][]any {
	n := 1 + g.rng.IntN(40)
	var cmds [][]any
	for i := 0; i < n; i++ {
		cmds = append(cmds, g.command())
	}
	return cmds
}

func (g *pipeGen) command() []any {
	h, sk := g.pick(g.hkeys), g.pick(g.skeys)
	switch op := g.rng.IntN(100); {
	case op < 40:
		args := []any{"pfadd", h}
		for m := g.rng.IntN(4); m > 0; m-- {
			args = append(args, g.elem())
		}
		return args
	case op < 48:
		return []any{"pfcount", h}
	case op < 52:
		return []any{"pfmerge", h, g.pick(g.hkeys)}
	case op < 58:
		return []any{"get", h}
	case op < 61:
		return []any{"set", h, "not an hll"}
	case op < 64:
		if g.lastHLL != "" {
			return []any{"set", h, g.lastHLL}
		}
		return []any{"del", h}
	case op < 67:
		return []any{"del", h}
	case op < 77:
		g.mayBeHLL[sk] = false
		return []any{"set", sk, strconv.Itoa(g.rng.IntN(100))}
	case op < 85:
		return []any{"get", sk}
	case op < 90:
		return []any{"incr", sk}
	case op < 94:
		if g.mayBeHLL[sk] {
			return []any{"get", sk}
		}
		return []any{"append", sk, "x"}
	case op < 97:
		g.mayBeHLL[sk] = true
		return []any{"pfadd", sk, g.elem()}
	case op < 98:
		return []any{"mget", h, sk}
	case op < 99:
		return []any{"copy", h, g.pick(g.hkeys), "replace"}
	default:
		return []any{"incrbyfloat", sk, "1.5"}
	}
}

// runPipeline sends cmds to c as one pipeline and returns the replies as
// do prints them.
func runPipeline(c *redis.Client, cmds [][]any) []string {
	pl := c.Pipeline()
	res := make([]*redis.Cmd, len(cmds))
	for i, a := range cmds {
		res[i] = pl.Do(ctx, a...)
	}
	_, _ = pl.Exec(ctx)
	out := make([]string, len(cmds))
	for i, r := range res {
		v, err := r.Result()
		switch {
		case errors.Is(err, redis.Nil):
			out[i] = "<nil>"
		case err != nil:
			out[i] = "ERR:" + err.Error()
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}

// compareGet compares the GET of k on both servers after pipeline p,
// resynchronises an encoding-only difference and remembers Redis's HLL.
func (g *pipeGen) compareGet(t *testing.T, red, sie *redis.Client, p int, k string) {
	t.Helper()
	rv, rerr := red.Get(ctx, k).Result()
	sv, serr := sie.Get(ctx, k).Result()
	if fmt.Sprint(rerr) != fmt.Sprint(serr) || (rerr == nil && rv != sv && !sameRegisters(rv, sv)) {
		t.Fatalf("after pipeline %d: GET %s: redis %q %v, sieve %q %v", p, k, clipS(rv), rerr, clipS(sv), serr)
	}
	if rerr == nil && rv != sv { // encoding only: resynchronise
		_ = sie.Set(ctx, k, rv, 0).Err()
	}
	if rerr == nil && isHLLString([]byte(rv)) {
		g.lastHLL = rv
	}
}

// bitOff draws a bit offset: mostly in the first bytes, sometimes pages
// away (a paged string's later pages).
func (g *diffGen) bitOff() int {
	if g.rng.IntN(5) == 0 {
		return g.rng.IntN(80000)
	}
	return g.rng.IntN(200)
}

// bitIdx draws a start or end argument of BITCOUNT and BITPOS.
func (g *diffGen) bitIdx() string { return strconv.Itoa(g.rng.IntN(120) - 40) }

// bitCommand: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO,
// and SETRANGE/APPEND far out (on paged strings). Bits of an HLL are
// read, not written (corrupting HLL bytes in place is left to Redis's
// own suite: see TestDifferentialRedis), and BITOP takes no HLL source.
func (g *diffGen) bitCommand(k string) []any {
	unit := []string{"BYTE", "BIT", "bit", "byte", "FOO"}
	op := g.rng.IntN(100)
	if g.isHLL(k) && (op < 35 || op >= 72) {
		return []any{"getbit", k, g.bitOff()}
	}
	switch {
	case op < 35:
		return []any{"setbit", k, g.bitOff(), g.rng.IntN(2)}
	case op < 45:
		return []any{"getbit", k, g.bitOff()}
	case op < 58:
		args := []any{"bitcount", k}
		if n := g.rng.IntN(4); n > 0 {
			args = append(args, g.bitIdx(), g.bitIdx())
			if n > 1 {
				args = append(args, unit[g.rng.IntN(len(unit))])
			}
		}
		return args
	case op < 72:
		args := []any{"bitpos", k, g.rng.IntN(2)}
		if n := g.rng.IntN(4); n > 0 {
			args = append(args, g.bitIdx())
			if n > 1 {
				args = append(args, g.bitIdx())
			}
			if n > 2 {
				args = append(args, unit[g.rng.IntN(len(unit))])
			}
		}
		return args
	case op < 80:
		bop := []string{"and", "or", "xor", "not"}[g.rng.IntN(4)]
		args := []any{"bitop", bop, k, g.key()}
		if bop != "not" || g.rng.IntN(10) == 0 {
			args = append(args, g.key())
		}
		for _, a := range args[3:] {
			if g.isHLL(a.(string)) {
				return []any{"bitcount", a}
			}
		}
		return args
	case op < 92:
		return g.bitfield(k, g.rng.IntN(8) == 0 || g.isHLL(k))
	case op < 96:
		if g.isHLL(k) {
			return []any{"strlen", k}
		}
		return []any{"setrange", k, strconv.Itoa(g.rng.IntN(10000)), g.str()}
	default:
		if g.isHLL(k) {
			return []any{"strlen", k}
		}
		return []any{"append", k, g.str()}
	}
}

// bitfield draws a BITFIELD (or BITFIELD_RO) of 1..4 subcommands.
func (g *diffGen) bitfield(k string, ro bool) []any {
	args := []any{"bitfield", k}
	if ro {
		args[0] = "bitfield_ro"
	}
	for n := 1 + g.rng.IntN(4); n > 0; n-- {
		typ := []string{"i", "u"}[g.rng.IntN(2)] + strconv.Itoa(1+g.rng.IntN(64))
		off := strconv.Itoa(g.rng.IntN(100))
		if g.rng.IntN(4) == 0 {
			off = "#" + strconv.Itoa(g.rng.IntN(10))
		}
		val := strconv.FormatInt(g.rng.Int64N(1<<20)-1<<19, 10)
		if g.rng.IntN(4) == 0 {
			val = strconv.FormatInt(int64(g.rng.Uint64()), 10)
		}
		switch g.rng.IntN(5) {
		case 0:
			args = append(args, "overflow", []string{"wrap", "sat", "fail"}[g.rng.IntN(3)])
		case 1:
			args = append(args, "get", typ, off)
		case 2:
			args = append(args, "set", typ, off, val)
		default:
			args = append(args, "incrby", typ, off, val)
		}
	}
	return args
}
