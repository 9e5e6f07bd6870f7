package main

import (
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// FuzzTransactions drives two clients through MULTI, EXEC, DISCARD,
// WATCH, UNWATCH and writes in an order the fuzzer chooses, on
// sieve-server and on redis-server at once, and requires the same reply
// to every command (the seeds run in every go test). Each input byte is
// one command (fuzzTxCommand); its top bit chooses the client.
func FuzzTransactions(f *testing.F) {
	for _, s := range []string{
		"\x00\x05\x06\x01",             // MULTI SET INCR EXEC
		"\x03\x83\x00\x05\x01",         // WATCH, other client writes, MULTI SET EXEC
		"\x03\x00\x05\x01\x85\x00\x01", // WATCH MULTI SET EXEC, another MULTI ... EXEC
		"\x00\x0b\x05\x01",             // MULTI unknown SET EXEC: EXECABORT
		"\x00\x0c\x01\x02\x02",         // MULTI wrong arity EXEC, DISCARD twice
		"\x00\x00\x03\x05\x01",         // nested MULTI, WATCH inside MULTI
		"\x03\x0d\x00\x05\x01",         // WATCH, own FLUSHALL, MULTI SET EXEC
		"\x04\x03\x04\x05\x0e\x09",     // UNWATCH, PFADD, PFCOUNT, GET
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64 {
			data = data[:64]
		}
		sAddr, rAddr := fuzzTxServers(t)
		sc, rc := fuzzTxClients(sAddr), fuzzTxClients(rAddr)
		defer closeAll(sc[:], rc[:])
		do(sc[0], "flushall")
		do(rc[0], "flushall")
		for i, b := range data {
			args := fuzzTxCommand(b)
			who := int(b >> 7)
			got, want := do(sc[who], args...), do(rc[who], args...)
			if got != want {
				t.Fatalf("command %d (client %d) %v: sieve %q, redis %q (input %q)", i, who, args, got, want, data)
			}
		}
	})
}

// fuzzTxCommand maps a byte to a command: bits 0-3 the command, 4-5 the
// key, 6 its namespace (HyperLogLogs live in "h"; APPEND writes only "k":
// an HLL with bytes appended is a corner of Redis's HLL parser, not of
// transactions).
func fuzzTxCommand(b byte) []any {
	n := (b >> 4) & 3
	key := fmt.Sprint("k", n)
	if b&0x40 != 0 {
		key = fmt.Sprint("h", n)
	}
	hkey := fmt.Sprint("h", n)
	switch b & 0x0f {
	case 0:
		return []any{"multi"}
	case 1:
		return []any{"exec"}
	case 2:
		return []any{"discard"}
	case 3:
		return []any{"watch", key}
	case 4:
		return []any{"unwatch"}
	case 5:
		return []any{"set", key, "v"}
	case 6:
		return []any{"incr", key}
	case 7:
		return []any{"del", key}
	case 8:
		return []any{"append", fmt.Sprint("k", n), "x"}
	case 9:
		return []any{"get", key}
	case 10:
		return []any{"pfadd", hkey, "e"}
	case 11:
		return []any{"nosuchcommand", key}
	case 12:
		return []any{"get"} // wrong arity
	case 13:
		return []any{"flushall"}
	case 14:
		return []any{"pfcount", hkey}
	}
	return []any{"get", hkey} // an HLL's bytes, Redis's cache bytes included
}

var (
	fuzzTxOnce  sync.Once
	fuzzTxAddrs [2]string
)

// fuzzTxServers starts one sieve-server and one redis-server for the
// whole fuzzing run (they outlive the test that started them).
func fuzzTxServers(t *testing.T) (string, string) {
	fuzzTxOnce.Do(func() {
		s, err := Open(Config{Addr: "127.0.0.1:0", Dir: t.TempDir() + "-fuzz", MaxClients: 100, MaxBulkLen: 1 << 20, MaxArgs: 64, MaxInline: 1 << 12, OutputLimit: 1 << 20, WriteTimeout: 10e9, BatchPipeline: true})
		if err == nil {
			err = s.Listen()
		}
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.Serve() }()
		fuzzTxAddrs = [2]string{s.Addr(), startRedisDetached(t)}
	})
	if fuzzTxAddrs[1] == "" {
		t.Skip("no redis-server")
	}
	return fuzzTxAddrs[0], fuzzTxAddrs[1]
}

func fuzzTxClients(addr string) [2]*redis.Client {
	var cs [2]*redis.Client
	for i := range cs {
		cs[i] = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
	}
	return cs
}

func closeAll(groups ...[]*redis.Client) {
	for _, g := range groups {
		for _, c := range g {
			_ = c.Close()
		}
	}
}
