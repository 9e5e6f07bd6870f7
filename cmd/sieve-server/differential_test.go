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
	keys := []string{"k0", "k1", "k2", "k3", "k4", "h{t}"}
	key := func() string { return keys[rng.IntN(len(keys))] }
	elem := func() string { return "e" + strconv.Itoa(rng.IntN(2000)) }
	str := func() string {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			const alphabet = "abcXYZ019 \x00\xff-"
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	isHLL := func(k string) bool {
		v, err := red.Get(ctx, k).Result()
		return err == nil && isHLLString([]byte(v))
	}
	diverged, compared, dense := 0, 0, 0
	for step := 0; step < steps; step++ {
		k := key()
		var args []any
		switch op := rng.IntN(100); {
		case op < 30:
			args = []any{"pfadd", k}
			for n := rng.IntN(4); n > 0; n-- {
				args = append(args, elem())
			}
			if rng.IntN(10) == 0 { // bulk add: through the sparse→dense promotion
				for n := 0; n < 1500; n++ {
					args = append(args, elem()+strconv.Itoa(step))
				}
			}
		case op < 42:
			args = []any{"pfcount", k}
			if rng.IntN(3) == 0 {
				args = append(args, key())
			}
		case op < 48:
			args = []any{"pfmerge", k, key(), key()}
		case op < 58:
			args = []any{"set", k, str()}
		case op < 62: // SET of HLL bytes taken from Redis
			if v, err := red.Get(ctx, key()).Result(); err == nil && isHLLString([]byte(v)) {
				args = []any{"set", k, v}
			} else {
				args = []any{"get", k}
			}
		case op < 72:
			args = []any{"get", k}
		case op < 75:
			args = []any{"del", k, key()}
		case op < 78:
			args = []any{"exists", k, key()}
		case op < 81:
			args = []any{"strlen", k}
		case op < 84:
			args = []any{"type", k}
		case op < 88:
			args = []any{"getrange", k, strconv.Itoa(rng.IntN(30) - 10), strconv.Itoa(rng.IntN(30) - 10)}
		case op < 92:
			if isHLL(k) {
				args = []any{"get", k}
			} else {
				args = []any{"append", k, str()}
			}
		case op < 95:
			if isHLL(k) {
				args = []any{"strlen", k}
			} else {
				args = []any{"setrange", k, strconv.Itoa(rng.IntN(20)), str()}
			}
		default:
			args = []any{[]string{"incr", "decr", "incrby"}[rng.IntN(3)], k}
			if args[0] == "incrby" {
				args = append(args, strconv.Itoa(rng.IntN(100)-50))
			}
		}
		want, got := do(red, args...), do(sie, args...)
		if want != got {
			t.Fatalf("step %d %s: redis %q, sieve %q", step, show(args), want, got)
		}
		for _, kk := range keys {
			rv, rerr := red.Get(ctx, kk).Result()
			sv, serr := sie.Get(ctx, kk).Result()
			if fmt.Sprint(rerr) != fmt.Sprint(serr) {
				t.Fatalf("step %d %s: GET %s: redis err %v, sieve err %v", step, show(args), kk, rerr, serr)
			}
			if rerr != nil {
				continue
			}
			if isHLLString([]byte(rv)) {
				compared++
				if rv[4] == 0 {
					dense++
				}
			}
			if rv == sv {
				continue
			}
			if !sameRegisters(rv, sv) || rv[8:16] != sv[8:16] && (rv[15]&0x80 != 0) != (sv[15]&0x80 != 0) {
				t.Fatalf("step %d %s: GET %s differs beyond the documented cases:\nredis %q\nsieve %q", step, show(args), kk, clipS(rv), clipS(sv))
			}
			diverged++
			if err := sie.Set(ctx, kk, rv, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d steps; %d GETs of HLL values compared (%d dense), %d differed in encoding only (same registers; resynchronised)", steps, compared, dense, diverged)
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
	hkeys := []string{"h0", "h1", "h2", "h3"}
	skeys := []string{"s0", "s1", "s2"}
	all := append(append([]string{}, hkeys...), skeys...)
	pick := func(ks []string) string { return ks[rng.IntN(len(ks))] }
	elem := func() string { return "e" + strconv.Itoa(rng.IntN(3000)) }
	var lastHLL string
	for p := 0; p < pipelines; p++ {
		n := 1 + rng.IntN(40)
		var cmds [][]any
		for i := 0; i < n; i++ {
			h, sk := pick(hkeys), pick(skeys)
			var args []any
			switch op := rng.IntN(100); {
			case op < 40:
				args = []any{"pfadd", h}
				for m := rng.IntN(4); m > 0; m-- {
					args = append(args, elem())
				}
			case op < 48:
				args = []any{"pfcount", h}
			case op < 52:
				args = []any{"pfmerge", h, pick(hkeys)}
			case op < 58:
				args = []any{"get", h}
			case op < 61:
				args = []any{"set", h, "not an hll"}
			case op < 64:
				if lastHLL != "" {
					args = []any{"set", h, lastHLL}
				} else {
					args = []any{"del", h}
				}
			case op < 67:
				args = []any{"del", h}
			case op < 77:
				args = []any{"set", sk, strconv.Itoa(rng.IntN(100))}
			case op < 85:
				args = []any{"get", sk}
			case op < 90:
				args = []any{"incr", sk}
			case op < 94:
				args = []any{"append", sk, "x"}
			case op < 97:
				args = []any{"pfadd", sk, elem()}
			default:
				args = []any{"mget", h, sk}
			}
			cmds = append(cmds, args)
		}
		run := func(c *redis.Client) []string {
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
		want, got := run(red), run(sie)
		for i := range cmds {
			if want[i] != got[i] {
				t.Fatalf("pipeline %d command %d/%d %s: redis %q, sieve %q", p, i, len(cmds), show(cmds[i]), clipS(want[i]), clipS(got[i]))
			}
		}
		for _, k := range all {
			rv, rerr := red.Get(ctx, k).Result()
			sv, serr := sie.Get(ctx, k).Result()
			if fmt.Sprint(rerr) != fmt.Sprint(serr) || (rerr == nil && rv != sv && !sameRegisters(rv, sv)) {
				t.Fatalf("after pipeline %d: GET %s: redis %q %v, sieve %q %v", p, k, clipS(rv), rerr, clipS(sv), serr)
			}
			if rerr == nil && rv != sv { // encoding only: resynchronise
				_ = sie.Set(ctx, k, rv, 0).Err()
			}
			if rerr == nil && isHLLString([]byte(rv)) {
				lastHLL = rv
			}
		}
	}
	t.Logf("%d pipelines compared", pipelines)
}
