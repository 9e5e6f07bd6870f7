// Command sieve-server serves a sieve DB over the Redis protocol (RESP2):
// strings, HyperLogLogs (Redis's bytes), and RedisBloom's Bloom and cuckoo
// filters, so redis-cli, Redis client libraries and redis-benchmark work
// unchanged. See cmd/sieve-server/README.md.
//
//	go run ./cmd/sieve-server -addr 127.0.0.1:6380 -dir ./sieve-data
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/logflag"
)

func main() { os.Exit(run(os.Args[1:])) }

// writeAllocProfile writes the allocation profile to path (-memprofile).
func writeAllocProfile(path string) {
	runtime.GC() // the profile covers allocations up to the last GC
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sieve-server: -memprofile: %v\n", err)
		return
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sieve-server: -memprofile: %v\n", err)
	}
	_ = f.Close()
}

// readPassword sets cfg.RequirePass from -requirepass-file or the
// environment variable SIEVE_REQUIREPASS when -requirepass is not given;
// giving more than one is an error.
func readPassword(cfg *Config, file string) error {
	env, hasEnv := os.LookupEnv("SIEVE_REQUIREPASS")
	n := 0
	for _, set := range []bool{cfg.RequirePass != "", file != "", hasEnv && env != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("the password is given more than once (-requirepass, -requirepass-file, SIEVE_REQUIREPASS): give one")
	}
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("-requirepass-file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if cfg.RequirePass = strings.TrimRight(line, "\r"); cfg.RequirePass == "" {
			return fmt.Errorf("-requirepass-file %s: the first line is empty", file)
		}
	case hasEnv && env != "":
		cfg.RequirePass = env
	}
	return nil
}

// checkFlags checks the numeric flags' ranges and sets ProtectedMode from
// -protected-mode.
func checkFlags(cfg *Config, protected string) error {
	for _, f := range []struct {
		name       string
		v, lo, hi  int
		acceptable string
	}{
		{"memtable-mib", cfg.MemTableMiB, 0, 4096, "0 (the engine's default) to 4096"},
		{"l0-compaction-trigger", cfg.L0Trigger, 0, 32, "0 (the engine's default) to 32"},
		{"sketch-page-cache-mib", cfg.PageCacheMiB, 0, 1 << 20, "0 (off) to 1048576"},
	} {
		if f.v < f.lo || f.v > f.hi {
			return fmt.Errorf("-%s %d: want %s", f.name, f.v, f.acceptable)
		}
	}
	switch protected {
	case "yes":
		cfg.ProtectedMode = true
	case "no":
		cfg.ProtectedMode = false
	default:
		return fmt.Errorf("-protected-mode %q: want yes or no", protected)
	}
	return nil
}

func run(argv []string) int {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("sieve-server", flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "address to listen on (host:port)")
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "database directory (created if missing)")
	fs.StringVar(&cfg.RequirePass, "requirepass", "", "password clients must AUTH with (default: none; visible in ps: prefer -requirepass-file or SIEVE_REQUIREPASS)")
	passFile := fs.String("requirepass-file", "", "read the password from this file (its first line)")
	protected := fs.String("protected-mode", "yes", "yes: refuse clients from other machines while no password is set")
	fs.IntVar(&cfg.MaxClients, "maxclients", cfg.MaxClients, "maximum number of connected clients")
	fs.BoolVar(&cfg.Sync, "sync", false, "fsync every write before acknowledging it")
	fs.DurationVar(&cfg.IdleTimeout, "timeout", 0, "close connections idle this long (0: never)")
	fs.Int64Var(&cfg.MaxBulkLen, "proto-max-bulk-len", cfg.MaxBulkLen, "maximum length of one request argument, bytes")
	fs.Int64Var(&cfg.MaxArgs, "max-args", cfg.MaxArgs, "maximum arguments of one command")
	fs.Int64Var(&cfg.MaxInline, "max-inline", cfg.MaxInline, "maximum length of an inline command line, bytes")
	fs.Int64Var(&cfg.OutputLimit, "output-limit", cfg.OutputLimit, "a client with more unread reply bytes than this is dropped")
	fs.BoolVar(&cfg.BatchPipeline, "batch-pipeline", cfg.BatchPipeline, "write the SETs, PFADDs, BF.ADDs, CF.ADDs, CMS.INCRBYs and TOPK.ADDs of one pipeline as one batch")
	fs.IntVar(&cfg.MemTableMiB, "memtable-mib", cfg.MemTableMiB, "memtable size, MiB (0: the engine's default, 32)")
	fs.IntVar(&cfg.L0Trigger, "l0-compaction-trigger", cfg.L0Trigger, "L0 tables that trigger a compaction (0: the engine's default, 4)")
	fs.IntVar(&cfg.PageCacheMiB, "sketch-page-cache-mib", cfg.PageCacheMiB, "memory for the pages of paged sketches (Bloom filters) that commands read, MiB (0: off)")
	clusterFlags(fs, &cfg)
	memLimit := fs.Int("memory-limit-mib", 768, "soft limit of the Go heap, MiB: the collector works harder near it (0: none; GOMEMLIMIT overrides)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memprofile := fs.String("memprofile", "", "write a profile of the run's allocations to this file at shutdown")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (host:port; default: off)")
	logFormat := fs.String("log-format", "text", logflag.FormatUsage)
	logLevel := fs.String("log-level", "info", logflag.LevelUsage)
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	for _, check := range []func() error{
		func() error { return checkFlags(&cfg, *protected) },
		func() error { return readPassword(&cfg, *passFile) },
		func() (err error) { cfg.Logger, err = logflag.New(os.Stderr, *logFormat, *logLevel); return err },
	} {
		if err := check(); err != nil {
			fmt.Fprintf(os.Stderr, "sieve-server: %v\n", err)
			return 2
		}
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "sieve-server: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 4096 // before the DB's goroutines start allocating
		defer writeAllocProfile(*memprofile)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "sieve-server: %v\n", err)
		return 1
	}
	s, err := Open(cfg)
	if err != nil {
		if errors.Is(err, sieve.ErrLocked) {
			fmt.Fprintf(os.Stderr, "sieve-server: directory %s is in use by another process: %v\n", cfg.Dir, err)
		} else {
			fmt.Fprintf(os.Stderr, "sieve-server: opening %s: %v\n", cfg.Dir, err)
		}
		return 1
	}
	metricsAt, err := listen(s, cfg, *metricsAddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sieve-server: %v\n", err)
		_ = s.Close()
		return 1
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
	}
	// A soft limit on the heap: near it the collector runs more often
	// rather than let the heap pass it.
	if os.Getenv("GOMEMLIMIT") == "" && *memLimit > 0 {
		debug.SetMemoryLimit(int64(*memLimit) << 20)
	}
	return serveUntilStopped(s, cfg, metricsAt)
}

// clusterFlags defines the cluster mode's flags.
func clusterFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.RaftID, "raft-id", "", "cluster mode: this node's raft ID (one of -raft-peers)")
	fs.StringVar(&cfg.RaftPeers, "raft-peers", "", "cluster mode: every node as ID=HOST:PORT@RAFTPORT, comma-separated (client and raft ports); the same list on every node")
	fs.StringVar(&cfg.RaftDir, "raft-dir", "", "cluster mode: the raft node's directory (default: DIR/raft)")
	fs.BoolVar(&cfg.RaftJoin, "raft-join", false, "cluster mode: join an existing cluster (added with SIEVE.RAFT ADD on its leader) instead of bootstrapping -raft-peers")
}

// listen starts listening for clients on cfg.Addr and, with metricsAddr,
// serves /metrics there; it returns the metrics address ("" without).
func listen(s *Server, cfg Config, metricsAddr string) (string, error) {
	if err := s.Listen(); err != nil {
		return "", fmt.Errorf("cannot listen on %s: %w", cfg.Addr, err)
	}
	if metricsAddr == "" {
		return "", nil
	}
	at, err := s.ServeMetrics(metricsAddr)
	if err != nil {
		return "", fmt.Errorf("-metrics-addr: cannot listen on %s: %w", metricsAddr, err)
	}
	return at, nil
}

// serveUntilStopped serves until a signal, SHUTDOWN or a serving error,
// then closes the server; it returns the process's exit code.
func serveUntilStopped(s *Server, cfg Config, metricsAt string) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	mode := "off (acknowledged writes may be lost on a crash, never on a clean shutdown)"
	if cfg.Sync {
		mode = "on (every acknowledged write is fsynced)"
	}
	fmt.Printf("sieve-server listening on %s (dir %s, sync %s)\n", s.Addr(), cfg.Dir, mode)
	if metricsAt != "" {
		fmt.Printf("sieve-server metrics on http://%s/metrics\n", metricsAt)
	}
	s.log.Info("listening", "addr", s.Addr(), "dir", cfg.Dir, "sync", cfg.Sync, "metrics", metricsAt)
	code := 0
	select {
	case sig := <-sigs:
		fmt.Fprintf(os.Stderr, "sieve-server: %v: shutting down\n", sig)
	case <-s.Shutdown():
		fmt.Fprintln(os.Stderr, "sieve-server: SHUTDOWN: shutting down")
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "sieve-server: serving: %v\n", err)
			code = 1
		}
	}
	t := time.Now()
	if err := s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "sieve-server: closing the database: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "sieve-server: closed in %v\n", time.Since(t).Round(time.Millisecond))
	return code
}
