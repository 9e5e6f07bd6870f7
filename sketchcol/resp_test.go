package sketchcol

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// A tiny RESP2 client and a redis-server launcher for the interop tests.
// No Redis client library: the protocol needed is five reply types.

// redisServer is a redis-server started by a test on a loopback port.
type redisServer struct {
	conn *net.TCPConn
	r    *bufio.Reader
	w    *bufio.Writer
}

// startRedis starts redis-server on a free 127.0.0.1 port with
// persistence off, in a temporary directory, and stops it when the test
// ends. It skips the test when redis-server is not installed (CI installs
// it: .ci/run does apt-get install redis-server).
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed; skipping the Redis interop test (apt-get install redis-server)")
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freeLoopbackPort()
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting redis-server: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
			if err == nil {
				s := &redisServer{conn: c.(*net.TCPConn), r: bufio.NewReader(c), w: bufio.NewWriter(c)}
				t.Cleanup(func() { c.Close() })
				if _, err := s.do("PING"); err == nil {
					return s
				}
				c.Close()
			}
			lastErr = err
			time.Sleep(20 * time.Millisecond)
		}
		_ = cmd.Process.Kill() // port taken by someone else, or a slow start: try another port
	}
	t.Fatalf("redis-server did not come up: %v", lastErr)
	return nil
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// errRedis is a Redis error reply.
type errRedis string

func (e errRedis) Error() string { return "redis: " + string(e) }

// send queues one command (pipelining); flush and read its reply later.
func (s *redisServer) send(args ...any) {
	fmt.Fprintf(s.w, "*%d\r\n", len(args))
	for _, a := range args {
		var b []byte
		switch a := a.(type) {
		case string:
			b = []byte(a)
		case []byte:
			b = a
		case int:
			b = []byte(strconv.Itoa(a))
		default:
			panic(fmt.Sprintf("resp: argument of type %T", a))
		}
		fmt.Fprintf(s.w, "$%d\r\n", len(b))
		s.w.Write(b)
		s.w.WriteString("\r\n")
	}
}

// do sends one command and returns its reply: string (simple), []byte
// (bulk, nil for a null), int64, []any, or an errRedis error.
func (s *redisServer) do(args ...any) (any, error) {
	s.send(args...)
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	return s.read()
}

func (s *redisServer) flush() error { return s.w.Flush() }

func (s *redisServer) read() (any, error) {
	_ = s.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := s.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("resp: bad line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errRedis(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("resp: bad bulk length %q", body)
		}
		if n == -1 {
			return []byte(nil), nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(s.r, b); err != nil {
			return nil, err
		}
		return b[:n], nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("resp: bad array length %q", body)
		}
		out := make([]any, 0, max(n, 0))
		for range n {
			v, err := s.read()
			if err != nil && !errors.As(err, new(errRedis)) {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("resp: unknown reply type %q", line[0])
}

// mustInt, mustBytes: typed replies for tests.
func (s *redisServer) mustInt(t testing.TB, args ...any) int64 {
	t.Helper()
	v, err := s.do(args...)
	if err != nil {
		t.Fatalf("redis %v: %v", args[0], err)
	}
	n, ok := v.(int64)
	if !ok {
		t.Fatalf("redis %v: reply %T, want integer", args[0], v)
	}
	return n
}

func (s *redisServer) mustBytes(t testing.TB, args ...any) []byte {
	t.Helper()
	v, err := s.do(args...)
	if err != nil {
		t.Fatalf("redis %v: %v", args[0], err)
	}
	b, ok := v.([]byte)
	if !ok {
		t.Fatalf("redis %v: reply %T, want bulk string", args[0], v)
	}
	return b
}

func (s *redisServer) mustOK(t testing.TB, args ...any) {
	t.Helper()
	v, err := s.do(args...)
	if err != nil {
		t.Fatalf("redis %v: %v", args[0], err)
	}
	if v != "OK" {
		t.Fatalf("redis %v: reply %v, want OK", args[0], v)
	}
}
