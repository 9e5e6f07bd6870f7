package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Connection and admin commands.

// redisVersion is the Redis version the server answers as (the one whose
// replies it follows and whose test suite it passes).
const redisVersion = "7.0.15"

func init() {
	register(
		&command{name: "ping", arity: -1, fn: cmdPing},
		&command{name: "echo", arity: 2, fn: cmdEcho},
		&command{name: "hello", arity: -1, fn: cmdHello},
		&command{name: "auth", arity: -2, fn: cmdAuth},
		&command{name: "select", arity: 2, fn: cmdSelect},
		&command{name: "client", arity: -2, fn: cmdClient},
		&command{name: "command", arity: -1, fn: cmdCommand},
		&command{name: "info", arity: -1, fn: cmdInfo},
		&command{name: "config", arity: -2, fn: cmdConfig},
		&command{name: "function", arity: -2, fn: cmdFunction},
		&command{name: "debug", arity: -2, fn: cmdDebug},
		&command{name: "quit", arity: -1, fn: cmdQuit},
		&command{name: "shutdown", arity: -1, fn: cmdShutdown},
		&command{name: "wait", arity: 3, fn: func(s *Server, r *reply, a [][]byte) { r.int(0) }},
		&command{name: "save", arity: 1, fn: cmdSave},
		&command{name: "bgsave", arity: -1, fn: cmdSave},
		&command{name: "lastsave", arity: 1, fn: func(s *Server, r *reply, a [][]byte) { r.int(time.Now().Unix()) }},
		&command{name: "time", arity: 1, fn: cmdTime},
	)
}

func cmdPing(s *Server, r *reply, args [][]byte) {
	switch len(args) {
	case 1:
		r.status("PONG")
	case 2:
		r.bulk(args[1])
	default:
		r.wrongArgs("ping")
	}
}

func cmdEcho(s *Server, r *reply, args [][]byte) { r.bulk(args[1]) }

func cmdHello(s *Server, r *reply, args [][]byte) {
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			r.err("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 {
			r.err("NOPROTO sieve-server speaks RESP2 only")
			return
		}
	}
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "auth") && i+2 < len(args):
			if !s.auth(r, args[i+1], args[i+2]) {
				return
			}
			i += 2
		case eq(args[i], "setname") && i+1 < len(args):
			r.cl.setName(string(args[i+1]))
			i++
		default:
			r.err("ERR Syntax error in HELLO option '" + clip(args[i], 64) + "'")
			return
		}
	}
	if s.hasPass.Load() && !r.cl.authed.Load() {
		r.err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	r.array(14)
	r.bulkString("server")
	r.bulkString("redis")
	r.bulkString("version")
	r.bulkString(redisVersion)
	r.bulkString("proto")
	r.int(2)
	r.bulkString("id")
	r.int(r.cl.id)
	r.bulkString("mode")
	r.bulkString("standalone")
	r.bulkString("role")
	r.bulkString("master")
	r.bulkString("modules")
	r.array(0)
}

// auth checks a password (user must be "default") and answers errors;
// true when the client is now authenticated.
func (s *Server) auth(r *reply, user, pass []byte) bool {
	if !s.hasPass.Load() {
		r.err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return false
	}
	good := s.checkPass(pass)
	if user != nil && string(user) != "default" {
		good = false
	}
	if !good {
		s.authFailed()
		r.err("WRONGPASS invalid username-password pair or user is disabled.")
		return false
	}
	r.cl.authed.Store(true)
	return true
}

func cmdAuth(s *Server, r *reply, args [][]byte) {
	var ok bool
	switch len(args) {
	case 2:
		ok = s.auth(r, nil, args[1])
	case 3:
		ok = s.auth(r, args[1], args[2])
	default:
		r.syntax()
		return
	}
	if ok {
		r.ok()
	}
}

func cmdSelect(s *Server, r *reply, args [][]byte) {
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		r.notInt()
	case n != 0:
		r.err("ERR DB index is out of range (sieve-server has one database, 0)")
	default:
		r.ok()
	}
}

func sortedCommands() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func cmdInfo(s *Server, r *reply, args [][]byte) {
	ib := newInfoBuilder(args[1:])
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ib.section("server", s.infoServer()...)
	ib.section("clients", s.infoClients()...)
	ib.section("memory", infoMemory(&ms)...)
	ib.section("persistence", s.infoPersistence()...)
	ib.section("stats", s.infoStats()...)
	ib.section("replication", s.infoReplication()...)
	ib.section("cpu", infoCPU()...)
	if ib.want["commandstats"] || ib.want["all"] || ib.want["everything"] {
		ib.section("commandstats", s.infoCommandStats()...)
	}
	if ib.wants("keyspace") {
		ib.section("keyspace", s.infoKeyspace()...)
	}
	if ib.wants("sieve") {
		ib.section("sieve", s.infoSieve()...)
	}
	r.bulkString(ib.b.String())
}

// infoBuilder writes the INFO sections asked for.
type infoBuilder struct {
	want map[string]bool
	all  bool
	b    strings.Builder
}

func newInfoBuilder(args [][]byte) *infoBuilder {
	ib := &infoBuilder{want: map[string]bool{}}
	for _, a := range args {
		ib.want[lower(a)] = true
	}
	ib.all = len(ib.want) == 0 || ib.want["all"] || ib.want["everything"] || ib.want["default"]
	return ib
}

// wants reports whether the section name was asked for.
func (ib *infoBuilder) wants(name string) bool { return ib.all || ib.want[name] }

// section writes "# Name" and the lines, if the section was asked for.
func (ib *infoBuilder) section(name string, lines ...string) {
	if !ib.wants(name) {
		return
	}
	if ib.b.Len() > 0 {
		ib.b.WriteString("\r\n")
	}
	title := strings.ToUpper(name[:1]) + name[1:]
	if name == "cpu" {
		title = "CPU"
	}
	ib.b.WriteString("# " + title + "\r\n")
	for _, l := range lines {
		ib.b.WriteString(l + "\r\n")
	}
}

func (s *Server) infoServer() []string {
	up := int64(time.Since(s.started).Seconds())
	return []string{
		"redis_version:" + redisVersion,
		"sieve_server:1",
		"redis_mode:standalone",
		"os:" + runtime.GOOS,
		"arch_bits:64",
		"go_version:" + runtime.Version(),
		"process_id:" + strconv.Itoa(os.Getpid()),
		"tcp_port:" + portOf(s.Addr()),
		"uptime_in_seconds:" + strconv.FormatInt(up, 10),
		"uptime_in_days:" + strconv.FormatInt(up/86400, 10),
	}
}

func (s *Server) infoClients() []string {
	return []string{
		"connected_clients:" + strconv.FormatInt(s.clients.Load(), 10),
		"maxclients:" + strconv.FormatInt(s.maxClient.Load(), 10),
		"rejected_connections:" + strconv.FormatInt(s.rejected.Load(), 10),
	}
}

func infoMemory(ms *runtime.MemStats) []string {
	return []string{
		"used_memory:" + strconv.FormatUint(ms.HeapAlloc, 10),
		"used_memory_rss:" + strconv.FormatUint(ms.Sys, 10),
		"mem_allocator:go",
	}
}

func (s *Server) infoPersistence() []string {
	syncMode := "off"
	if s.cfg.Sync {
		syncMode = "on"
	}
	// Redis's fields, as sieve has them: no snapshot ever runs in the
	// background (rdb_bgsave_in_progress 0, which clients such as RLTest
	// wait on), and the WAL is an append-only log always on (aof_enabled
	// 1, as CONFIG GET appendonly says), never rewritten.
	return []string{
		"loading:0",
		"rdb_changes_since_last_save:0",
		"rdb_bgsave_in_progress:0",
		"rdb_last_save_time:" + strconv.FormatInt(time.Now().Unix(), 10),
		"rdb_last_bgsave_status:ok",
		"aof_enabled:1",
		"aof_rewrite_in_progress:0",
		"aof_rewrite_scheduled:0",
		"aof_last_bgrewrite_status:ok",
		"aof_last_write_status:ok",
		"sieve_durable:1",
		"sieve_sync:" + syncMode,
		"sieve_dir:" + s.cfg.Dir,
	}
}

func (s *Server) infoStats() []string {
	hits, misses := s.hitsMisses()
	return []string{
		"total_connections_received:" + strconv.FormatInt(s.conns.Load(), 10),
		"total_commands_processed:" + strconv.FormatInt(s.commands(), 10),
		"instantaneous_ops_per_sec:" + strconv.FormatInt(s.opsPerSec(), 10),
		"keyspace_hits:" + strconv.FormatInt(hits, 10),
		"keyspace_misses:" + strconv.FormatInt(misses, 10),
		"expired_keys:" + strconv.FormatInt(s.ks.expired.Load(), 10),
		"evicted_keys:0",
		"rejected_connections:" + strconv.FormatInt(s.rejected.Load(), 10),
		"protocol_errors:" + strconv.FormatInt(s.protoErrs.Load(), 10),
		"auth_failures:" + strconv.FormatInt(s.authFails.Load(), 10),
	}
}

func (s *Server) infoKeyspace() []string {
	n, err := s.dbsize()
	lines := []string{}
	if err == nil && n > 0 {
		ne, avg := s.ks.exp.stats()
		lines = append(lines, fmt.Sprintf("db0:keys=%d,expires=%d,avg_ttl=%d", n, ne, avg))
	}
	return lines
}

func (s *Server) infoSieve() []string {
	m := s.ks.cf.Metrics() // the sketch family: filters, cache, levels
	d := s.db.Metrics()    // the DB: WAL, memtables, flushes, compactions
	f := m.Filter
	lines := []string{
		fmt.Sprintf("filter_checks:%d", f.Checks),
		fmt.Sprintf("filter_negatives:%d", f.Negatives),
		fmt.Sprintf("filter_false_positives:%d", f.FalsePositives),
		fmt.Sprintf("filter_fpr:%.6f", f.FalsePositiveRate()),
		fmt.Sprintf("block_cache_hits:%d", m.BlockCache.Hits),
		fmt.Sprintf("block_cache_misses:%d", m.BlockCache.Misses),
		fmt.Sprintf("wal_bytes:%d", d.WAL.Bytes),
		fmt.Sprintf("wal_syncs:%d", d.WAL.Syncs),
		fmt.Sprintf("memtable_size:%d", d.MemTable.Size),
		fmt.Sprintf("flushes:%d", d.Flush.Count),
		fmt.Sprintf("compactions:%d", d.Compaction.Count),
		fmt.Sprintf("write_stalls:%d", d.Stall.Count),
		fmt.Sprintf("write_stall_ms:%d", d.Stall.Duration.Milliseconds()),
		fmt.Sprintf("write_slowdowns:%d", d.Stall.Slowdowns),
	}
	for i, l := range m.Levels {
		lines = append(lines, fmt.Sprintf("level%d:tables=%d,bytes=%d", i, l.NumFiles, l.Size))
	}
	return lines
}

func portOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[i+1:]
	}
	return addr
}

// configParam is one CONFIG GET/SET parameter.
type configParam struct {
	get func(s *Server) string
	set func(s *Server, v string) error // nil: read-only
	// hidden: CONFIG GET shows it only when asked for by name (Redis's
	// HIDDEN_CONFIG)
	hidden bool
}

// constParam is a read-only parameter whose value says what sieve-server
// does (no memory limit, no eviction, no replication, no daemon).
func constParam(v string) configParam { return configParam{get: func(*Server) string { return v }} }

var configParams = map[string]configParam{
	"proto-max-bulk-len": {
		get: func(s *Server) string { return strconv.FormatInt(s.lim.maxBulk.Load(), 10) },
		set: func(s *Server, v string) error {
			n, err := parseMem(v)
			if err != nil || n < 1024*1024 {
				return fmt.Errorf("argument must be a memory value of at least 1mb")
			}
			s.lim.maxBulk.Store(n)
			return nil
		},
	},
	"maxclients": {
		get: func(s *Server) string { return strconv.FormatInt(s.maxClient.Load(), 10) },
		set: func(s *Server, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return fmt.Errorf("argument must be a positive integer")
			}
			s.maxClient.Store(n)
			return nil
		},
	},
	"timeout": {
		get: func(s *Server) string { return strconv.FormatInt(s.idle.Load()/int64(time.Second), 10) },
		set: func(s *Server, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			s.idle.Store(n * int64(time.Second))
			return nil
		},
	},
	"requirepass": {
		get: func(s *Server) string { return s.requirePass() },
		set: func(s *Server, v string) error { s.setPass(v); return nil },
	},
	"protected-mode": {
		get: func(s *Server) string { return map[bool]string{true: "yes", false: "no"}[s.protectedMode.Load()] },
		set: func(s *Server, v string) error {
			switch strings.ToLower(v) {
			case "yes":
				s.protectedMode.Store(true)
			case "no":
				s.protectedMode.Store(false)
			default:
				return fmt.Errorf("argument must be 'yes' or 'no'")
			}
			return nil
		},
	},
	"hll-sparse-max-bytes": {
		get: func(s *Server) string { return "3000" },
		set: func(s *Server, v string) error {
			if v != "3000" {
				return fmt.Errorf("sieve-server's HyperLogLogs use the fixed sparse limit 3000 (their canonical encoding depends on it)")
			}
			return nil
		},
	},
	"save": {get: func(s *Server) string { return "" }},
	// sieve always writes a log (its WAL) before it answers: "yes". With
	// -sync every write is fsynced before its reply ("always"); without,
	// the WAL reaches the OS within 2 ms and is fsynced every 1 MiB of log
	// and at rotation, so the OS decides when the rest reaches the disk
	// (Redis's "no"). Neither can be changed at run time.
	"appendonly":                {get: func(s *Server) string { return "yes" }},
	"appendfsync":               {get: func(s *Server) string { return map[bool]string{true: "always", false: "no"}[s.cfg.Sync] }},
	"databases":                 {get: func(s *Server) string { return "1" }},
	"port":                      {get: func(s *Server) string { return portOf(s.Addr()) }},
	"bind":                      {get: func(s *Server) string { return s.Addr() }},
	"dir":                       {get: func(s *Server) string { return s.cfg.Dir }},
	"client-query-buffer-limit": {get: func(s *Server) string { return strconv.FormatInt(s.lim.maxBulk.Load(), 10) }},
	"client-output-buffer-limit": {get: func(s *Server) string {
		return fmt.Sprintf("normal %d %d 0", s.cfg.OutputLimit, s.cfg.OutputLimit)
	}},
	"daemonize":         constParam("no"),
	"maxmemory":         constParam("0"), // no limit is enforced (the engine's caches have their own sizes)
	"maxmemory-clients": constParam("0"),
	"maxmemory-policy":  constParam("noeviction"),
	"replicaof":         constParam(""),
	"slaveof":           constParam(""),
	"key-load-delay":    {get: func(*Server) string { return "0" }, hidden: true},
}

func parseMem(v string) (int64, error) {
	v = strings.ToLower(v)
	mul := int64(1)
	for _, u := range []struct {
		s string
		m int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(v, u.s) {
			mul, v = u.m, strings.TrimSuffix(v, u.s)
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n * mul, err
}

func cmdConfig(s *Server, r *reply, args [][]byte) {
	switch sub := lower(args[1]); {
	case sub == "get" && len(args) >= 3:
		var out []string
		names := make([]string, 0, len(configParams))
		for n := range configParams {
			names = append(names, n)
		}
		sort.Strings(names)
		seen := map[string]bool{}
		for _, pat := range args[2:] {
			for _, n := range names {
				if configParams[n].hidden && n != strings.ToLower(string(pat)) {
					continue
				}
				if !seen[n] && globMatch([]byte(strings.ToLower(string(pat))), []byte(n), true) {
					seen[n] = true
					out = append(out, n, configParams[n].get(s))
				}
			}
		}
		r.array(len(out))
		for _, o := range out {
			r.bulkString(o)
		}
	case sub == "set" && len(args) >= 4 && len(args)%2 == 0:
		if !configSetCheck(s, r, args[2:]) {
			return
		}
		for i := 2; i < len(args); i += 2 {
			name := lower(args[i])
			p := configParams[name]
			if p.set == nil {
				continue // its own value (configSetCheck)
			}
			if err := p.set(s, string(args[i+1])); err != nil {
				r.err("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error())
				return
			}
		}
		r.ok()
	case sub == "resetstat" && len(args) == 2:
		s.resetStats()
		r.ok()
	case sub == "rewrite" && len(args) == 2:
		r.err("ERR sieve-server has no config file to rewrite (its configuration is its flags)")
	default:
		r.err("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1], 64) + "'. Try CONFIG HELP.")
	}
}

// configSetCheck checks CONFIG SET's name-value pairs before any is
// applied, as Redis does: unknown names, a name given twice, and a
// read-only parameter given another value than its own (its own is
// accepted: nothing changes).
func configSetCheck(s *Server, r *reply, pairs [][]byte) bool {
	seen := map[string]bool{}
	for i := 0; i < len(pairs); i += 2 {
		name := lower(pairs[i])
		switch _, ok := configParams[name]; {
		case !ok:
			r.err("ERR Unknown option or number of arguments for CONFIG SET - '" + clip(pairs[i], 64) + "'")
			return false
		case seen[name]:
			r.err("ERR CONFIG SET failed (possibly related to argument '" + name + "') - duplicate parameter")
			return false
		}
		seen[name] = true
	}
	for i := 0; i < len(pairs); i += 2 {
		name := lower(pairs[i])
		if p := configParams[name]; p.set == nil && string(pairs[i+1]) != p.get(s) {
			r.err("ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config")
			return false
		}
	}
	return true
}

func cmdFunction(s *Server, r *reply, args [][]byte) {
	switch lower(args[1]) {
	case "flush":
		r.ok() // there are no functions
	case "list":
		r.array(0)
	default:
		r.err("ERR sieve-server does not support functions (FUNCTION " + strings.ToUpper(clip(args[1], 32)) + ")")
	}
}

// cmdDebug answers DEBUG RELOAD only. Redis saves its dataset and loads
// it back; sieve's dataset is always on disk (the WAL and the tables), so
// RELOAD flushes the memtables and drops the sketch Store's caches, after
// which every command reads what the tables hold, as after a restart.
func cmdDebug(s *Server, r *reply, args [][]byte) {
	if !eq(args[1], "reload") || len(args) > 2 {
		r.err("ERR DEBUG is not supported by sieve-server (except DEBUG RELOAD)")
		return
	}
	defer s.ks.lockAll()()
	if err := s.db.Flush(); err != nil {
		r.storeErr(err)
		return
	}
	s.ks.st.ForgetAllCached()
	r.ok()
}

func cmdQuit(s *Server, r *reply, args [][]byte) {
	r.ok()
	r.flushAndClose()
}

func cmdShutdown(s *Server, r *reply, args [][]byte) {
	for _, a := range args[1:] {
		if !eq(a, "nosave") && !eq(a, "save") && !eq(a, "now") && !eq(a, "force") {
			r.syntax()
			return
		}
	}
	// Redis closes the connection without a reply on success.
	r.flushAndClose()
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

func cmdSave(s *Server, r *reply, args [][]byte) {
	// Everything is on disk once the memtables are flushed.
	if err := s.db.Flush(); err != nil {
		r.storeErr(err)
		return
	}
	if lower(args[0]) == "bgsave" {
		r.status("Background saving started")
		return
	}
	r.ok()
}

func cmdTime(s *Server, r *reply, args [][]byte) {
	now := time.Now()
	r.array(2)
	r.bulkString(strconv.FormatInt(now.Unix(), 10))
	r.bulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}
