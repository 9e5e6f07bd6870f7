package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CLIENT, ROLE and MONITOR.

func init() {
	register(
		&command{name: "client", arity: -2, fn: cmdClient},
		&command{name: "role", arity: 1, fn: cmdRole},
		&command{name: "monitor", arity: 1, fn: cmdMonitor},
	)
}

func (cl *client) getName() string {
	if p := cl.name.Load(); p != nil {
		return *p
	}
	return ""
}

func (cl *client) setName(n string) { cl.name.Store(&n) }

// clientArity is Redis 7's arity of each CLIENT subcommand.
var clientArity = map[string]int{"kill": -3, "list": -2, "info": 2, "id": 2, "getname": 2, "setname": 3,
	"reply": 3, "no-evict": 3, "setinfo": 4, "help": 2}

// subcommandOK answers Redis 7's errors for an unknown subcommand ("ERR
// unknown subcommand 'x'. Try CLIENT HELP.") or one with the wrong
// number of arguments ("... for 'client|kill' command"), and reports
// whether args is fine.
func subcommandOK(r *reply, container string, arity map[string]int, args [][]byte) bool {
	sub := lower(args[1])
	n, ok := arity[sub]
	switch {
	case !ok:
		r.err("ERR unknown subcommand '" + clip(args[1], 128) + "'. Try " + strings.ToUpper(container) + " HELP.")
	case (n > 0 && len(args) != n) || (n < 0 && len(args) < -n):
		r.wrongArgs(container + "|" + sub)
	default:
		return true
	}
	return false
}

func cmdClient(s *Server, r *reply, args [][]byte) {
	sub := lower(args[1])
	name := "client|" + sub
	r.cl.lastCmd.Store(&name)
	if !subcommandOK(r, "client", clientArity, args) {
		return
	}
	switch {
	case sub == "setname":
		for _, ch := range args[2] {
			if ch <= ' ' || ch > '~' {
				r.err("ERR Client names cannot contain spaces, newlines or special characters.")
				return
			}
		}
		r.cl.setName(string(args[2]))
		r.ok()
	case sub == "getname":
		if n := r.cl.getName(); n == "" {
			r.null()
		} else {
			r.bulkString(n)
		}
	case sub == "id":
		r.int(r.cl.id)
	case sub == "setinfo":
		r.ok()
	case sub == "info":
		r.bulkString(s.clientLine(r.cl, respLen(args)) + "\n")
	case sub == "list":
		clientList(s, r, args)
	case sub == "kill":
		clientKill(s, r, args[2:])
	case sub == "reply":
		clientReply(r, args[2])
	case sub == "no-evict":
		if eq(args[2], "on") || eq(args[2], "off") {
			r.ok() // sieve evicts no client for memory
		} else {
			r.syntax()
		}
	case sub == "help":
		lines := []string{"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ID", "INFO", "LIST [TYPE normal|master|replica|pubsub] [ID id ...]",
			"KILL <ip:port> | KILL <option> <value> [...] (ID, ADDR, LADDR, SKIPME, USER, TYPE)",
			"GETNAME", "SETNAME <name>", "SETINFO <attr> <value>", "REPLY ON|OFF|SKIP", "NO-EVICT ON|OFF", "HELP"}
		r.array(len(lines))
		for _, l := range lines {
			r.status(l)
		}
	}
}

// respLen is the length of a command's RESP encoding: what Redis's query
// buffer holds of it while it runs (CLIENT LIST's qbuf for the caller).
func respLen(args [][]byte) int {
	n := len(fmt.Sprintf("*%d\r\n", len(args)))
	for _, a := range args {
		n += len(fmt.Sprintf("$%d\r\n", len(a))) + len(a) + 2
	}
	return n
}

// clientLine is a client's line of CLIENT LIST, with Redis's fields
// (those sieve has no counterpart of are 0; qbuf is the running command's
// for the caller).
func (s *Server) clientLine(cl *client, qbuf int) string {
	now := time.Now()
	flags := "N"
	if cl.monitor.Load() {
		flags = "O"
	}
	cmd := "NULL"
	if p := cl.lastCmd.Load(); p != nil {
		cmd = *p
	}
	idle := now.Sub(time.Unix(0, cl.lastActive.Load()))
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=0 sub=0 psub=0 ssub=0 multi=-1 "+
		"qbuf=%d qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=-1 resp=2",
		cl.id, cl.addr, cl.laddr, cl.id+7, cl.getName(), int64(now.Sub(cl.created).Seconds()), int64(idle.Seconds()), flags, qbuf, cmd)
}

// liveClients returns the connected clients, by id.
func (s *Server) liveClients() []*client {
	s.connMu.Lock()
	out := make([]*client, 0, len(s.live))
	for _, cl := range s.live {
		if !cl.killed.Load() {
			out = append(out, cl)
		}
	}
	s.connMu.Unlock()
	sortClients(out)
	return out
}

func sortClients(cs []*client) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].id < cs[j-1].id; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// clientList is CLIENT LIST [TYPE t] [ID id ...] (cmd: the whole
// command).
func clientList(s *Server, r *reply, cmd [][]byte) {
	args := cmd[2:]
	var ids map[int64]bool
	typ := ""
	switch {
	case len(args) == 0:
	case len(args) == 2 && eq(args[0], "type"):
		typ = lower(args[1])
		if typ != "normal" && typ != "master" && typ != "replica" && typ != "slave" && typ != "pubsub" {
			r.err("ERR Unknown client type '" + clip(args[1], 64) + "'")
			return
		}
	case len(args) >= 2 && eq(args[0], "id"):
		ids = map[int64]bool{}
		for _, a := range args[1:] {
			n, ok := parseInt(a)
			if !ok || n <= 0 {
				r.err("ERR Invalid client ID")
				return
			}
			ids[n] = true
		}
	default:
		r.syntax()
		return
	}
	var b strings.Builder
	for _, cl := range s.liveClients() {
		if (ids != nil && !ids[cl.id]) || (typ != "" && typ != "normal") {
			continue
		}
		qbuf := 0
		if cl == r.cl {
			qbuf = respLen(cmd)
		}
		b.WriteString(s.clientLine(cl, qbuf))
		b.WriteByte('\n')
	}
	r.bulkString(b.String())
}

// killFilter is CLIENT KILL's filters (new form).
type killFilter struct {
	id           int64
	addr, laddr  string
	user, typ    string
	skipme       bool
	hasID, hasTy bool
}

func (f *killFilter) match(cl, self *client) bool {
	switch {
	case f.skipme && cl == self,
		f.hasID && cl.id != f.id,
		f.addr != "" && cl.addr != f.addr,
		f.laddr != "" && cl.laddr != f.laddr,
		f.hasTy && f.typ != "normal":
		return false
	}
	return true // USER: every client is "default"
}

// parseKillFilter parses CLIENT KILL's option pairs, answering errors.
func parseKillFilter(r *reply, args [][]byte) (*killFilter, bool) {
	f := &killFilter{skipme: true}
	if len(args)%2 != 0 {
		r.syntax()
		return nil, false
	}
	for i := 0; i < len(args); i += 2 {
		v := args[i+1]
		switch opt := lower(args[i]); {
		case opt == "id":
			n, ok := parseInt(v)
			if !ok || n <= 0 {
				r.err("ERR client-id should be greater than 0")
				return nil, false
			}
			f.id, f.hasID = n, true
		case opt == "addr":
			f.addr = string(v)
		case opt == "laddr":
			f.laddr = string(v)
		case opt == "user":
			if string(v) != "default" {
				r.err("ERR No such user '" + clip(v, 64) + "'")
				return nil, false
			}
		case opt == "type":
			f.typ, f.hasTy = lower(v), true
			if f.typ != "normal" && f.typ != "master" && f.typ != "replica" && f.typ != "slave" && f.typ != "pubsub" {
				r.err("ERR Unknown client type '" + clip(v, 64) + "'")
				return nil, false
			}
		case opt == "skipme" && (eq(v, "yes") || eq(v, "no")):
			f.skipme = eq(v, "yes")
		case opt == "maxage":
			if _, ok := parseInt(v); !ok {
				r.notInt()
				return nil, false
			}
		default:
			r.syntax()
			return nil, false
		}
	}
	return f, true
}

// clientKill is CLIENT KILL addr:port (OK, or an error when no client
// has that address) and CLIENT KILL <filter> <value> ... (the number
// killed). A client that kills itself gets its reply, then is closed.
func clientKill(s *Server, r *reply, args [][]byte) {
	var f *killFilter
	old := len(args) == 1
	if old {
		f = &killFilter{addr: string(args[0])}
	} else if f, _ = parseKillFilter(r, args); f == nil {
		return
	}
	killed, self := 0, false
	for _, cl := range s.liveClients() {
		if !f.match(cl, r.cl) {
			continue
		}
		killed++
		if cl == r.cl {
			self = true
			continue
		}
		cl.killed.Store(true)
		_ = cl.conn.guardConn.Conn.Close() // its goroutine ends at its next read
	}
	switch {
	case old && killed == 0:
		r.err("ERR No such client")
		return
	case old:
		r.ok()
	default:
		r.int(int64(killed))
	}
	if self {
		r.flushAndClose()
	}
}

// clientReply is CLIENT REPLY ON|OFF|SKIP; handle drops the replies.
func clientReply(r *reply, mode []byte) {
	switch {
	case eq(mode, "on"):
		r.cl.replyOff, r.cl.skipNext, r.cl.replyOn = false, false, true
		r.ok()
	case eq(mode, "off"):
		r.cl.replyOff = true
	case eq(mode, "skip"):
		if !r.cl.replyOff {
			r.cl.skipNext = true
		}
	default:
		r.syntax()
	}
}

// cmdRole answers as a master without replicas.
func cmdRole(s *Server, r *reply, args [][]byte) {
	if s.cluster != nil {
		s.clusterRole(r)
		return
	}
	r.array(3)
	r.bulkString("master")
	r.int(0)
	r.array(0)
}

// monitors are the clients in MONITOR mode. Each has a queue that its
// own goroutine writes to the connection, so that a slow monitor slows
// no command; a monitor whose queue is full is dropped (Redis drops a
// monitor past its output limit).
type monitors struct {
	n  atomic.Int64 // len(m), read without mu on every command
	mu sync.Mutex
	m  map[*client]chan []byte
}

const monitorQueue = 1 << 14

func cmdMonitor(s *Server, r *reply, args [][]byte) {
	if r.cl.monitor.Load() {
		return // Redis ignores a second MONITOR
	}
	r.ok()
	if err := r.flush(); err != nil { // +OK before the first line
		return
	}
	r.cl.monitor.Store(true)
	ch := make(chan []byte, monitorQueue)
	s.mon.mu.Lock()
	if s.mon.m == nil {
		s.mon.m = map[*client]chan []byte{}
	}
	s.mon.m[r.cl] = ch
	s.mon.n.Store(int64(len(s.mon.m)))
	s.mon.mu.Unlock()
	nc := r.cl.conn.guardConn.Conn
	go func() {
		for line := range ch {
			_ = nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := nc.Write(line); err != nil {
				_ = nc.Close()
				for range ch { // drain until remove closes it
				}
				return
			}
		}
	}()
}

// remove takes cl out of the monitors (its connection closed).
func (m *monitors) remove(cl *client) {
	if !cl.monitor.Load() {
		return
	}
	m.mu.Lock()
	if ch, ok := m.m[cl]; ok {
		delete(m.m, cl)
		close(ch)
	}
	m.n.Store(int64(len(m.m)))
	m.mu.Unlock()
}

// monitorSkip are the commands Redis does not show to monitors (admin
// commands, and those that carry a password).
var monitorSkip = map[string]bool{"auth": true, "hello": true, "config": true, "debug": true,
	"shutdown": true, "monitor": true, "save": true, "bgsave": true}

// feed sends a command run by cl to every monitor, as Redis writes it:
// +<unix time with microseconds> [0 <addr>] "arg" "arg"...
func (m *monitors) feed(cl *client, c *command, args [][]byte) {
	if monitorSkip[c.name] {
		return
	}
	now := time.Now()
	b := fmt.Appendf(nil, "+%d.%06d [0 %s]", now.Unix(), now.Nanosecond()/1000, cl.addr)
	for _, a := range args {
		b = append(b, ' ')
		b = appendRepr(b, a)
	}
	b = append(b, '\r', '\n')
	m.mu.Lock()
	defer m.mu.Unlock()
	for mc, ch := range m.m {
		select {
		case ch <- b:
		default:
			_ = mc.conn.guardConn.Conn.Close() // too far behind
		}
	}
}

// appendRepr appends a quoted as Redis's sdscatrepr quotes it.
func appendRepr(b, a []byte) []byte {
	b = append(b, '"')
	for _, c := range a {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\a':
			b = append(b, `\a`...)
		case '\b':
			b = append(b, `\b`...)
		default:
			if c >= 0x20 && c < 0x7f {
				b = append(b, c)
			} else {
				b = append(b, `\x`...)
				b = append(b, strconv.FormatUint(uint64(c)|0x100, 16)[1:]...)
			}
		}
	}
	return append(b, '"')
}
