package main

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"time"
)

// The RESP2 connection layer: the request reader, the reply buffer and
// each connection's read-execute-reply loop.
//
// github.com/tidwall/redcon served before. Its reader copies every
// request (Raw) and allocates the argument slice and a marks slice per
// command, and redcon's Writer.Buffer copies the whole reply buffer: in
// the PFADD benchmark (redis-benchmark -P 16 -r 100000) its readCommands
// took 19% of the server's CPU, 6% of it allocation. It also has no
// request limits and panics on some lengths (the guard in guard.go keeps
// those away). This reader parses in place: a command's arguments are
// slices of the connection's read buffer, valid until the next read,
// which happens only after every command of the read has run and the
// pipeline's batch has committed (afterCommand). A handler that keeps an
// argument past its command copies it (every one does: the engine's
// batches, the metadata set and the Store's cache copy keys).
//
// The guard (guard.go) still checks the framing and the limits of every
// byte before this reader sees it; the reader nevertheless checks what it
// parses and never indexes past what it has, so it is safe on its own
// (FuzzRESPReader).

// Command is one request: its arguments, the name first.
type Command struct {
	Args [][]byte
}

// respConn is one client connection.
type respConn struct {
	nc         net.Conn // the client's connection, through the guard
	buf        []byte   // read buffer: buf[start:end] is not parsed yet
	start, end int
	cmds       []Command // the commands of the last read
	next       int       // the index of the next one to run
	argv       [][]byte  // the backing array of the commands' Args
	inl        []byte    // inline arguments after unquoting
	perr       error     // a protocol error after the complete commands
	rerr       error     // a read error that came with bytes
	out        []byte    // replies not yet sent
	werr       error     // the first write error: nothing more is sent
	closed     bool
	deadline   bool // a read deadline is set
}

const (
	respReadBuf   = 16 << 10
	respKeepBuf   = 1 << 20   // a bigger read buffer is dropped once empty
	respKeepReply = 256 << 10 // a bigger reply buffer is dropped once sent
)

var (
	errUnbalancedQuotes = &protoError{"unbalanced quotes in request"}
	errMultibulkLen     = &protoError{"invalid multibulk length"}
	errBulkLen          = &protoError{"invalid bulk length"}
)

func newRESPConn(nc net.Conn) *respConn {
	return &respConn{nc: nc, buf: make([]byte, respReadBuf)}
}

// readCommands returns when c.cmds holds at least one command, reading as
// needed, or with the error that ends the connection.
func (c *respConn) readCommands() error {
	// The last read's commands are done: drop their references into the
	// read buffer (so that a grown buffer can go) and reuse the arrays.
	clear(c.cmds)
	clear(c.argv)
	c.cmds, c.next, c.argv, c.inl = c.cmds[:0], 0, c.argv[:0], c.inl[:0]
	for {
		if c.perr == nil {
			c.parse()
		}
		if len(c.cmds) > 0 {
			return nil // a protocol error after them ends the next call
		}
		if c.perr != nil {
			return c.perr
		}
		if c.rerr != nil {
			return c.rerr
		}
		c.makeRoom()
		n, err := c.nc.Read(c.buf[c.end:])
		c.end += n
		if err != nil {
			if n == 0 {
				return err
			}
			c.rerr = err // after the commands these bytes complete
		}
	}
}

// makeRoom readies buf for a read: rewound when parsed to the end,
// shifted or grown when the unparsed command fills it.
func (c *respConn) makeRoom() {
	switch {
	case c.start == c.end:
		c.start, c.end = 0, 0
		if len(c.buf) > respKeepBuf {
			c.buf = make([]byte, respReadBuf)
		}
	case c.end == len(c.buf) && c.start > 0:
		c.end = copy(c.buf, c.buf[c.start:c.end])
		c.start = 0
	case c.end == len(c.buf):
		nb := make([]byte, 2*len(c.buf))
		copy(nb, c.buf[:c.end])
		c.buf = nb
	}
}

// parse appends the complete commands of buf[start:end] to c.cmds and
// stops at an incomplete one or at a protocol error (c.perr).
func (c *respConn) parse() {
	for c.start < c.end {
		b := c.buf[c.start:c.end]
		var n int
		var err error
		if b[0] == '*' {
			n, err = c.parseMultibulk(b)
		} else {
			n, err = c.parseInline(b)
		}
		if err != nil {
			c.perr = err
			return
		}
		if n == 0 {
			return
		}
		c.start += n
	}
}

// parseLen parses the "<digits>\r\n" at b[i:] and returns the number and
// the index after it, or next 0 if b ends first.
func parseLen(b []byte, i int, bad *protoError) (n int64, next int, err error) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	digits := 0
	for ; i < len(b); i++ {
		ch := b[i]
		if ch >= '0' && ch <= '9' {
			if digits == 18 || (digits == 1 && n == 0) {
				return 0, 0, bad // too long, or a leading zero (Redis's string2ll)
			}
			n = n*10 + int64(ch-'0')
			digits++
			continue
		}
		if ch != '\r' || digits == 0 || (neg && n == 0) {
			return 0, 0, bad // "-0" too (Redis's string2ll)
		}
		if i+1 == len(b) {
			return 0, 0, nil
		}
		if b[i+1] != '\n' {
			return 0, 0, bad
		}
		if neg {
			n = -n
		}
		return n, i + 2, nil
	}
	return 0, 0, nil
}

// parseMultibulk parses "*<n>\r\n" and n bulks at the start of b and
// returns the bytes they take (0: incomplete).
func (c *respConn) parseMultibulk(b []byte) (int, error) {
	count, i, err := parseLen(b, 1, errMultibulkLen)
	if err != nil || i == 0 {
		return 0, err
	}
	if count <= 0 {
		return i, nil // Redis skips an empty or negative multibulk: no command
	}
	first := len(c.argv)
	for range count {
		if i >= len(b) {
			c.argv = c.argv[:first]
			return 0, nil
		}
		if b[i] != '$' {
			return 0, &protoError{"expected '$', got '" + printable(b[i]) + "'"}
		}
		size, j, err := parseLen(b, i+1, errBulkLen)
		if err != nil {
			return 0, err
		}
		if j == 0 {
			c.argv = c.argv[:first]
			return 0, nil
		}
		if size < 0 {
			return 0, errBulkLen
		}
		if int64(len(b)-j) < size+2 {
			c.argv = c.argv[:first]
			return 0, nil
		}
		end := j + int(size)
		if b[end] != '\r' || b[end+1] != '\n' {
			return 0, errBulkLen
		}
		c.argv = append(c.argv, b[j:end:end])
		i = end + 2
	}
	c.cmds = append(c.cmds, Command{Args: c.argv[first:len(c.argv):len(c.argv)]})
	return i, nil
}

// parseInline parses an inline request (a line of space-separated
// arguments, quoted as redis-cli and Redis's sdssplitargs quote them) at
// the start of b and returns the bytes it takes (0: no '\n' yet). An
// empty line is consumed and makes no command, as in Redis.
func (c *respConn) parseInline(b []byte) (int, error) {
	nl := -1
	for i, ch := range b {
		if ch == '\n' {
			nl = i
			break
		}
	}
	if nl < 0 {
		return 0, nil
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if z := bytes.IndexByte(line, 0); z >= 0 {
		line = line[:z] // Redis splits the line as a C string: it ends at a NUL
	}
	first := len(c.argv)
	if err := c.splitArgs(line); err != nil {
		return 0, err
	}
	if len(c.argv) > first {
		c.cmds = append(c.cmds, Command{Args: c.argv[first:len(c.argv):len(c.argv)]})
	}
	return nl + 1, nil
}

func isSpace(ch byte) bool {
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'
}

func hexVal(ch byte) (byte, bool) {
	switch {
	case ch >= '0' && ch <= '9':
		return ch - '0', true
	case ch >= 'a' && ch <= 'f':
		return ch - 'a' + 10, true
	case ch >= 'A' && ch <= 'F':
		return ch - 'A' + 10, true
	}
	return 0, false
}

// splitArgs splits an inline line into arguments appended to c.argv, with
// Redis's quoting: "..." takes \xHH and the escapes \n \r \t \b \a (any
// other escaped byte stands for itself), '...' takes \' only, and a
// closing quote must be followed by a space or the end of the line.
func (c *respConn) splitArgs(line []byte) error {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return nil
		}
		start := len(c.inl)
		inq, insq := false, false
	arg:
		for ; i < len(line); i++ {
			ch := line[i]
			switch {
			case inq:
				switch {
				case ch == '\\' && i+3 < len(line) && line[i+1] == 'x':
					hi, ok1 := hexVal(line[i+2])
					lo, ok2 := hexVal(line[i+3])
					if ok1 && ok2 {
						c.inl = append(c.inl, hi<<4|lo)
						i += 3
					} else {
						c.inl = append(c.inl, 'x')
						i++
					}
				case ch == '\\' && i+1 < len(line):
					i++
					c.inl = append(c.inl, unescape(line[i]))
				case ch == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return errUnbalancedQuotes
					}
					inq = false
					i++
					break arg
				default:
					c.inl = append(c.inl, ch)
				}
			case insq:
				switch {
				case ch == '\\' && i+1 < len(line) && line[i+1] == '\'':
					c.inl = append(c.inl, '\'')
					i++
				case ch == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return errUnbalancedQuotes
					}
					insq = false
					i++
					break arg
				default:
					c.inl = append(c.inl, ch)
				}
			default:
				switch {
				case ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t':
					break arg // sdssplitargs's ends (not \v or \f, which it skips only between arguments)
				case ch == '"':
					inq = true
				case ch == '\'':
					insq = true
				default:
					c.inl = append(c.inl, ch)
				}
			}
		}
		if inq || insq {
			return errUnbalancedQuotes
		}
		c.argv = append(c.argv, c.inl[start:len(c.inl):len(c.inl)])
	}
}

// unescape is the byte a backslash escape inside "..." stands for: \n
// \r \t \b \a, or the escaped byte itself.
func unescape(e byte) byte {
	switch e {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return e
}

// The reply methods the commands use.

func (c *respConn) WriteError(msg string)  { c.out = appendLine(c.out, '-', msg) }
func (c *respConn) WriteString(msg string) { c.out = appendLine(c.out, '+', msg) }

// appendLine appends a simple string or error: the type byte, s with its
// CR and LF bytes made spaces (it is one line), and the CRLF.
func appendLine(b []byte, typ byte, s string) []byte {
	b = append(b, typ)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '\r' || ch == '\n' {
			ch = ' '
		}
		b = append(b, ch)
	}
	return append(b, '\r', '\n')
}

func appendPrefix(b []byte, c byte, n int64) []byte {
	if n >= 0 && n <= 9 {
		return append(b, c, byte('0'+n), '\r', '\n')
	}
	b = append(b, c)
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

func (c *respConn) WriteBulk(b []byte) {
	c.out = appendPrefix(c.out, '$', int64(len(b)))
	c.out = append(c.out, b...)
	c.out = append(c.out, '\r', '\n')
}

func (c *respConn) WriteBulkString(s string) {
	c.out = appendPrefix(c.out, '$', int64(len(s)))
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}

func (c *respConn) WriteInt(n int)          { c.out = appendPrefix(c.out, ':', int64(n)) }
func (c *respConn) WriteInt64(n int64)      { c.out = appendPrefix(c.out, ':', n) }
func (c *respConn) WriteArray(n int)        { c.out = appendPrefix(c.out, '*', int64(n)) }
func (c *respConn) WriteNull()              { c.out = append(c.out, "$-1\r\n"...) }
func (c *respConn) WriteNullArray()         { c.out = append(c.out, "*-1\r\n"...) }
func (c *respConn) PeekPipeline() []Command { return c.cmds[c.next:] }

// Close closes the connection; no command after the current one runs and
// nothing more is sent (flush first to send the replies).
func (c *respConn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	return c.nc.Close()
}

// flush sends the pending replies.
func (c *respConn) flush() error {
	if c.werr != nil {
		c.out = c.out[:0]
		return c.werr
	}
	if len(c.out) == 0 {
		return nil
	}
	_, c.werr = c.nc.Write(c.out)
	if cap(c.out) > respKeepReply {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return c.werr
}

// setIdle arms or clears the read deadline before a read.
func (c *respConn) setIdle(idle time.Duration) {
	switch {
	case idle > 0:
		_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		c.deadline = true
	case c.deadline:
		_ = c.nc.SetReadDeadline(time.Time{})
		c.deadline = false
	}
}

// serveConn runs a connection until it closes or fails.
func (s *Server) serveConn(c *respConn, cl *client) {
	var err error
	defer func() {
		s.commitDeferred(&cl.r) // defensive: a connection never leaves holding stripe locks
		_ = c.Close()
		s.forget(c)
		s.closed(cl, err)
	}()
	for {
		c.setIdle(time.Duration(s.idle.Load()))
		err = c.readCommands()
		cl.lastActive.Store(time.Now().UnixNano())
		if err != nil {
			var pe *protoError
			if errors.As(err, &pe) && err != cl.conn.guardConn.pending {
				// The parser's own find (the guard has written its own).
				c.WriteError("ERR " + err.Error())
				_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
				_ = c.flush()
			}
			return
		}
		for c.next < len(c.cmds) && !c.closed {
			cmd := c.cmds[c.next]
			c.next++
			s.handle(cl, cmd)
		}
		if c.closed {
			return
		}
		if err = c.flush(); err != nil {
			return
		}
	}
}
