package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// rawSend connects, writes data (optionally closing the write side), and
// returns everything the server sent until it closed the connection or
// went quiet for a moment.
func rawSend(t testing.TB, addr string, data []byte, halfClose bool) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(data); err != nil {
		return nil // the server may close before reading it all
	}
	if halfClose {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	out, _ := io.ReadAll(c)
	return out
}

// checkAlive checks that the server still answers and the data is intact.
func checkAlive(t *testing.T, s *Server) {
	t.Helper()
	c := newClient(t, s.Addr())
	if got := do(c, "get", "canary"); got != "still here" {
		t.Fatalf("after bad input: GET canary = %q", got)
	}
}

// TestMalformedInput: garbage, half requests, oversized declared lengths
// and disconnects mid-pipeline get an error (or nothing) and a closed
// connection; the server, its other clients and the data are unaffected.
func TestMalformedInput(t *testing.T) {
	s := startServer(t, "", func(c *Config) {
		c.MaxArgs = 1000
		c.MaxInline = 4096
	})
	c := newClient(t, s.Addr())
	if do(c, "set", "canary", "still here") != "OK" {
		t.Fatal("set canary")
	}
	cases := []struct {
		name      string
		data      string
		halfClose bool
		want      string // the reply must contain it ("" = any)
		closed    bool   // the server must close the connection
	}{
		{"garbage after a good command", "*1\r\n$4\r\nPING\r\n*x\r\n", false, "+PONG\r\n-ERR Protocol error: invalid multibulk length", true},
		{"bulk length near MaxInt", "*1\r\n$9223372036854775806\r\nab", false, "-ERR Protocol error: invalid bulk length", true},
		{"bulk length overflowing int64", "*1\r\n$99999999999999999999999\r\n", false, "-ERR Protocol error: invalid bulk length", true},
		{"bulk above proto-max-bulk-len", "*2\r\n$3\r\nGET\r\n$536870913\r\n", false, "-ERR Protocol error: invalid bulk length", true},
		{"negative bulk length", "*1\r\n$-5\r\n", false, "-ERR Protocol error: invalid bulk length", true},
		{"too many arguments", "*1001\r\n", false, "-ERR Protocol error: invalid multibulk length", true},
		{"huge multibulk count", "*2147483648000\r\n", false, "-ERR Protocol error: invalid multibulk length", true},
		{"missing $", "*1\r\n+PING\r\n", false, "-ERR Protocol error: expected '$', got '+'", true},
		{"inline line too long", strings.Repeat("a", 5000), false, "-ERR Protocol error: too big inline request", true},
		{"half a request, then EOF", "*3\r\n$3\r\nSET\r\n$6\r\ncanary\r\n$4\r\nlo", true, "", true},
		{"disconnect mid-pipeline", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n1\r\n*3\r\n$3\r\nSET\r\n$6\r\ncanary", true, "+OK", true},
		{"binary garbage", "\x00\xff\xfe*\r\n$\r\n\x1b[2J", true, "", true},
		{"unbalanced quotes inline", "SET canary \"oops\r\n", false, "-ERR Protocol error", true},
		{"inline command works", "PING\r\n", true, "+PONG", true},
		{"empty argument list", "*0\r\n", false, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := rawSend(t, s.Addr(), []byte(tc.data), tc.halfClose)
			if tc.want != "" && !bytes.Contains(out, []byte(tc.want)) {
				t.Fatalf("reply %q, want it to contain %q", out, tc.want)
			}
			checkAlive(t, s)
		})
	}
	if got := do(c, "get", "x"); got != "1" {
		t.Fatalf("the complete command before the disconnect was not applied: %q", got)
	}
}

// TestSlowTrickle: a command sent one byte per write is parsed once
// complete (the guard hands the reader whole commands).
func TestSlowTrickle(t *testing.T) {
	s := startServer(t, "", nil)
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000\r\n" + strings.Repeat("v", 2000) + "\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	for i := 0; i < len(cmd); i++ {
		if _, err := c.Write([]byte{cmd[i]}); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := r.ReadString('\n')
	if line != "+OK\r\n" {
		t.Fatalf("SET: %q", line)
	}
	line, _ = r.ReadString('\n')
	if line != "$2000\r\n" {
		t.Fatalf("GET: %q", line)
	}
}

// TestUnauthenticatedLimits: before AUTH a client may not declare large
// requests (Redis's limits: 10 arguments, 16 KiB bulks).
func TestUnauthenticatedLimits(t *testing.T) {
	s := startServer(t, "", func(c *Config) { c.RequirePass = "pw" })
	out := rawSend(t, s.Addr(), []byte("*11\r\n"), false)
	if !bytes.Contains(out, []byte("-ERR Protocol error: unauthenticated multibulk length")) {
		t.Fatalf("got %q", out)
	}
	out = rawSend(t, s.Addr(), []byte("*2\r\n$4\r\nAUTH\r\n$20000\r\n"), false)
	if !bytes.Contains(out, []byte("-ERR Protocol error: unauthenticated bulk length")) {
		t.Fatalf("got %q", out)
	}
}

// TestMaxClients: the client above -maxclients is refused with Redis's
// error; the others keep working.
func TestMaxClients(t *testing.T) {
	s := startServer(t, "", func(c *Config) { c.MaxClients = 2 })
	var conns []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 7)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "+PONG\r\n" {
			t.Fatalf("client %d: %q %v", i, buf, err)
		}
		conns = append(conns, c)
	}
	out := rawSend(t, s.Addr(), []byte("PING\r\n"), false)
	if string(out) != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third client: %q", out)
	}
}

// TestIdleTimeout: an idle client is disconnected.
func TestIdleTimeout(t *testing.T) {
	s := startServer(t, "", func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The client's own deadline is far beyond the 200 ms: reaching it
	// means the server never closed the connection; a loaded machine may
	// close it late, which is not what this test is about.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	start := time.Now()
	_, err = c.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("read data from an idle connection")
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle client not closed after %v", time.Since(start))
	}
	t.Logf("idle client closed after %v (%v)", time.Since(start), err)
}

// TestOutputLimits: a client that pipelines requests for large replies
// and never reads is dropped (write timeout), and one whose pending
// replies pass the output limit is dropped at once; the server and other
// clients carry on.
func TestOutputLimits(t *testing.T) {
	s := startServer(t, "", func(c *Config) {
		c.WriteTimeout = 300 * time.Millisecond
		c.OutputLimit = 1 << 20
	})
	c := newClient(t, s.Addr())
	if do(c, "set", "canary", "still here") != "OK" || do(c, "set", "big", strings.Repeat("x", 512<<10)) != "OK" {
		t.Fatal("setup")
	}
	// Never reads: 400 GETs of 512 KiB.
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	req := strings.Repeat("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", 400)
	go func() { _, _ = conn.Write([]byte(req)) }()
	accepted := time.Now().Add(5 * time.Second) // (it may be dropped before this loop sees it)
	for s.clients.Load() < 2 && time.Now().Before(accepted) {
		time.Sleep(10 * time.Millisecond) // until the server has accepted it
	}
	// The drop takes about WriteTimeout; the deadline only bounds a hang
	// (generous: a loaded machine runs the server's writes late).
	deadline := time.Now().Add(60 * time.Second)
	for s.clients.Load() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the client that does not read is still connected (%d clients)", s.clients.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkAlive(t, s)
	// MGET of 4 × 512 KiB: 2 MiB pending, over the 1 MiB limit.
	out := rawSend(t, s.Addr(), []byte("*5\r\n$4\r\nMGET\r\n$3\r\nbig\r\n$3\r\nbig\r\n$3\r\nbig\r\n$3\r\nbig\r\n"), false)
	if len(out) != 0 {
		t.Fatalf("over the output limit the client got %d bytes", len(out))
	}
	checkAlive(t, s)
}
