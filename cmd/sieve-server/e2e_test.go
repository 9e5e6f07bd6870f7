package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sievedb/sieve/sketchcol"
)

var ctx = context.Background()

// do runs one command and renders its reply (errors as "ERR:<message>").
func do(c *redis.Client, args ...any) string {
	v, err := c.Do(ctx, args...).Result()
	if errors.Is(err, redis.Nil) {
		return "<nil>"
	}
	if err != nil {
		return "ERR:" + err.Error()
	}
	return fmt.Sprint(v)
}

// TestGoRedis runs commands through go-redis v9 and checks Redis's
// replies and error strings.
func TestGoRedis(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	steps := append(append(goRedisStringSteps(), goRedisSketchSteps()...), goRedisAdminSteps()...)
	for i, st := range steps {
		if got := do(c, st.args...); got != st.want {
			t.Fatalf("step %d %v: got %q, want %q", i, st.args, got, st.want)
		}
	}
	checkScanMatch(t, c)
	info := do(c, "info", "sieve")
	if !strings.Contains(info, "filter_checks:") || !strings.Contains(info, "level0:tables=") {
		t.Fatalf("INFO sieve: %q", info)
	}
	if do(c, "flushall") != "OK" || do(c, "dbsize") != "0" {
		t.Fatal("FLUSHALL left keys")
	}
}

// goRedisStep is a command of TestGoRedis and its reply as do prints it.
type goRedisStep struct {
	args []any
	want string
}

// goRedisStringSteps: strings, counters and key commands.
func goRedisStringSteps() []goRedisStep {
	return []goRedisStep{
		{[]any{"ping"}, "PONG"},
		{[]any{"echo", "hi"}, "hi"},
		{[]any{"set", "k", "v"}, "OK"},
		{[]any{"get", "k"}, "v"},
		{[]any{"set", "k", "w", "nx"}, "<nil>"},
		{[]any{"set", "k", "w", "xx", "get"}, "v"},
		{[]any{"set", "k2", "x", "xx"}, "<nil>"},
		{[]any{"set", "k", "v", "ex", "10"}, "OK"},
		{[]any{"set", "k", "v", "bogus"}, "ERR:ERR syntax error"},
		{[]any{"set", "k", "v", "keepttl"}, "OK"},
		{[]any{"get"}, "ERR:ERR wrong number of arguments for 'get' command"},
		{[]any{"mset", "a", "1", "b", "2"}, "OK"},
		{[]any{"mset", "a"}, "ERR:ERR wrong number of arguments for 'mset' command"},
		{[]any{"mget", "a", "b", "nope"}, "[1 2 <nil>]"},
		{[]any{"exists", "a", "b", "a", "nope"}, "3"},
		{[]any{"incr", "a"}, "2"},
		{[]any{"incrby", "a", "40"}, "42"},
		{[]any{"decr", "a"}, "41"},
		{[]any{"decrby", "a", "50"}, "-9"},
		{[]any{"incr", "k"}, "ERR:ERR value is not an integer or out of range"},
		{[]any{"set", "big", "9223372036854775807"}, "OK"},
		{[]any{"incr", "big"}, "ERR:ERR increment or decrement would overflow"},
		{[]any{"append", "k", "xyz"}, "4"},
		{[]any{"strlen", "k"}, "4"},
		{[]any{"getrange", "k", "1", "-2"}, "xy"},
		{[]any{"setrange", "k", "6", "!"}, "7"},
		{[]any{"get", "k"}, "vxyz\x00\x00!"},
		{[]any{"setrange", "k", "-1", "x"}, "ERR:ERR offset is out of range"},
		{[]any{"type", "k"}, "string"},
		{[]any{"type", "nope"}, "none"},
		{[]any{"del", "k", "k", "nope"}, "1"},
		{[]any{"unlink", "b"}, "1"},
	}
}

// goRedisSketchSteps: HyperLogLogs, Bloom and cuckoo filters, on top of
// goRedisStringSteps' keys.
func goRedisSketchSteps() []goRedisStep {
	return []goRedisStep{
		{[]any{"pfadd", "h", "a", "b", "c"}, "1"},
		{[]any{"pfadd", "h", "a"}, "0"},
		{[]any{"pfcount", "h"}, "3"},
		{[]any{"getrange", "h", "15", "15"}, "\x00"},
		{[]any{"pfadd", "h", "d"}, "1"},
		{[]any{"getrange", "h", "15", "15"}, "\x80"},
		{[]any{"pfadd", "h2", "c", "d", "e"}, "1"},
		{[]any{"pfcount", "h", "h2"}, "5"},
		{[]any{"pfmerge", "hm", "h", "h2"}, "OK"},
		{[]any{"pfcount", "hm"}, "5"},
		{[]any{"type", "h"}, "string"},
		{[]any{"pfadd", "a", "x"}, "ERR:" + errNotHLL},
		{[]any{"bf.add", "h", "x"}, "ERR:" + errWrongTypeMsg},
		{[]any{"bf.reserve", "bf", "0.01", "1000"}, "OK"},
		{[]any{"bf.reserve", "bf", "0.01", "1000"}, "ERR:ERR item exists"},
		{[]any{"bf.reserve", "bf2", "2", "1000"}, "ERR:ERR (0 < error rate range < 1) "},
		{[]any{"bf.add", "bf", "x"}, "1"},
		{[]any{"bf.add", "bf", "x"}, "0"},
		{[]any{"bf.madd", "bf", "x", "y"}, "[0 1]"},
		{[]any{"bf.exists", "bf", "y"}, "1"},
		{[]any{"bf.mexists", "bf", "y", "zzz"}, "[1 0]"},
		{[]any{"bf.card", "bf"}, "2"},
		{[]any{"bf.insert", "bf3", "capacity", "10", "items", "p", "q"}, "[1 1]"},
		{[]any{"bf.insert", "bf4", "nocreate", "items", "p"}, "ERR:ERR not found"},
		{[]any{"bf.info", "bf", "items"}, "[2]"},
		{[]any{"type", "bf"}, "MBbloom--"},
		{[]any{"get", "bf"}, "ERR:" + errWrongTypeMsg},
		{[]any{"pfadd", "bf", "x"}, "ERR:" + errWrongTypeMsg},
		{[]any{"cf.reserve", "cf", "1000"}, "OK"},
		{[]any{"cf.add", "cf", "x"}, "1"},
		{[]any{"cf.addnx", "cf", "x"}, "0"},
		{[]any{"cf.add", "cf", "x"}, "1"},
		{[]any{"cf.count", "cf", "x"}, "2"},
		{[]any{"cf.del", "cf", "x"}, "1"},
		{[]any{"cf.exists", "cf", "x"}, "1"},
		{[]any{"cf.mexists", "cf", "x", "nope"}, "[1 0]"},
		{[]any{"cf.del", "nocf", "x"}, "ERR:Not found"},
		{[]any{"type", "cf"}, "MBbloomCF"},
	}
}

// goRedisAdminSteps: connection and server commands, and the keys left.
func goRedisAdminSteps() []goRedisStep {
	return []goRedisStep{
		{[]any{"select", "0"}, "OK"},
		{[]any{"select", "1"}, "ERR:ERR DB index is out of range (sieve-server has one database, 0)"},
		{[]any{"client", "setname", "me"}, "OK"},
		{[]any{"client", "getname"}, "me"},
		{[]any{"config", "get", "proto-max-bulk-len"}, "[proto-max-bulk-len 536870912]"},
		{[]any{"config", "set", "hll-sparse-max-bytes", "100"}, "ERR:ERR CONFIG SET failed (possibly related to argument 'hll-sparse-max-bytes') - sieve-server's HyperLogLogs use the fixed sparse limit 3000 (their canonical encoding depends on it)"},
		{[]any{"function", "flush"}, "OK"},
		{[]any{"debug", "object", "h"}, "ERR:ERR DEBUG is not supported by sieve-server (except DEBUG RELOAD)"},
		{[]any{"debug", "reload"}, "OK"},
		{[]any{"nosuch", "x"}, "ERR:ERR unknown command 'nosuch', with args beginning with: 'x' "},
		{[]any{"hello", "3"}, "ERR:NOPROTO sieve-server speaks RESP2 only"},
		{[]any{"dbsize"}, "8"},
	}
}

// checkScanMatch: SCAN with MATCH and COUNT visits every key once.
func checkScanMatch(t *testing.T, c *redis.Client) {
	t.Helper()
	seen := map[string]int{}
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, "h*", 3).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k]++
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if fmt.Sprint(seen) != "map[h:1 h2:1 hm:1]" {
		t.Fatalf("SCAN MATCH h*: %v", seen)
	}
}

// TestAuth: with a password every command but AUTH/HELLO/QUIT is refused.
func TestAuth(t *testing.T) {
	s := startServer(t, "", func(c *Config) { c.RequirePass = "sekrit" })
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	if got := do(c, "get", "x"); got != "ERR:NOAUTH Authentication required." {
		t.Fatalf("before AUTH: %q", got)
	}
	if got := do(c, "auth", "wrong"); got != "ERR:WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("wrong password: %q", got)
	}
	if got := do(c, "auth", "sekrit"); got != "OK" {
		t.Fatalf("AUTH: %q", got)
	}
	if got := do(c, "set", "x", "1"); got != "OK" {
		t.Fatalf("after AUTH: %q", got)
	}
	c3 := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true, Password: "sekrit"})
	defer c3.Close()
	if got := do(c3, "get", "x"); got != "1" {
		t.Fatalf("go-redis with Password: %q", got)
	}
}

// TestConcurrentClients: many pipelining clients on a few keys. BF.ADD's
// and CF.ADDNX's replies are those of a serial order (exactly one client
// sees each item as new) and INCR loses no increment.
func TestConcurrentClients(t *testing.T) {
	s := startServer(t, "", nil)
	const clients, items = 12, 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	bfNew := make([]int, items)
	cfNew := make([]int, items)
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: time.Minute})
			defer c.Close()
			p := c.Pipeline()
			bf := make([]*redis.Cmd, items)
			cf := make([]*redis.Cmd, items)
			for i := 0; i < items; i++ {
				bf[i] = p.Do(ctx, "bf.add", "bf", fmt.Sprint("item", i))
				cf[i] = p.Do(ctx, "cf.addnx", "cf", fmt.Sprint("item", i))
				p.Do(ctx, "incr", "n")
				p.Do(ctx, "pfadd", "h", fmt.Sprint("item", i))
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for i := 0; i < items; i++ {
				if err := bf[i].Err(); err != nil {
					t.Errorf("BF.ADD: %v", err)
					return
				}
				if err := cf[i].Err(); err != nil {
					t.Errorf("CF.ADDNX: %v", err)
					return
				}
				if v, _ := bf[i].Int(); v == 1 {
					bfNew[i]++
				}
				if v, _ := cf[i].Int(); v == 1 {
					cfNew[i]++
				}
			}
		}()
	}
	wg.Wait()
	// An item may be a false positive when first added (then no client
	// sees it as new), never new twice; the filters count what was new.
	bfTotal, cfTotal := 0, 0
	for i := 0; i < items; i++ {
		if bfNew[i] > 1 || cfNew[i] > 1 {
			t.Fatalf("item %d: BF.ADD said new %d times, CF.ADDNX %d times; want at most 1 each", i, bfNew[i], cfNew[i])
		}
		bfTotal += bfNew[i]
		cfTotal += cfNew[i]
	}
	if bfTotal < items*9/10 || cfTotal < items*9/10 {
		t.Fatalf("only %d/%d BF and %d/%d CF items new", bfTotal, items, cfTotal, items)
	}
	c := newClient(t, s.Addr())
	if got := do(c, "bf.card", "bf"); got != fmt.Sprint(bfTotal) {
		t.Fatalf("BF.CARD %s, want %d", got, bfTotal)
	}
	if got := do(c, "get", "n"); got != fmt.Sprint(clients*items) {
		t.Fatalf("INCR total %s, want %d", got, clients*items)
	}
	h := sketchcol.NewHLL()
	for i := 0; i < items; i++ {
		h.Add([]byte(fmt.Sprint("item", i)))
	}
	if got := do(c, "pfcount", "h"); got != fmt.Sprint(h.Count()) {
		t.Fatalf("PFCOUNT %s, want %d", got, h.Count())
	}
}

// TestRedisCLI: redis-cli talks to the server (inline and RESP).
func TestRedisCLI(t *testing.T) {
	cli := needTool(t, "redis-cli")
	s := startServer(t, "", nil)
	port := portOf(s.Addr())
	run := func(args ...string) string {
		out, err := exec.Command(cli, append([]string{"-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"ping"}, "PONG"},
		{[]string{"set", "greeting", "hello world"}, "OK"},
		{[]string{"get", "greeting"}, "hello world"},
		{[]string{"pfadd", "visitors", "alice", "bob", "carol"}, "1"},
		{[]string{"pfcount", "visitors"}, "3"},
		{[]string{"bf.add", "seen", "url1"}, "1"},
		{[]string{"bf.exists", "seen", "url1"}, "1"},
		{[]string{"dbsize"}, "3"},
		{[]string{"--scan", "--pattern", "vis*"}, "visitors"},
	} {
		if got := run(st.args...); got != st.want {
			t.Fatalf("redis-cli %v: got %q, want %q", st.args, got, st.want)
		}
	}
	if out, _ := exec.Command(cli, "-p", port, "info", "sieve").CombinedOutput(); !strings.Contains(string(out), "filter_fpr:") {
		t.Fatalf("redis-cli info sieve: %s", out)
	}
}
