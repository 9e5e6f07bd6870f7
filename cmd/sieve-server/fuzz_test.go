package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

var fuzzSeeds = []string{
	"*1\r\n$4\r\nPING\r\n",
	"PING\r\nECHO hello\r\n",
	"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
	"*3\r\n$5\r\nPFADD\r\n$1\r\nh\r\n$1\r\na\r\n*2\r\n$7\r\nPFCOUNT\r\n$1\r\nh\r\n",
	"*4\r\n$8\r\nSETRANGE\r\n$1\r\nh\r\n$1\r\n4\r\n$1\r\n\x00\r\n*2\r\n$7\r\nPFCOUNT\r\n$1\r\nh\r\n",
	"*3\r\n$6\r\nBF.ADD\r\n$1\r\nb\r\n$1\r\nx\r\n*3\r\n$6\r\nCF.ADD\r\n$1\r\nc\r\n$1\r\nx\r\n",
	"*1\r\n$9223372036854775806\r\nab",
	"*99999999\r\n",
	"*2\r\n$3\r\nGET\r\n$-1\r\n",
	"SET k \"unbalanced\r\n",
	"*1\r\n+PING\r\n",
	"\x00\xff*\r\n",
}

// chunkConn is a net.Conn whose reads return data in chunks of the given
// sizes (cycled); only Read is used.
type chunkConn struct {
	net.Conn
	data   []byte
	chunks []int
	i      int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.chunks) > 0 {
		n = max(1, c.chunks[c.i%len(c.chunks)])
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// readAll parses every command of data read in chunks, copying each, and
// returns them and the error that ended the reading.
func readAll(data []byte, chunks []int) ([][][]byte, error) {
	// a small buffer, so that commands span reads and the buffer grows
	c := &respConn{nc: &chunkConn{data: data, chunks: chunks}, buf: make([]byte, 16)}
	var out [][][]byte
	for {
		if err := c.readCommands(); err != nil {
			return out, err
		}
		for _, cmd := range c.PeekPipeline() {
			var args [][]byte
			for _, a := range cmd.Args {
				args = append(args, bytes.Clone(a))
			}
			out = append(out, args)
		}
	}
}

// FuzzGuardParse: whatever the bytes, the guard and the request reader do
// not panic, and every command that reaches a handler is within the
// limits.
func FuzzGuardParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var lim protoLimits
		lim.maxBulk.Store(1 << 10)
		lim.maxArgs.Store(16)
		lim.maxInline.Store(1 << 10)
		g := &guardConn{lim: &lim}
		ok, verr := g.scan(data)
		if verr == nil && ok != len(data) {
			t.Fatalf("scan accepted %d of %d bytes without an error", ok, len(data))
		}
		cmds, _ := readAll(data[:ok], nil)
		for _, c := range cmds {
			if int64(len(c)) > lim.maxArgs.Load() {
				t.Fatalf("a command of %d args passed the guard", len(c))
			}
			for _, a := range c {
				if int64(len(a)) > max(lim.maxBulk.Load(), lim.maxInline.Load()) {
					t.Fatalf("an argument of %d bytes passed the guard", len(a))
				}
			}
		}
	})
}

// FuzzRESPReader: the request reader on any bytes, without the guard,
// does not panic, and reading them in small chunks (commands split
// across reads, the buffer shifted and grown) gives the same commands
// and the same end as reading them at once.
func FuzzRESPReader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(3), uint8(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, c1, c2 uint8) {
		whole, werr := readAll(data, nil)
		parts, perr := readAll(data, []int{int(c1), int(c2)})
		if fmt.Sprint(whole) != fmt.Sprint(parts) {
			t.Fatalf("at once %q, in chunks %q", whole, parts)
		}
		if fmt.Sprint(werr) != fmt.Sprint(perr) {
			t.Fatalf("at once ends with %v, in chunks with %v", werr, perr)
		}
		for _, c := range whole {
			if len(c) == 0 {
				t.Fatal("a command without arguments")
			}
		}
	})
}

var (
	fuzzServerOnce sync.Once
	fuzzServer     *Server
)

// FuzzServerRequest sends the bytes to a running server as one client and
// checks the server still answers another.
func FuzzServerRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzServerOnce.Do(func() {
			dir, err := os.MkdirTemp("", "sieve-server-fuzz")
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Addr, cfg.Dir = "127.0.0.1:0", dir
			cfg.MaxBulkLen, cfg.MaxArgs, cfg.MaxInline = 1<<16, 64, 1<<12
			s, err := Open(cfg)
			if err == nil {
				err = s.Listen()
			}
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = s.Serve() }()
			fuzzServer = s
		})
		s := fuzzServer
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write(data)
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.Copy(io.Discard, c)
		_ = c.Close()
		p, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		_ = p.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := p.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, _ := io.ReadAtLeast(p, buf, 1)
		got := string(buf[:n])
		if got != "+PONG\r\n" && got != "-NOAUTH Authentication required.\r\n" {
			t.Fatalf("after the input the server answers PING with %q", got)
		}
	})
}
