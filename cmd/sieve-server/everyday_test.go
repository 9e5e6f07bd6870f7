package main

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestEverydayCommands pins the replies of GETDEL, MSETNX, RENAME,
// RENAMENX, COPY, INCRBYFLOAT and LCS (each one checked against
// redis-server 7.0.15 by hand and by TestDifferentialRedis).
func TestEverydayCommands(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	steps := []goRedisStep{
		{[]any{"getdel", "nokey"}, "<nil>"},
		{[]any{"set", "a", "v"}, "OK"},
		{[]any{"getdel", "a"}, "v"},
		{[]any{"exists", "a"}, "0"},
		{[]any{"bf.add", "bf", "x"}, "1"},
		{[]any{"getdel", "bf"}, "ERR:" + errWrongTypeMsg},
		{[]any{"msetnx", "m1", "1", "m2", "2"}, "1"},
		{[]any{"msetnx", "m2", "x", "m3", "3"}, "0"},
		{[]any{"exists", "m3"}, "0"},
		{[]any{"msetnx", "m1"}, "ERR:ERR wrong number of arguments for 'msetnx' command"},
		{[]any{"rename", "nokey", "x"}, "ERR:ERR no such key"},
		{[]any{"renamenx", "nokey", "x"}, "ERR:ERR no such key"},
		{[]any{"rename", "m1", "m1"}, "OK"},
		{[]any{"renamenx", "m1", "m1"}, "0"},
		{[]any{"rename", "m1", "r1"}, "OK"},
		{[]any{"get", "r1"}, "1"},
		{[]any{"exists", "m1"}, "0"},
		{[]any{"renamenx", "r1", "m2"}, "0"},
		{[]any{"renamenx", "r1", "r2"}, "1"},
		{[]any{"rename", "r2", "bf"}, "OK"}, // over a key of another type
		{[]any{"type", "bf"}, "string"},
		{[]any{"copy", "bf", "bf"}, "ERR:ERR source and destination objects are the same"},
		{[]any{"copy", "nokey", "c"}, "0"},
		{[]any{"copy", "bf", "c"}, "1"},
		{[]any{"copy", "m2", "c"}, "0"},
		{[]any{"copy", "m2", "c", "replace"}, "1"},
		{[]any{"get", "c"}, "2"},
		{[]any{"copy", "m2", "c", "db", "0", "replace"}, "1"},
		{[]any{"copy", "m2", "c", "db", "1"}, "ERR:ERR DB index is out of range (sieve-server has one database, 0)"},
		{[]any{"copy", "m2", "c", "db", "x"}, "ERR:ERR value is not an integer or out of range"},
		{[]any{"copy", "m2", "c", "db"}, "ERR:ERR syntax error"},
		{[]any{"copy", "m2", "c", "foo"}, "ERR:ERR syntax error"},
		{[]any{"set", "f", "10.5"}, "OK"},
		{[]any{"incrbyfloat", "f", "0.1"}, "10.6"},
		{[]any{"incrbyfloat", "f", "-10.6"}, "0"},
		{[]any{"incrbyfloat", "f", "1e20"}, "100000000000000000000"},
		{[]any{"incrbyfloat", "f", "0.1"}, "100000000000000000000"},
		{[]any{"incrbyfloat", "nf", "0x1p3"}, "8"},
		{[]any{"incrbyfloat", "nf", "+.5"}, "8.5"},
		{[]any{"incrbyfloat", "nf", "5."}, "13.5"},
		{[]any{"incrbyfloat", "nf", "inf"}, "ERR:ERR increment would produce NaN or Infinity"},
		{[]any{"incrbyfloat", "nf", "1e5000"}, "ERR:ERR value is not a valid float"},
		{[]any{"incrbyfloat", "nf", "1e-5000"}, "ERR:ERR value is not a valid float"},
		{[]any{"incrbyfloat", "nf", " 1"}, "ERR:ERR value is not a valid float"},
		{[]any{"incrbyfloat", "nf", "1e"}, "ERR:ERR value is not a valid float"},
		{[]any{"incrbyfloat", "nf", "nan"}, "ERR:ERR value is not a valid float"},
		{[]any{"incrbyfloat", "nf", "1_0"}, "ERR:ERR value is not a valid float"},
		{[]any{"incrbyfloat", "nf", "1.5e-4940"}, "13.5"},
		{[]any{"set", "q", "0.1"}, "OK"},
		{[]any{"incrbyfloat", "q", "0.2"}, "0.3"},
		{[]any{"set", "q", "-0.000000000000000001"}, "OK"},
		{[]any{"incrbyfloat", "q", "0"}, "0"},
		{[]any{"set", "q", "abc"}, "OK"},
		{[]any{"incrbyfloat", "q", "1"}, "ERR:ERR value is not a valid float"},
		{[]any{"incrbyfloat", "bf2", "1"}, "1"},
		{[]any{"bf.add", "bf3", "x"}, "1"},
		{[]any{"incrbyfloat", "bf3", "x"}, "ERR:" + errWrongTypeMsg},
		{[]any{"incrby", "q", "012"}, "ERR:ERR value is not an integer or out of range"},
		{[]any{"incrby", "q", "+1"}, "ERR:ERR value is not an integer or out of range"},
		{[]any{"incrby", "q", "-0"}, "ERR:ERR value is not an integer or out of range"},
		{[]any{"set", "l1", "ohmytext"}, "OK"},
		{[]any{"set", "l2", "mynewtext"}, "OK"},
		{[]any{"lcs", "l1", "l2"}, "mytext"},
		{[]any{"lcs", "l1", "l2", "len"}, "6"},
		{[]any{"lcs", "l1", "l2", "idx"}, "[matches [[[4 7] [5 8]] [[2 3] [0 1]]] len 6]"},
		{[]any{"lcs", "l1", "l2", "idx", "minmatchlen", "4", "withmatchlen"}, "[matches [[[4 7] [5 8] 4]] len 6]"},
		{[]any{"lcs", "l1", "l2", "idx", "len"}, "ERR:ERR If you want both the length and indexes, please just use IDX."},
		{[]any{"lcs", "l1", "l2", "minmatchlen"}, "ERR:ERR syntax error"},
		{[]any{"lcs", "l1", "nokey"}, ""},
		{[]any{"lcs", "l1", "bf3"}, "ERR:ERR The specified keys must contain string values"},
		{[]any{"flushall"}, "OK"},
		{[]any{"randomkey"}, "<nil>"},
		{[]any{"set", "only", "1"}, "OK"},
		{[]any{"randomkey"}, "only"},
	}
	for i, st := range steps {
		if got := do(c, st.args...); got != st.want {
			t.Fatalf("step %d %v: got %q, want %q", i, st.args, got, st.want)
		}
	}
	// RANDOMKEY reaches every key.
	mustDo(t, c, "OK", "mset", "foo", "1", "bar", "2")
	seen := map[string]bool{}
	for i := 0; i < 2000 && len(seen) < 3; i++ {
		seen[do(c, "randomkey")] = true
	}
	if len(seen) != 3 {
		t.Fatalf("RANDOMKEY gave only %v", seen)
	}
}

// TestRenameCopySketches: RENAME and COPY of a paged Bloom filter, a
// paged Count-Min sketch and an HLL carry the whole value (pages, Redis's
// cache bytes); the old name keeps no pages (a new filter there answers
// for itself only), and everything survives a restart.
func TestRenameCopySketches(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	c := newClient(t, s.Addr())
	items := make([]any, 0, 3000)
	for i := range 3000 {
		items = append(items, fmt.Sprintf("i%d", i))
	}
	mustDo(t, c, "OK", "bf.reserve", "bf", "0.01", "100000")
	do(c, append([]any{"bf.madd", "bf"}, items...)...)
	mustDo(t, c, "OK", "cms.initbydim", "cms", "100000", "4")
	mustDo(t, c, "[5]", "cms.incrby", "cms", "a", "5")
	mustDo(t, c, "1", "pfadd", "h", "a", "b", "c")
	hll := do(c, "get", "h")
	mustDo(t, c, "OK", "rename", "bf", "bf2")
	mustDo(t, c, "OK", "rename", "cms", "cms2")
	mustDo(t, c, "OK", "rename", "h", "h2")
	mustDo(t, c, "1", "copy", "bf2", "bf3")
	mustDo(t, c, "1", "copy", "h2", "h3")
	mustDo(t, c, hll, "get", "h2")
	mustDo(t, c, hll, "get", "h3")
	mustDo(t, c, "0", "exists", "bf", "cms", "h")
	// A new filter under the old name: no page of the renamed one is left
	// to answer for it.
	mustDo(t, c, "OK", "bf.reserve", "bf", "0.01", "100000")
	mustDo(t, c, "[0 0 0]", "bf.mexists", "bf", "i1", "i2", "i3")
	check := func() {
		t.Helper()
		mustDo(t, c, "[1 1 1]", "bf.mexists", "bf2", "i1", "i2", "i2999")
		mustDo(t, c, "[1 1 1]", "bf.mexists", "bf3", "i1", "i2", "i2999")
		mustDo(t, c, "[5]", "cms.query", "cms2", "a")
		mustDo(t, c, "3", "pfcount", "h2")
		mustDo(t, c, "3", "pfcount", "h3")
	}
	check()
	mustDo(t, c, "1", "del", "bf2")
	mustDo(t, c, "[1 1 1]", "bf.mexists", "bf3", "i1", "i2", "i2999")
	mustDo(t, c, "OK", "rename", "bf3", "bf2")
	mustDo(t, c, "1", "copy", "bf2", "bf3")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir, nil)
	c = newClient(t, s.Addr())
	check()
}

func mustDo(t *testing.T, c *redis.Client, want string, args ...any) {
	t.Helper()
	if got := do(c, args...); got != want {
		t.Fatalf("%v: got %q, want %q", args, got, want)
	}
}

// rawConn is a connection that sends bytes and reads lines as they come.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := rc.nc.Write([]byte(s)); err != nil {
		rc.t.Fatal(err)
	}
}

// line reads one line (without its CRLF); "" and closed at EOF.
func (rc *rawConn) line() string {
	rc.t.Helper()
	_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	l, err := rc.br.ReadString('\n')
	if err != nil {
		return "<closed>"
	}
	return strings.TrimRight(l, "\r\n")
}

// TestProtocolNegativeLengths: an empty or negative multibulk count is
// skipped (Redis ignores it); "-0", leading zeros and negative bulk
// lengths are protocol errors that close the connection.
func TestProtocolNegativeLengths(t *testing.T) {
	s := startServer(t, "", nil)
	rc := dialRaw(t, s.Addr())
	rc.send("*-1\r\n*-10\r\n*0\r\n*-3000000000\r\n*1\r\n$4\r\nPING\r\n")
	if l := rc.line(); l != "+PONG" {
		t.Fatalf("after negative counts: %q", l)
	}
	for _, in := range []string{"*-0\r\n", "*01\r\n", "*1\r\n$-1\r\n", "*1\r\n$-10\r\n", "*1\r\n$04\r\nPING\r\n", "*1\r\n$+4\r\nPING\r\n"} {
		rc := dialRaw(t, s.Addr())
		rc.send(in)
		l := rc.line()
		if !strings.HasPrefix(l, "-ERR Protocol error: invalid") || rc.line() != "<closed>" {
			t.Fatalf("%q: %q, want a protocol error and a closed connection", in, l)
		}
	}
}

// TestEverydayInTransaction: the new commands inside MULTI/EXEC read the
// transaction's own writes; RENAME or COPY of a paged filter there is
// refused with its reason and the transaction goes on.
func TestEverydayInTransaction(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	mustDo(t, c, "OK", "bf.reserve", "bf", "0.01", "100000")
	mustDo(t, c, "1", "pfadd", "h", "x", "y")
	hll := do(c, "get", "h")
	rc := dialRaw(t, s.Addr())
	rc.send("MULTI\r\nSET a 1\r\nRENAME a b\r\nCOPY b c\r\nINCRBYFLOAT c 0.5\r\nRENAME bf bf2\r\nRENAME h h2\r\nGETDEL b\r\nMSETNX b 1 d 2\r\nLCS c d\r\nEXEC\r\n")
	for range 10 {
		if l := rc.line(); l != "+OK" && l != "+QUEUED" {
			t.Fatalf("queueing: %q", l)
		}
	}
	want := []string{"*9", "+OK", "+OK", ":1", "$3", "1.5",
		"-ERR sieve-server cannot RENAME or COPY a paged filter, sketch or bitmap inside MULTI/EXEC (it can outside a transaction)",
		"+OK", "$1", "1", ":1", "$0", ""}
	for _, w := range want {
		if l := rc.line(); l != w {
			t.Fatalf("EXEC: %q, want %q", l, w)
		}
	}
	mustDo(t, c, hll, "get", "h2")
	mustDo(t, c, "MBbloom--", "type", "bf")
}
