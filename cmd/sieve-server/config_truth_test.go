package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRequirePassKeepsAuthenticated: CONFIG SET requirepass keeps the
// connections already open authenticated (as Redis does); new ones must
// AUTH. Run against both servers.
func TestRequirePassKeepsAuthenticated(t *testing.T) {
	for _, srv := range []string{"sieve", "redis"} {
		t.Run(srv, func(t *testing.T) {
			addr := ""
			if srv == "redis" {
				addr = startRedis(t)
			} else {
				addr = startServer(t, "", nil).Addr()
			}
			a := newClient(t, addr)
			a.Options().PoolSize = 1
			steps := []struct {
				c    string
				args []any
				want string
			}{
				{"a", []any{"set", "k", "1"}, "OK"},
				{"a", []any{"config", "set", "requirepass", "s3cret"}, "OK"},
				{"a", []any{"get", "k"}, "1"},
				{"b", []any{"get", "k"}, "ERR:NOAUTH Authentication required."},
				{"b", []any{"auth", "wrong"}, "ERR:WRONGPASS invalid username-password pair or user is disabled."},
				{"b", []any{"auth", "s3cret"}, "OK"},
				{"b", []any{"get", "k"}, "1"},
				{"a", []any{"config", "set", "requirepass", ""}, "OK"},
			}
			b := newClient(t, addr)
			b.Options().PoolSize = 1
			for i, st := range steps {
				c := a
				if st.c == "b" {
					c = b
				}
				if got := do(c, st.args...); got != st.want {
					t.Fatalf("step %d %s %v: %q, want %q", i, st.c, st.args, got, st.want)
				}
			}
		})
	}
}

// TestConfigDurability: CONFIG GET describes sieve's real durability.
func TestConfigDurability(t *testing.T) {
	for _, sync := range []bool{false, true} {
		s := startServer(t, "", func(c *Config) { c.Sync = sync })
		c := newClient(t, s.Addr())
		want := map[bool]string{false: "[appendfsync no appendonly yes]", true: "[appendfsync always appendonly yes]"}[sync]
		if got := do(c, "config", "get", "append*"); got != want {
			t.Errorf("sync %v: CONFIG GET append*: %s, want %s", sync, got, want)
		}
	}
}

// remoteConn is a connection that says it comes from another machine.
type remoteConn struct{ net.Conn }

func (remoteConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 4000}
}

// TestProtectedMode: with protected mode on and no password, a client
// from another machine is refused with a DENIED error; a loopback client,
// a server with a password, or protected mode off let it in.
func TestProtectedMode(t *testing.T) {
	s := startServer(t, "", nil)
	for _, tc := range []struct {
		pass      string
		protected bool
		remote    bool
		refused   bool
	}{
		{"", true, true, true},
		{"", true, false, false},
		{"pw", true, true, false},
		{"", false, true, false},
	} {
		s.setPass(tc.pass)
		s.protectedMode.Store(tc.protected)
		server, client := net.Pipe()
		var nc net.Conn = server
		if tc.remote {
			nc = remoteConn{server}
		}
		got := make(chan string, 1)
		go func() {
			buf := make([]byte, 512)
			n, _ := client.Read(buf)
			got <- string(buf[:n])
		}()
		refused := s.refuseProtected(nc)
		if refused != tc.refused {
			t.Fatalf("%+v: refused %v", tc, refused)
		}
		if refused {
			if msg := <-got; !strings.HasPrefix(msg, "-DENIED ") {
				t.Fatalf("refusal %q", msg)
			}
		}
		_ = client.Close()
		_ = server.Close()
	}
	s.setPass("")
}

// TestPasswordSources: -requirepass-file and SIEVE_REQUIREPASS, and the
// error when the password is given twice.
func TestPasswordSources(t *testing.T) {
	f := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(f, []byte("fromfile\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := readPassword(&cfg, f); err != nil || cfg.RequirePass != "fromfile" {
		t.Fatalf("file: %q, %v", cfg.RequirePass, err)
	}
	t.Setenv("SIEVE_REQUIREPASS", "fromenv")
	cfg = DefaultConfig()
	if err := readPassword(&cfg, ""); err != nil || cfg.RequirePass != "fromenv" {
		t.Fatalf("env: %q, %v", cfg.RequirePass, err)
	}
	cfg = DefaultConfig()
	if err := readPassword(&cfg, f); err == nil {
		t.Fatal("file and environment both: no error")
	}
}
