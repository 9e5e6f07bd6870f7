package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
)

// Config is the server's configuration (flags, and CONFIG SET).
type Config struct {
	Addr         string
	Dir          string
	RequirePass  string
	MaxClients   int           // Redis's maxclients
	Sync         bool          // fsync every write before its reply
	IdleTimeout  time.Duration // 0: none (Redis's "timeout 0")
	MaxBulkLen   int64         // proto-max-bulk-len
	MaxArgs      int64         // arguments of one command
	MaxInline    int64         // length of an inline command
	OutputLimit  int64         // hard limit on one client's pending replies
	WriteTimeout time.Duration // a client that reads no reply for this long is dropped
	// BatchPipeline writes the plain SETs and PFADDs of one pipeline as
	// one batch (one WAL write, one fsync with Sync).
	BatchPipeline bool
	// MemTableMiB is the engine's memtable size (Options.MemTableSize) in
	// MiB; 0 keeps the engine's default. A server's writes are small and
	// random: a smaller memtable keeps the tree an insert descends, and
	// the reply cache, in the CPU's caches (cmd/sieve-server/README.md).
	MemTableMiB int
	// L0Trigger is the engine's L0CompactionTrigger; 0 keeps the engine's
	// default (4). A server's keys are few and hot, so every flush covers
	// most of them and each L0 compaction rewrites the whole base level:
	// compacting every 8 tables instead of 4 halves that rewriting (the
	// PFADD benchmark of cmd/sieve-server/README.md measures it), for a
	// Get that probes up to twice as many L0 filters.
	L0Trigger int
	// PageCacheMiB bounds the memory of the sketch Store's cache of
	// paged filters' pages (sketchcol.StoreOptions.PageCacheSize), MiB;
	// 0 turns it off. The default, 128, holds a Bloom filter for 100M
	// items at 1% whole, as Redis holds it.
	PageCacheMiB int
	// ProtectedMode refuses clients from other machines while no password
	// is set (Redis's protected-mode; default on).
	ProtectedMode bool
	// RaftID, RaftPeers and RaftDir turn cluster mode on (-raft-id,
	// -raft-peers "ID=HOST:PORT@RAFTPORT,...", -raft-dir; cluster.go).
	RaftID, RaftPeers, RaftDir string
	// RaftJoin (-raft-join): do not bootstrap; wait to be added to an
	// existing cluster with SIEVE.RAFT ADD.
	RaftJoin bool
	// DBOptions override the engine's options (tests).
	DBOptions *sieve.Options
	// Logger receives the server's and the engine's events (flushes,
	// compactions, stalls, a background error); nil: none.
	Logger *slog.Logger
}

// DefaultConfig returns Redis's defaults where Redis has one.
func DefaultConfig() Config {
	return Config{
		Addr:          "127.0.0.1:6380",
		Dir:           "sieve-data",
		MaxClients:    10000,
		MaxBulkLen:    512 << 20,
		MaxArgs:       1 << 20,
		MaxInline:     64 << 10,
		OutputLimit:   1 << 30,
		WriteTimeout:  30 * time.Second,
		BatchPipeline: true,
		ProtectedMode: true,
		MemTableMiB:   8,
		L0Trigger:     8,
		PageCacheMiB:  128,
	}
}

// Server is a RESP2 server over a sieve DB and its sketch Store.
type Server struct {
	*serverState
	// ks is the keyspace commands run on: the server's, or a
	// transaction's view of it (EXEC runs its commands on a Server that
	// shares the state and has the view).
	ks *keyspace
}

// serverState is the server's state, shared by its transaction views.
type serverState struct {
	cfg Config
	db  *sieve.DB
	// cluster is the raft node in cluster mode (nil otherwise).
	cluster *clusterState
	log     *slog.Logger // cfg.Logger, or one that discards
	// metricsHTTP is the /metrics server (ServeMetrics), stopped by Close.
	metricsHTTP atomic.Pointer[http.Server]
	// sweepStop stops the expired keys' sweeper, which closes sweepDone.
	sweepStop, sweepDone chan struct{}
	lim                  protoLimits
	ln                   net.Listener
	started              time.Time

	pass      atomic.Pointer[password] // set by CONFIG SET from any connection
	hasPass   atomic.Bool
	authFails atomic.Int64

	protectedMode atomic.Bool
	clients       atomic.Int64
	nextID        atomic.Int64
	maxClient     atomic.Int64
	idle          atomic.Int64 // idle timeout, ns
	conns         atomic.Int64
	rejected      atomic.Int64
	protoErrs     atomic.Int64

	// cmds counts the commands served, sharded by client so that the two
	// cores do not write one cache line per command (nor the line of the
	// read-mostly fields above).
	_    [64]byte // off the line of the fields above
	cmds [cmdShards]struct {
		n, hits, misses atomic.Int64 // commands, keyspace hits and misses
		_               [40]byte
	}
	stats  statsState           // ops/s (stats.go)
	cstats [][cmdShards]cmdStat // commandstats, by command.idx (stats.go)
	mon    monitors             // the MONITOR clients (cmd_client.go)

	// connMu guards live and done. A leaf of the lock order: held only
	// to register, unregister or close connections, never while taking
	// another lock or running a command.
	connMu sync.Mutex
	live   map[*respConn]*client // the open connections
	done   bool                  // Close ran: no connection is added
	// running counts the connections' goroutines: Close waits for them,
	// so that no command holds an iterator or snapshot when the DB closes.
	running sync.WaitGroup

	shutdownOnce sync.Once
	shutdown     chan struct{}
	closeOnce    sync.Once
	closeErr     error
}

const cmdShards = 8

// commands returns the number of commands served.
func (s *Server) commands() int64 {
	var n int64
	for i := range s.cmds {
		n += s.cmds[i].n.Load()
	}
	return n
}

// client is one connection's state.
type client struct {
	// killed: CLIENT KILL closed its connection; it is gone for CLIENT
	// LIST and KILL although its goroutine may not have ended yet
	killed  atomic.Bool
	id      int64
	name    atomic.Pointer[string] // CLIENT SETNAME (CLIENT LIST reads it from other connections)
	authed  atomic.Bool
	addr    string
	laddr   string
	created time.Time
	// Read by CLIENT LIST from other connections: the last command and
	// the time of the last read of requests (UnixNano).
	lastCmd    atomic.Pointer[string]
	lastActive atomic.Int64
	monitor    atomic.Bool
	// CLIENT REPLY OFF and SKIP (the connection's own goroutine only).
	replyOff, skipNext bool
	readonly           bool  // READONLY (cluster mode): reads served by a follower
	replyOn            bool  // CLIENT REPLY ON ran: its own OK is sent
	pending            int64 // reply bytes written since the last flush (approximate)
	conn               *clientConn
	ds                 deferState
	multi              multiState
	r                  reply // reused by every command of the connection
}

// Open opens the DB in cfg.Dir and returns a server that is not yet
// listening.
func Open(cfg Config) (*Server, error) {
	var opts sieve.Options
	if cfg.DBOptions != nil {
		opts = *cfg.DBOptions
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return clock() }
	}
	if opts.Logger == nil {
		opts.Logger = cfg.Logger
	}
	if opts.MemTableSize == 0 && cfg.MemTableMiB > 0 {
		opts.MemTableSize = int64(cfg.MemTableMiB) << 20
	}
	if opts.L0CompactionTrigger == 0 && cfg.L0Trigger > 0 &&
		(opts.L0StopWritesTrigger == 0 || opts.L0StopWritesTrigger >= cfg.L0Trigger) {
		opts.L0CompactionTrigger = cfg.L0Trigger
	}
	db, cl, err := openDB(cfg, &opts)
	if err != nil {
		return nil, err
	}
	ks, err := openKeyspace(db, cfg.Sync, cfg.PageCacheMiB)
	if cl != nil {
		cl.start(ks)
	}
	if err != nil {
		closeDB(db, cl)
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{serverState: &serverState{cfg: cfg, db: db, cluster: cl, log: logger, started: time.Now(), shutdown: make(chan struct{}),
		sweepStop: make(chan struct{}), sweepDone: make(chan struct{})}, ks: ks}
	go func() {
		defer close(s.sweepDone)
		if cl != nil {
			s.runClusterSweeper(s.sweepStop)
			return
		}
		ks.runSweeper(s.sweepStop)
	}()
	s.lim.maxBulk.Store(cfg.MaxBulkLen)
	s.lim.maxArgs.Store(cfg.MaxArgs)
	s.lim.maxInline.Store(cfg.MaxInline)
	s.maxClient.Store(int64(cfg.MaxClients))
	s.idle.Store(int64(cfg.IdleTimeout))
	s.setPass(cfg.RequirePass)
	s.protectedMode.Store(cfg.ProtectedMode)
	s.cstats = make([][cmdShards]cmdStat, len(commands))
	s.startSampler()
	return s, nil
}

// openDB opens the DB: cfg.Dir's, or in cluster mode the raft node's
// state machine.
func openDB(cfg Config, opts *sieve.Options) (*sieve.DB, *clusterState, error) {
	if cfg.RaftID == "" {
		db, err := sieve.Open(cfg.Dir, opts)
		return db, nil, err
	}
	cl, db, err := openCluster(cfg, opts)
	return db, cl, err
}

// closeDB closes what openDB opened.
func closeDB(db *sieve.DB, cl *clusterState) error {
	if cl != nil {
		return cl.rep.Close()
	}
	return db.Close()
}

// password is the configured password and its hash.
type password struct {
	plain string
	hash  [32]byte
}

// setPass sets the password ("": none). Connections already open stay
// authenticated, as in Redis: a connection made while no password was set
// counts as authenticated (Serve).
func (s *Server) setPass(p string) {
	s.pass.Store(&password{plain: p, hash: sha256.Sum256([]byte(p))})
	s.hasPass.Store(p != "")
}

// requirePass returns the password ("": none).
func (s *Server) requirePass() string { return s.pass.Load().plain }

// Listen binds cfg.Addr.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	s.ln = ln
	return nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until Close (or SHUTDOWN).
func (s *Server) Serve() error {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.connMu.Lock()
			done := s.done
			s.connMu.Unlock()
			if done || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Out of descriptors and the like: wait, as net/http does.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if s.refuseProtected(nc) {
			continue
		}
		cl := &client{id: s.nextID.Add(1), addr: nc.RemoteAddr().String(), laddr: nc.LocalAddr().String(), created: time.Now()}
		cl.lastActive.Store(cl.created.UnixNano())
		cl.authed.Store(!s.hasPass.Load())
		g := &guardConn{Conn: nc, lim: &s.lim}
		g.authed = func() bool { return !s.hasPass.Load() || cl.authed.Load() }
		cl.conn = &clientConn{guardConn: g, cl: cl}
		c := newRESPConn(cl.conn)
		cl.r = reply{respConn: c, cl: cl, s: s}
		if !s.accept(c, cl) {
			_ = nc.Close()
			continue
		}
		go func() {
			defer s.running.Done()
			s.serveConn(c, cl)
		}()
	}
}

// refuseProtected answers and closes a connection that protected mode
// refuses: from another machine, to a server without a password whose
// protected mode is on (Redis's protected-mode). It reports whether it did.
func (s *Server) refuseProtected(nc net.Conn) bool {
	if !s.protectedMode.Load() || s.hasPass.Load() || isLoopback(nc.RemoteAddr()) {
		return false
	}
	s.rejected.Add(1)
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write([]byte(errProtected))
	_ = nc.Close()
	return true
}

const errProtected = "-DENIED sieve-server is running in protected mode: no password is set, so only " +
	"connections from the loopback interface are accepted. To accept this client, set a password " +
	"(-requirepass-file, SIEVE_REQUIREPASS, or CONFIG SET requirepass from a local client) or " +
	"turn protected mode off (-protected-mode=no, or CONFIG SET protected-mode no).\r\n"

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return !ok || ta.IP.IsLoopback()
}

// clientConn carries the client state from the listener to accept.
type clientConn struct {
	*guardConn
	cl *client
}

// Shutdown returns a channel closed when a client asks for SHUTDOWN.
func (s *Server) Shutdown() <-chan struct{} { return s.shutdown }

// Close stops listening, drops the clients and closes the DB (which
// syncs the WAL: every acknowledged write is on disk).
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeMetrics()
		close(s.stats.stop)
		s.connMu.Lock()
		s.done = true
		for c := range s.live {
			_ = c.nc.Close()
		}
		s.connMu.Unlock()
		if s.ln != nil {
			_ = s.ln.Close()
		}
		s.running.Wait() // commands in flight finish (their connections are closed)
		close(s.sweepStop)
		<-s.sweepDone
		s.ks.quiesce()
		s.closeErr = closeDB(s.db, s.cluster)
	})
	return s.closeErr
}

// accept admits a new connection (or refuses it past maxclients, with
// Redis's error) and registers it for Close.
func (s *Server) accept(c *respConn, cl *client) bool {
	if s.clients.Load() >= s.maxClient.Load() {
		s.rejected.Add(1)
		_, _ = cl.conn.guardConn.Conn.Write([]byte("-ERR max number of clients reached\r\n"))
		return false
	}
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.done {
		return false
	}
	if s.live == nil {
		s.live = make(map[*respConn]*client)
	}
	s.live[c] = cl
	s.running.Add(1) // under connMu, so that Close's Wait comes after
	s.clients.Add(1)
	s.conns.Add(1)
	return true
}

// forget unregisters a closed connection.
func (s *Server) forget(c *respConn) {
	s.connMu.Lock()
	delete(s.live, c)
	s.connMu.Unlock()
}

func (s *Server) closed(cl *client, err error) {
	s.clients.Add(-1)
	s.mon.remove(cl)
	s.ks.watch.unwatch(cl)
	var pe *protoError
	if errors.As(err, &pe) {
		s.protoErrs.Add(1)
	}
}

// reply is what a command writes: the connection plus the client.
type reply struct {
	*respConn
	cl *client
	s  *Server
}

func (r *reply) err(msg string) { r.WriteError(msg); r.cl.pending += int64(len(msg)) + 3 }
func (r *reply) ok()            { r.WriteString("OK") }
func (r *reply) bulk(b []byte)  { r.WriteBulk(b); r.cl.pending += int64(len(b)) + 16 }
func (r *reply) int(n int64)    { r.WriteInt64(n) }
func (r *reply) boolInt(b bool) { r.WriteInt(b2i(b)) }
func (r *reply) wrongArgs(name string) {
	r.err("ERR wrong number of arguments for '" + name + "' command")
}
func (r *reply) syntax()               { r.err("ERR syntax error") }
func (r *reply) notInt()               { r.err("ERR value is not an integer or out of range") }
func (r *reply) wrongType()            { r.err(errWrongTypeMsg) }
func (r *reply) status(st string)      { r.WriteString(st) }
func (r *reply) array(n int)           { r.WriteArray(n) }
func (r *reply) null()                 { r.WriteNull() }
func (r *reply) bulkString(str string) { r.WriteBulkString(str); r.cl.pending += int64(len(str)) + 16 }
func (r *reply) ints(bs []bool) {
	r.array(len(bs))
	for _, b := range bs {
		r.boolInt(b)
	}
}
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

const errWrongTypeMsg = "WRONGTYPE Operation against a key holding the wrong kind of value"

type command struct {
	name  string
	arity int // Redis's: n exact, -n at least n (the name included)
	fn    func(s *Server, r *reply, args [][]byte)
	write bool
	idx   int // its counters' index in serverState.cstats
}

var commands map[string]*command

func register(cs ...*command) {
	if commands == nil {
		commands = make(map[string]*command)
	}
	for _, c := range cs {
		c.idx = len(commands)
		if old, ok := commands[c.name]; ok {
			c.idx = old.idx
		}
		commands[c.name] = c
	}
}

// lookupCommand finds a command by its name in any case, without
// allocating.
func lookupCommand(name []byte) *command {
	var buf [24]byte
	if len(name) > len(buf) {
		return commands[strings.ToLower(string(name))]
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return commands[string(buf[:len(name)])]
}

// noAuthOK are the commands a client may send before AUTH.
var noAuthOK = map[string]bool{"auth": true, "hello": true, "quit": true}

func (s *Server) handle(cl *client, cmd Command) {
	r := &cl.r
	s.cmds[cl.id%cmdShards].n.Add(1)
	c := lookupCommand(cmd.Args[0])
	name := ""
	if c != nil {
		name = c.name
		cl.lastCmd.Store(&c.name)
	}
	defer func() {
		if p := recover(); p != nil {
			// A bug, not bad input: answer and keep serving.
			s.commitDeferred(r)
			r.err(fmt.Sprintf("ERR internal error in '%s': %v", name, p))
			s.afterCommand(r)
		}
	}()
	// CLIENT REPLY OFF/SKIP: the command runs alone (not deferred), and
	// its reply is dropped.
	skipThis, wasOff := cl.skipNext, cl.replyOff
	cl.skipNext = false
	quiet, mark := skipThis || wasOff, 0
	if quiet {
		s.commitDeferred(r)
		mark = len(r.out)
	}
	switch {
	case s.hasPass.Load() && !cl.authed.Load() && !noAuthOK[name]:
		s.commitDeferred(r)
		cl.multi.aborted = cl.multi.on
		if c != nil {
			s.reject(c, cl.id)
		}
		r.err("NOAUTH Authentication required.")
	case s.cluster != nil && c != nil && s.redirect(r, c, cmd.Args):
		cl.multi.aborted = cl.multi.on
	case cl.multi.on && !multiOK[name]:
		s.commitDeferred(r)
		s.queue(r, c, cmd.Args)
	case c == nil:
		s.commitDeferred(r)
		r.err(unknownCommand(cmd.Args))
	case (c.arity > 0 && len(cmd.Args) != c.arity) || (c.arity < 0 && len(cmd.Args) < -c.arity):
		s.commitDeferred(r)
		s.reject(c, cl.id)
		r.wrongArgs(c.name)
	case !quiet && s.deferrable(name, cmd.Args):
		s.runDeferred(r, c, cmd.Args)
	default:
		s.commitDeferred(r)
		s.run(r, c, cmd.Args)
	}
	if (skipThis || (wasOff && cl.replyOff)) && !cl.replyOn {
		r.out = r.out[:min(mark, len(r.out))]
	}
	cl.replyOn = false
	s.afterCommand(r)
}

// run runs a command now, counting it for INFO commandstats, and shows
// it to the monitors.
func (s *Server) run(r *reply, c *command, args [][]byte) {
	mark := len(r.out)
	t0 := time.Now()
	s.runCommand(r, c, args)
	s.record(c, r.cl.id, time.Since(t0), len(r.out) > mark && r.out[mark] == '-')
	if s.mon.n.Load() > 0 {
		s.mon.feed(r.cl, c, args)
	}
}

// runCommand runs c: on the replicated path in cluster mode, else after
// deleting its expired keys, keeping a sketch key's deadline.
func (s *Server) runCommand(r *reply, c *command, args [][]byte) {
	if s.clustered(c, args) {
		s.runClustered(r, c, args)
		return
	}
	s.expireKeys(c.name, args)
	if s.ks.tx == nil && s.needsDeadline(c, args) { // in EXEC, afterWrite adds the deadline to its batch
		s.runKeepingDeadline(r, c, args)
	} else {
		c.fn(s, r, args)
		s.afterWrite(c, args)
	}
}

// runDeferred runs a command of a pipeline's batch (deferred.go): its
// reply may come when the batch commits, so it counts as succeeded and
// its time is not measured.
func (s *Server) runDeferred(r *reply, c *command, args [][]byte) {
	switch c.name {
	case "set":
		cmdSetDeferred(s, r, args)
	case "pfadd":
		cmdPFAddDeferred(s, r, args)
	case "cf.add", "cf.addnx":
		cmdCFAddDeferred(s, r, args)
	case "cms.incrby", "topk.add", "topk.incrby":
		deferredCounterCmd(c.name)(s, r, args)
	default:
		cmdBFAddDeferred(s, r, args)
	}
	s.record(c, r.cl.id, 0, false)
	if s.mon.n.Load() > 0 {
		s.mon.feed(r.cl, c, args)
	}
}

// afterCommand enforces the output limit: replies pending beyond 64 KiB
// are flushed now (with a write deadline, so a client that does not read
// is dropped), and beyond the hard limit the client is dropped.
func (s *Server) afterCommand(r *reply) {
	cl := r.cl
	if len(r.PeekPipeline()) == 0 {
		s.commitDeferred(r) // before serveConn sends the replies
		cl.ds.prefetched = false
		if cl.pending > s.cfg.OutputLimit {
			r.out = r.out[:0]
			r.Close()
		}
		// serveConn flushes after the last command read: a client that
		// does not read its replies is dropped after WriteTimeout.
		_ = cl.conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		cl.pending = 0
		return
	}
	if cl.pending < 64<<10 && cl.ds.replies < 1024 {
		return
	}
	s.commitDeferred(r)
	if cl.pending < 64<<10 {
		return
	}
	if cl.pending > s.cfg.OutputLimit {
		r.out = r.out[:0]
		r.Close()
		return
	}
	_ = cl.conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if err := r.flush(); err != nil {
		r.Close()
	}
	_ = cl.conn.SetWriteDeadline(time.Time{})
	cl.pending = 0
}

// flushAndClose sends what is pending and closes the connection (a
// connection closed by a handler sends nothing more).
func (r *reply) flushAndClose() {
	_ = r.cl.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = r.flush()
	r.Close()
}

func unknownCommand(args [][]byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", clip(args[0], 128))
	for _, a := range args[1:] {
		if b.Len() > 256 {
			break
		}
		fmt.Fprintf(&b, "'%s' ", clip(a, 128))
	}
	return b.String()
}

func clip(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, string(b))
}

func lower(b []byte) string {
	for _, c := range b {
		if c >= 'A' && c <= 'Z' {
			return strings.ToLower(string(b))
		}
	}
	return string(b)
}

func eq(b []byte, s string) bool { return strings.EqualFold(string(b), s) }

// parseInt parses a Redis integer argument with Redis's string2ll rules:
// no spaces, no '+', no leading zeros ("0" alone), no "-0".
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 || b[0] == '+' {
		return 0, false
	}
	digits := b
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && len(b) > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

func (s *Server) checkPass(p []byte) bool {
	h := sha256.Sum256(p)
	want := s.pass.Load().hash
	return subtle.ConstantTimeCompare(h[:], want[:]) == 1
}

// authFailed counts a wrong password and slows the client down, more so
// the more wrong passwords the server has seen recently.
func (s *Server) authFailed() {
	n := s.authFails.Add(1)
	d := time.Duration(min(n, 20)) * 50 * time.Millisecond
	time.Sleep(d)
}

var errStoreWrongType = sketchcol.ErrWrongType
