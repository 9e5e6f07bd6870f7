package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sievedb/sieve/internal/testutil"
)

// TestMain lets the test binary be the server (for the kill test).
func TestMain(m *testing.M) {
	if os.Getenv("SIEVE_SERVER_CHILD") == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// snapshotKeys returns GET (or TYPE, for filters) of every key.
func snapshotKeys(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ := do(c, "type", k)
		switch typ {
		case "string":
			out[k] = do(c, "get", k)
		case "MBbloom--":
			out[k] = typ + " " + do(c, "bf.card", k) + " " + do(c, "bf.exists", k, "item")
		default:
			out[k] = typ + " " + do(c, "cf.count", k, "item")
		}
	}
	return out
}

// TestRestart: every value (strings, HLL bytes with their Redis cache
// state, filters) reads the same after a clean restart.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, func(c *Config) { c.Sync = true })
	c := newClient(t, s.Addr())
	for _, cmd := range [][]any{
		{"set", "s", "hello"},
		{"mset", "a", "1", "b", "2"},
		{"incrby", "a", "41"},
		{"pfadd", "h1", "x", "y"},
		{"pfcount", "h1"},
		{"pfadd", "h2", "x", "y", "z"}, // stale cache, kept across the restart
		{"pfmerge", "h3", "h1", "h2"},
		{"bf.add", "bf", "item"},
		{"cf.add", "cf", "item"},
		{"del", "b"},
	} {
		if got := do(c, cmd...); strings.HasPrefix(got, "ERR") {
			t.Fatalf("%v: %s", cmd, got)
		}
	}
	before := snapshotKeys(t, c)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, dir, nil)
	after := snapshotKeys(t, newClient(t, s2.Addr()))
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("after restart:\n%q\nbefore:\n%q", after, before)
	}
	if !strings.HasSuffix(before["h2"][:16], "\x80") {
		t.Fatalf("h2's cache should be stale (byte 15 0x80): %q", before["h2"][:16])
	}
}

// TestKillAcknowledgedWritesSurvive: a server with -sync is killed
// (SIGKILL) while clients write; on restart every acknowledged write is
// there.
func TestKillAcknowledgedWritesSurvive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	seed := testutil.Seed(t)
	dir := t.TempDir()
	cmd, addr := startSyncChild(t, dir)
	log := &ackLog{acked: map[string]string{}, pfAcked: map[string][]string{}}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.write(rand.New(rand.NewPCG(uint64(seed), uint64(g))), addr, g, stop)
		}()
	}
	// Kill after 1.5 s of writes and once both kinds have been
	// acknowledged many times (a loaded machine may be slow to serve the
	// first ones), giving up on that after a minute.
	for start := time.Now(); time.Since(start) < 1500*time.Millisecond ||
		(log.counts() < 100 && time.Since(start) < time.Minute); {
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	close(stop)
	wg.Wait()
	_ = cmd.Wait()

	cmd, addr = startSyncChild(t, dir)
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	c := newClient(t, addr)
	log.mu.Lock()
	defer log.mu.Unlock()
	log.check(t, c)
	t.Logf("%d SETs and %d PFADDs (on %d and %d keys) acknowledged before SIGKILL; all present after restart", log.nSet, log.nPF, len(log.acked), len(log.pfAcked))
	if log.nSet == 0 || log.nPF == 0 {
		t.Fatalf("seed %d: no write of a kind was acknowledged before the kill: the test checked nothing", seed)
	}
}

// startSyncChild starts this test binary as a server with -sync on dir and
// returns it and its address.
func startSyncChild(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-addr", "127.0.0.1:0", "-dir", dir, "-sync")
	cmd.Env = append(os.Environ(), "SIEVE_SERVER_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("server did not start: %v", err)
	}
	// "sieve-server listening on ADDR (...)"
	f := strings.Fields(line)
	return cmd, f[3]
}

// ackLog holds the writes the server acknowledged.
type ackLog struct {
	mu      sync.Mutex
	acked   map[string]string   // key → value acknowledged last
	pfAcked map[string][]string // HLL key → elements acknowledged
	nSet    int                 // SETs acknowledged
	nPF     int                 // PFADDs acknowledged
}

// counts returns the fewer of the SETs and PFADDs acknowledged so far.
func (l *ackLog) counts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return min(l.nSet, l.nPF)
}

// write is writer g: it alternates SETs and PFADDs of its keys on addr,
// logging each acknowledged one, until stop or the first error.
func (l *ackLog) write(rng *rand.Rand, addr string, g int, stop chan struct{}) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		k := fmt.Sprintf("g%d:k%d", g, rng.IntN(50))
		if i%2 == 0 {
			v := fmt.Sprintf("v%d", i)
			if c.Set(ctx, k, v, 0).Err() != nil {
				return
			}
			l.mu.Lock()
			l.acked[k] = v
			l.nSet++
			l.mu.Unlock()
		} else {
			e := fmt.Sprintf("e%d", i)
			if c.PFAdd(ctx, "h"+k, e).Err() != nil {
				return
			}
			l.mu.Lock()
			l.pfAcked["h"+k] = append(l.pfAcked["h"+k], e)
			l.nPF++
			l.mu.Unlock()
		}
	}
}

// check checks every acknowledged write is on the server c talks to; the
// caller holds l.mu.
func (l *ackLog) check(t *testing.T, c *redis.Client) {
	t.Helper()
	for k, v := range l.acked {
		// A later write may have been applied without its ack reaching
		// the client; each goroutine writes a key in increasing order, so
		// the value read is the acknowledged one or a later one.
		got := do(c, "get", k)
		if got == "<nil>" || vnum(got) < vnum(v) {
			t.Fatalf("%s: acknowledged %q, after the kill %q", k, v, got)
		}
	}
	for k, es := range l.pfAcked {
		if got := do(c, append([]any{"pfadd", k}, anys(es)...)...); got != "0" {
			t.Fatalf("%s: acknowledged elements missing after the kill (PFADD of them again = %s)", k, got)
		}
	}
}

func vnum(s string) int {
	var n int
	fmt.Sscanf(s, "v%d", &n)
	return n
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// TestStartupErrors: a locked directory or a taken port is a clear
// message and a non-zero exit.
func TestStartupErrors(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	child := func(args ...string) (int, string) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "SIEVE_SERVER_CHILD=1")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	if code, out := child("-addr", "127.0.0.1:0", "-dir", dir); code == 0 || !strings.Contains(out, "is in use by another process") {
		t.Fatalf("locked dir: exit %d, %q", code, out)
	}
	if code, out := child("-addr", s.Addr(), "-dir", t.TempDir()); code == 0 || !strings.Contains(out, "cannot listen on") {
		t.Fatalf("taken port: exit %d, %q", code, out)
	}
}
