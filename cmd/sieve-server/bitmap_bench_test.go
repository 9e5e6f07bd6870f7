package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBitmapMeasure (SIEVE_BITMAP_IDS=100000000 go test -run
// TestBitmapMeasure -v): SETBIT of that many sequential IDs, pipelined
// 10,000 at a time over one connection, into sieve-server and into a
// redis-server in the same run; then BITCOUNT's time, the data
// directory's size and the servers' RSS.
func TestBitmapMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SIEVE_BITMAP_IDS"))
	if n == 0 {
		t.Skip("set SIEVE_BITMAP_IDS (e.g. 100000000) to measure")
	}
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	raddr := startRedis(t)
	for _, tc := range []struct{ name, addr string }{{"redis-server", raddr}, {"sieve-server", s.Addr()}} {
		conn, err := net.Dial("tcp", tc.addr)
		must(t, err)
		r, w := bufio.NewReaderSize(conn, 1<<20), bufio.NewWriterSize(conn, 1<<20)
		start := time.Now()
		for i := 0; i < n; i += 10000 {
			m := min(10000, n-i)
			for j := range m {
				id := strconv.Itoa(i + j)
				fmt.Fprintf(w, "*4\r\n$6\r\nSETBIT\r\n$2\r\nuv\r\n$%d\r\n%s\r\n$1\r\n1\r\n", len(id), id)
			}
			must(t, w.Flush())
			for range m {
				line, err := r.ReadString('\n')
				if err != nil || line[0] != ':' {
					t.Fatalf("%s: reply %q %v", tc.name, line, err)
				}
			}
		}
		el := time.Since(start)
		bc := time.Now()
		fmt.Fprintf(w, "*2\r\n$8\r\nBITCOUNT\r\n$2\r\nuv\r\n")
		must(t, w.Flush())
		line, _ := r.ReadString('\n')
		t.Logf("%s: %d SETBITs in %v (%.0f/s); BITCOUNT %s in %v; RSS %s", tc.name, n, el.Round(time.Millisecond),
			float64(n)/el.Seconds(), strings.TrimSpace(line), time.Since(bc).Round(time.Microsecond), rss(t, tc.addr))
		_ = conn.Close()
	}
	t.Logf("sieve data dir: %.1f MiB", float64(dirSize(dir))/(1<<20))
}

// rss returns the RSS of the process listening on addr (this process for
// sieve-server).
func rss(t *testing.T, addr string) string {
	port := addr[strings.LastIndex(addr, ":")+1:]
	out, _ := exec.Command("sh", "-c", "ss -ltnpH 'sport = :"+port+"' | sed -n 's/.*pid=\\([0-9]*\\).*/\\1/p' | head -1").Output()
	pid := strings.TrimSpace(string(out))
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.TrimSpace(l[6:])
		}
	}
	return "?"
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
