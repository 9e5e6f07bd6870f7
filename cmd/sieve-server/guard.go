package main

import (
	"net"
	"strconv"
	"sync/atomic"
)

// The request guard: every connection's bytes pass through a streaming
// check of the RESP framing before the request reader (resp.go) parses
// them, which enforces Redis's limits (proto-max-bulk-len, arguments per
// command, inline line length, and the smaller limits of a client that
// has not authenticated) before any buffer is sized by a declared length.
//
// It was written in front of redcon (v1.6.4), which had none of these
// limits, overflowed its bounds check on a bulk length near MaxInt (an
// index out of range that killed the server) and recursed once per Read
// of an incomplete command. The guard returns bytes to the reader only
// at command boundaries or when the reader's buffer is full; the reader
// checks what it parses on its own as well (FuzzRESPReader).
//
// A violation is reported to the client ("-ERR Protocol error: ...",
// after the replies to the complete commands before it) and closes the
// connection; nothing of the offending command is executed.

// protoLimits are the per-connection limits of the guard.
type protoLimits struct {
	maxBulk   atomic.Int64 // proto-max-bulk-len
	maxArgs   atomic.Int64 // arguments of one multibulk command
	maxInline atomic.Int64 // length of an inline command line
}

// Redis's limits for a client that has not authenticated yet.
const (
	unauthMaxArgs = 10
	unauthMaxBulk = 16384
)

type guardState uint8

const (
	gStart     guardState = iota // at the start of a command
	gInline                      // inside an inline command line
	gCount                       // inside "*<count>"
	gCountLF                     // expecting the LF of "*<count>\r\n"
	gBulkHdr                     // expecting '$'
	gBulkLen                     // inside "$<len>"
	gBulkLenLF                   // expecting the LF of "$<len>\r\n"
	gBulkData                    // inside a bulk and its CRLF
)

type protoError struct{ msg string }

func (e *protoError) Error() string { return "Protocol error: " + e.msg }

// guardConn wraps a client's net.Conn.
type guardConn struct {
	net.Conn
	lim    *protoLimits
	authed func() bool // nil: no password; else whether the client is authenticated

	st      guardState
	num     int64 // the number being read (count or length)
	digits  int
	neg     bool
	args    int64 // bulks left in the current multibulk
	left    int64 // bytes left of the current bulk, CRLF included
	inline  int64
	pending error // violation found; reported by the next Read
}

func (g *guardConn) limits() (maxArgs, maxBulk int64) {
	maxArgs, maxBulk = g.lim.maxArgs.Load(), g.lim.maxBulk.Load()
	if g.authed != nil && !g.authed() {
		maxArgs, maxBulk = min(maxArgs, unauthMaxArgs), min(maxBulk, unauthMaxBulk)
	}
	return maxArgs, maxBulk
}

// Read reads into p until it ends at a command boundary or is full, and
// returns only bytes that passed the check.
func (g *guardConn) Read(p []byte) (int, error) {
	if g.pending != nil {
		return 0, g.fail()
	}
	got := 0
	for {
		n, err := g.Conn.Read(p[got:])
		if n > 0 {
			ok, verr := g.scan(p[got : got+n])
			if verr != nil {
				g.pending = verr
				got += ok
				if got == 0 {
					return 0, g.fail()
				}
				return got, nil
			}
			got += n
		}
		if err != nil || got == len(p) || g.st == gStart {
			if got > 0 {
				return got, nil // the error, if any, comes with the next Read
			}
			return 0, err
		}
	}
}

// fail writes the pending violation to the client and returns it.
func (g *guardConn) fail() error {
	_, _ = g.Conn.Write([]byte("-ERR " + g.pending.Error() + "\r\n"))
	return g.pending
}

// scan advances the state over b and returns how many bytes are fine
// before a violation, and the violation. Each state's step is a method
// that returns a nil error on the happy path, so the loop stays
// allocation-free; the digits of a length stay in the loop, and bulk
// payloads are skipped in one step.
func (g *guardConn) scan(b []byte) (int, error) {
	maxArgs, maxBulk := g.limits()
	maxInline := g.lim.maxInline.Load()
	for i := 0; i < len(b); i++ {
		var err error
		switch g.st {
		case gStart:
			g.startByte(b[i])
		case gInline:
			err = g.inlineByte(b[i], maxInline)
		case gCount, gBulkLen:
			if c := b[i]; c >= '0' && c <= '9' && g.digits < 18 && (g.digits != 1 || g.num != 0) {
				g.digits++
				g.num = g.num*10 + int64(c-'0')
				continue
			}
			err = g.lenOther(b[i])
		case gCountLF:
			err = g.countEnd(b[i], maxArgs)
		case gBulkHdr:
			err = g.bulkHdr(b[i])
		case gBulkLenLF:
			err = g.bulkLenEnd(b[i], maxBulk)
		case gBulkData:
			i += g.skipBulk(len(b)-i) - 1
		}
		if err != nil {
			return i, err
		}
	}
	return len(b), nil
}

// startByte begins a request: '*' a multibulk count, anything but a bare
// '\n' an inline request.
func (g *guardConn) startByte(c byte) {
	switch c {
	case '*':
		g.st, g.num, g.digits, g.neg = gCount, 0, 0, false
	case '\n':
	default:
		g.st, g.inline = gInline, 1
	}
}

// inlineByte counts an inline request's bytes up to its '\n'.
func (g *guardConn) inlineByte(c byte, maxInline int64) error {
	if c == '\n' {
		g.st = gStart
		return nil
	}
	g.inline++
	if g.inline > maxInline {
		return &protoError{"too big inline request"}
	}
	return nil
}

// lenOther takes a byte of a multibulk count or a bulk length other than
// its first eighteen digits (scan does those): the sign, a nineteenth
// digit, the '\r' that ends it, or a bad byte.
func (g *guardConn) lenOther(c byte) error {
	switch {
	case c == '-' && g.digits == 0 && !g.neg:
		g.neg = true
	case c >= '0' && c <= '9':
		if g.digits == 1 && g.num == 0 {
			return g.lenError() // a leading zero (Redis's string2ll)
		}
		g.digits++
		g.num = g.num*10 + int64(c-'0')
		if g.digits > 18 {
			return g.lenError()
		}
	case c == '\r':
		if g.digits == 0 || (g.neg && g.num == 0) {
			return g.lenError() // no digits, or "-0" (Redis's string2ll)
		}
		if g.st == gCount {
			g.st = gCountLF
		} else {
			g.st = gBulkLenLF
		}
	default:
		return g.lenError()
	}
	return nil
}

// countEnd ends a multibulk count at its '\n' and checks it.
func (g *guardConn) countEnd(c byte, maxArgs int64) error {
	if c != '\n' {
		return &protoError{"invalid multibulk length"}
	}
	switch {
	case g.neg || g.num == 0:
		g.st = gStart // Redis ignores such a request (the reader skips it)
	case g.num > maxArgs:
		if g.authed != nil && !g.authed() {
			return &protoError{"unauthenticated multibulk length"}
		}
		return &protoError{"invalid multibulk length"}
	default:
		g.args, g.st = g.num, gBulkHdr
	}
	return nil
}

// bulkHdr expects the '$' that starts a bulk length.
func (g *guardConn) bulkHdr(c byte) error {
	if c != '$' {
		return &protoError{"expected '$', got '" + printable(c) + "'"}
	}
	g.st, g.num, g.digits, g.neg = gBulkLen, 0, 0, false
	return nil
}

// bulkLenEnd ends a bulk length at its '\n' and checks it.
func (g *guardConn) bulkLenEnd(c byte, maxBulk int64) error {
	if c != '\n' {
		return &protoError{"invalid bulk length"}
	}
	if g.neg || g.num > maxBulk {
		if g.authed != nil && !g.authed() {
			return &protoError{"unauthenticated bulk length"}
		}
		return &protoError{"invalid bulk length"}
	}
	g.left, g.st = g.num+2, gBulkData
	return nil
}

// skipBulk consumes up to avail bytes of a bulk payload and its CRLF and
// returns how many it took (at least one).
func (g *guardConn) skipBulk(avail int) int {
	skip := min(g.left, int64(avail))
	g.left -= skip
	if g.left == 0 {
		g.args--
		if g.args == 0 {
			g.st = gStart
		} else {
			g.st = gBulkHdr
		}
	}
	return int(skip)
}

func (g *guardConn) lenError() error {
	if g.st == gCount {
		return &protoError{"invalid multibulk length"}
	}
	return &protoError{"invalid bulk length"}
}

func printable(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(rune(c))
	}
	return "\\x" + strconv.FormatUint(uint64(c)|0x100, 16)[1:]
}
