package main

import (
	"bufio"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClientCommands: CLIENT SETNAME/GETNAME/ID/INFO/LIST/KILL (both
// forms)/REPLY/NO-EVICT and ROLE.
func TestClientCommands(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	other := dialRaw(t, s.Addr())
	other.send("CLIENT SETNAME other\r\nCLIENT ID\r\n")
	if l := other.line(); l != "+OK" {
		t.Fatal(l)
	}
	otherID := strings.TrimPrefix(other.line(), ":")
	mustDo(t, c, "OK", "client", "setname", "me")
	mustDo(t, c, "me", "client", "getname")
	mustDo(t, c, "ERR:ERR Client names cannot contain spaces, newlines or special characters.", "client", "setname", "a b")
	info := do(c, "client", "info")
	line := regexp.MustCompile(`^id=\d+ addr=127\.0\.0\.1:\d+ laddr=127\.0\.0\.1:\d+ fd=\d+ name=me age=\d+ idle=\d+ flags=N db=0 .* cmd=client\|info user=default redir=-1 resp=2\n$`)
	if !line.MatchString(info) {
		t.Fatalf("CLIENT INFO: %q", info)
	}
	list := do(c, "client", "list")
	if strings.Count(list, "\n") != 2 || !strings.Contains(list, "name=other") || !strings.Contains(list, "name=me") {
		t.Fatalf("CLIENT LIST: %q", list)
	}
	if l := do(c, "client", "list", "id", otherID); !strings.Contains(l, "name=other") || strings.Contains(l, "name=me") {
		t.Fatalf("CLIENT LIST ID: %q", l)
	}
	mustDo(t, c, "ERR:ERR No such client", "client", "kill", "1.2.3.4:5")
	mustDo(t, c, "ERR:ERR client-id should be greater than 0", "client", "kill", "id", "0")
	mustDo(t, c, "ERR:ERR No such user 'nobody'", "client", "kill", "user", "nobody")
	mustDo(t, c, "ERR:ERR syntax error", "client", "kill", "foo", "bar")
	mustDo(t, c, "ERR:ERR syntax error", "client", "kill", "id", "1", "skipme", "maybe")
	mustDo(t, c, "0", "client", "kill", "id", "999999")
	mustDo(t, c, "1", "client", "kill", "id", otherID)
	if l := other.line(); l != "<closed>" {
		t.Fatalf("killed client read %q", l)
	}
	third := dialRaw(t, s.Addr())
	third.send("PING\r\n")
	third.line()
	addr := third.nc.LocalAddr().String()
	mustDo(t, c, "OK", "client", "kill", addr)
	if l := third.line(); l != "<closed>" {
		t.Fatalf("killed client read %q", l)
	}
	mustDo(t, c, "0", "client", "kill", "user", "default") // SKIPME yes: not itself
	mustDo(t, c, "OK", "client", "no-evict", "on")
	mustDo(t, c, "[master 0 []]", "role")
	// CLIENT REPLY: SKIP drops the next reply, OFF every reply until ON.
	rc := dialRaw(t, s.Addr())
	rc.send("CLIENT REPLY SKIP\r\nPING\r\nECHO a\r\nCLIENT REPLY OFF\r\nPING\r\nNOSUCH\r\nCLIENT REPLY ON\r\nPING\r\n" +
		"CLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nPING\r\n") // ON clears SKIP and answers
	for _, want := range []string{"$1", "a", "+OK", "+PONG", "+OK", "+PONG"} {
		if l := rc.line(); l != want {
			t.Fatalf("CLIENT REPLY: %q, want %q", l, want)
		}
	}
	// Killing itself: the reply, then the connection closes.
	self := dialRaw(t, s.Addr())
	self.send("CLIENT KILL SKIPME no ID 99999999\r\nCLIENT ID\r\n")
	self.line()
	id := strings.TrimPrefix(self.line(), ":")
	self.send("CLIENT KILL SKIPME no ID " + id + "\r\nPING\r\n")
	if l, l2 := self.line(), self.line(); l != ":1" || l2 != "<closed>" {
		t.Fatalf("self kill: %q %q", l, l2)
	}
}

// TestMonitor: a monitor sees the commands of other clients as Redis
// writes them, not AUTH or CONFIG.
func TestMonitor(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	m := dialRaw(t, s.Addr())
	m.send("MONITOR\r\n")
	if l := m.line(); l != "+OK" {
		t.Fatal(l)
	}
	mustDo(t, c, "OK", "set", "a b", "x\"y\n\x01")
	do(c, "config", "get", "maxclients")
	mustDo(t, c, "x\"y\n\x01", "get", "a b")
	want := regexp.MustCompile(`^\+\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] "set" "a b" "x\\"y\\n\\x01"$`)
	if l := m.line(); !want.MatchString(l) {
		t.Fatalf("monitor line %q", l)
	}
	if l := m.line(); !strings.HasSuffix(l, `"get" "a b"`) {
		t.Fatalf("monitor line %q (CONFIG is not shown)", l)
	}
	if l := do(c, "client", "list"); !strings.Contains(l, "flags=O") {
		t.Fatalf("CLIENT LIST shows no monitor: %q", l)
	}
	_ = m.nc.Close()
	time.Sleep(50 * time.Millisecond)
	mustDo(t, c, "PONG", "ping") // the monitor's queue is gone
}

// TestInfoStats: INFO's CPU, replication, stats and keyspace fields, and
// commandstats (only when asked for), and CONFIG RESETSTAT.
func TestInfoStats(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	mustDo(t, c, "OK", "set", "k", "v")
	mustDo(t, c, "v", "get", "k")
	mustDo(t, c, "<nil>", "get", "nokey")
	do(c, "incr", "k")
	do(c, "get")
	info := do(c, "info")
	for _, re := range []string{`used_cpu_sys:\d+\.\d{6}`, `used_cpu_user:\d+\.\d{6}`, `used_cpu_sys_children:\d+\.\d{6}`,
		`used_cpu_user_children:\d+\.\d{6}`, `role:master`, `keyspace_hits:1\r`, `keyspace_misses:1\r`,
		`instantaneous_ops_per_sec:\d+`, `total_commands_processed:\d+`, `# CPU`, `# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0`} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Fatalf("INFO lacks %s:\n%s", re, info)
		}
	}
	if strings.Contains(info, "cmdstat_") {
		t.Fatal("INFO (default) shows commandstats")
	}
	cs := do(c, "info", "commandstats")
	for _, re := range []string{`cmdstat_get:calls=2,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=1,failed_calls=0`,
		`cmdstat_incr:calls=1,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=0,failed_calls=1`} {
		if !regexp.MustCompile(re).MatchString(cs) {
			t.Fatalf("INFO commandstats lacks %s:\n%s", re, cs)
		}
	}
	mustDo(t, c, "OK", "config", "resetstat")
	if cs := do(c, "info", "commandstats"); strings.Contains(cs, "cmdstat_get") {
		t.Fatalf("after RESETSTAT: %s", cs)
	}
	// instantaneous_ops_per_sec follows a burst of commands.
	for range 2000 {
		do(c, "ping")
	}
	time.Sleep(250 * time.Millisecond)
	if ops := regexp.MustCompile(`instantaneous_ops_per_sec:(\d+)`).FindStringSubmatch(do(c, "info", "stats")); ops == nil || ops[1] == "0" {
		t.Fatalf("instantaneous_ops_per_sec: %v", ops)
	}
}

// TestCommandIntrospection: COMMAND COUNT, INFO and DOCS in Redis 7's
// shapes.
func TestCommandIntrospection(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	n := do(c, "command", "count")
	if n == "0" || strings.HasPrefix(n, "ERR") {
		t.Fatalf("COMMAND COUNT %s", n)
	}
	mustDo(t, c, "[[get 2 [readonly] 1 1 1 [] [] [] []] [mset -3 [write] 1 -1 2 [] [] [] []] <nil>]", "command", "info", "get", "mset", "nosuch")
	d := do(c, "command", "docs", "get", "bf.add", "nosuch")
	if !strings.Contains(d, "get") || !strings.Contains(d, "summary") || !strings.Contains(d, "group") ||
		!strings.Contains(d, "module") || strings.Contains(d, "nosuch") {
		t.Fatalf("COMMAND DOCS: %s", d)
	}
}

// TestClientReplyOnAfterSkip: CLIENT REPLY ON right after SKIP answers
// its own OK (Redis unsets the skip flag before replying), and CLIENT
// LIST's qbuf for the caller is its command's length, as in Redis.
func TestClientReplyOnAfterSkip(t *testing.T) {
	s := startServer(t, "", nil)
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte("CLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nPING\r\nCLIENT KILL\r\n*2\r\n$6\r\nclient\r\n$4\r\ninfo\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	var got []string
	for range 4 {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err, got)
		}
		got = append(got, strings.TrimSpace(l))
	}
	want := []string{"+OK", "+PONG", "-ERR wrong number of arguments for 'client|kill' command"}
	if !slices.Equal(got[:3], want) {
		t.Fatalf("replies %q, want %q", got[:3], want)
	}
	line, _ := br.ReadString('\n')
	if !strings.Contains(line, " qbuf=26 ") {
		t.Fatalf("CLIENT INFO %q: want qbuf=26", line)
	}
}

func TestRandomKey(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	if v := do(c, "randomkey"); v != "<nil>" {
		t.Fatalf("RANDOMKEY on an empty keyspace: %v", v)
	}
	do(c, "set", "foo", "x")
	do(c, "set", "bar", "y")
	seen := map[string]int{}
	for range 200 {
		seen[do(c, "randomkey")]++
	}
	if len(seen) != 2 || seen["foo"] < 50 || seen["bar"] < 50 {
		t.Fatalf("RANDOMKEY over two keys, 200 times: %v", seen)
	}
	do(c, "del", "foo", "bar")
	if v := do(c, "randomkey"); v != "<nil>" {
		t.Fatalf("RANDOMKEY after deleting every key: %v", v)
	}
}

// TestSubcommandErrors: CLIENT's and COMMAND's unknown subcommands and
// wrong argument counts answer Redis 7's texts.
func TestSubcommandErrors(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"client", "foo"}, "ERR:ERR unknown subcommand 'foo'. Try CLIENT HELP."},
		{[]any{"client", "kill"}, "ERR:ERR wrong number of arguments for 'client|kill' command"},
		{[]any{"client", "info", "x"}, "ERR:ERR wrong number of arguments for 'client|info' command"},
		{[]any{"client", "reply"}, "ERR:ERR wrong number of arguments for 'client|reply' command"},
		{[]any{"client", "setname"}, "ERR:ERR wrong number of arguments for 'client|setname' command"},
		{[]any{"client", "no-evict"}, "ERR:ERR wrong number of arguments for 'client|no-evict' command"},
		{[]any{"client", "help", "x"}, "ERR:ERR wrong number of arguments for 'client|help' command"},
		{[]any{"client", "list", "x"}, "ERR:ERR syntax error"},
		{[]any{"command", "foo"}, "ERR:ERR unknown subcommand 'foo'. Try COMMAND HELP."},
		{[]any{"command", "count", "x"}, "ERR:ERR wrong number of arguments for 'command|count' command"},
	} {
		mustDo(t, c, tc.want, tc.args...)
	}
}

// TestConfigSetChecks: CONFIG SET checks every pair before applying any
// (a duplicate name, an unknown one, a read-only parameter given another
// value), accepts a read-only parameter's own value, and CONFIG GET shows
// a hidden parameter only when asked for by name.
func TestConfigSetChecks(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"config", "set", "maxmemory", "1", "maxmemory", "2"}, "ERR:ERR CONFIG SET failed (possibly related to argument 'maxmemory') - duplicate parameter"},
		{[]any{"config", "set", "timeout", "7", "maxmemory", "100mb"}, "ERR:ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set immutable config"},
		{[]any{"config", "get", "timeout"}, "[timeout 0]"}, // nothing applied
		{[]any{"config", "set", "daemonize", "no", "appendonly", "yes", "timeout", "7"}, "OK"},
		{[]any{"config", "get", "timeout"}, "[timeout 7]"},
		{[]any{"config", "get", "key-load-delay"}, "[key-load-delay 0]"},
		{[]any{"config", "get", "key-*"}, "[]"},
	} {
		if got := do(c, tc.args...); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}
