package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startServer runs a server on a free loopback port over dir (a fresh
// temporary directory when ""), stopped when the test ends.
func startServer(t testing.TB, dir string, mod func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	if dir == "" {
		dir = t.TempDir()
	}
	cfg.Dir = dir
	if mod != nil {
		mod(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		_ = s.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		<-done
	})
	return s
}

func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// needTool returns the path of a Redis tool; it skips the test when the
// tool is missing, unless CI is set (.ci/run installs redis-tools).
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (CI must install redis-server and redis-tools)", name)
		}
		t.Skipf("%s is not installed; skipping (apt-get install redis-server redis-tools)", name)
	}
	return p
}

// startRedis starts a real redis-server (persistence off) on a free port.
//
// The port is found by listening on port 0 and closing the listener, so
// another process may take it before redis-server binds it: then
// redis-server exits (it cannot listen) and the next attempt uses another
// port; or a server that is not ours may answer on it, which INFO's
// process_id tells apart. A slow start on a loaded machine is waited for
// (up to 30 s an attempt), not guessed at.
func startRedis(t testing.TB) string { return startRedisAs(t, false) }

// startRedisDetached is startRedis for a server that outlives the test
// (a fuzz target's, shared by its iterations): it is killed when the test
// process exits.
func startRedisDetached(t testing.TB) string { return startRedisAs(t, true) }

func startRedisAs(t testing.TB, detached bool) string {
	t.Helper()
	path := needTool(t, "redis-server")
	var why string
	for attempt := 0; attempt < 5; attempt++ {
		addr, err := tryStartRedis(t, path, detached)
		if err == nil {
			return addr
		}
		why = err.Error()
		t.Logf("redis-server attempt %d: %v", attempt, err)
	}
	t.Fatalf("redis-server did not start: %s", why)
	return ""
}

// tryStartRedis starts redis-server on a port that was free a moment ago
// and returns its address once it answers as the process started.
func tryStartRedis(t testing.TB, path string, detached bool) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	dir := t.TempDir()
	if detached {
		if dir, err = os.MkdirTemp("", "sieve-redis"); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "log")
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if !detached {
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: 5 * time.Second})
	defer c.Close()
	pid := fmt.Sprintf("process_id:%d\r\n", cmd.Process.Pid)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		select {
		case <-exited:
			out, _ := os.ReadFile(log)
			return "", fmt.Errorf("redis-server on port %d exited: %s", port, strings.TrimSpace(string(out)))
		default:
		}
		// A plain dial first: go-redis logs its own failed dials.
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		_ = conn.Close()
		if info, err := c.Info(context.Background(), "server").Result(); err == nil {
			if !strings.Contains(info, pid) {
				_ = cmd.Process.Kill()
				return "", fmt.Errorf("port %d is answered by another server", port)
			}
			return addr, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return "", fmt.Errorf("redis-server on port %d did not answer within 30 s", port)
}
