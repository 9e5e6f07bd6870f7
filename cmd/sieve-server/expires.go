package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sievedb/sieve"
)

// Key expiry, as Redis does it, over the engine's.
//
// A key with a time to live has its value (a string, an HLL, a sketch's
// header) written with sieve's PutWithExpiry, so every read of the engine
// hides it from its deadline on and compaction removes it. The server
// also keeps every deadline in memory (expTable, Redis's expires dict),
// persisted in the column family "server-expires" (key → deadline, unix
// milliseconds, 8 bytes big-endian) in the same batch as the write and
// loaded at start, for what the engine alone cannot do:
//
//   - A command on a key whose deadline has come deletes it first, pages
//     and cache bytes included (Redis's expireIfNeeded), so that a new
//     sketch at the key never meets its predecessor's pages, and a sweeper
//     deletes the expired keys nobody touches (Redis's active expiry).
//   - A write to a key with a deadline keeps it (PFADD, BF.ADD, INCR,
//     APPEND... as in Redis): the engine's merge operands do not take a
//     value's deadline (sieve.PutWithExpiry's documentation), so after a
//     sketch command on such a key the server writes the key's merged
//     value again with the deadline (keepDeadline).
//
// The table is read under its own mutex (a leaf) and written holding the
// key's stripe lock; nexp makes the common case, no deadline anywhere,
// one atomic load.

const expiresCFName = "server-expires"

type expTable struct {
	mu   sync.Mutex
	m    map[string]int64 // unix milliseconds
	nexp atomic.Int64
}

// clock is the time expiry is judged by, the engine's too (Open sets
// sieve.Options.Now to it); a test sets its own.
var clock = time.Now

func nowMs() int64 { return clock().UnixMilli() }

// get returns key's deadline (0: none).
func (e *expTable) get(key []byte) int64 {
	if e.nexp.Load() == 0 {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m[string(key)]
}

// set records key's deadline (0: none).
func (e *expTable) set(key []byte, d int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]int64{}
	}
	if d == 0 {
		delete(e.m, string(key))
	} else {
		e.m[string(key)] = d
	}
	e.nexp.Store(int64(len(e.m)))
}

// clear forgets every deadline (FLUSHALL).
func (e *expTable) clear() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m = nil
	e.nexp.Store(0)
}

// due returns up to n keys whose deadline has come.
func (e *expTable) due(n int) [][]byte {
	if e.nexp.Load() == 0 {
		return nil
	}
	now := nowMs()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out [][]byte
	for k, d := range e.m {
		if d <= now {
			out = append(out, []byte(k))
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// stats returns the number of keys with a deadline and their average
// remaining time to live in milliseconds (INFO keyspace).
func (e *expTable) stats() (n, avgTTL int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := nowMs()
	var sum int64
	for _, d := range e.m {
		sum += max(d-now, 0)
	}
	if len(e.m) > 0 {
		avgTTL = sum / int64(len(e.m))
	}
	return int64(len(e.m)), avgTTL
}

// loadExpires reads the persisted deadlines into the table.
func (ks *keyspace) loadExpires() error {
	it := ks.expCF.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		if len(it.Value()) == 8 {
			ks.exp.set(it.Key(), int64(binary.BigEndian.Uint64(it.Value())))
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("loading %s: %w", expiresCFName, err)
	}
	return nil
}

// deadline returns key's deadline as the command sees it (a
// transaction's pending one first).
func (ks *keyspace) deadline(key []byte) int64 {
	if ks.tx != nil {
		if d, ok := ks.tx.exp[string(key)]; ok {
			return d
		}
	}
	return ks.exp.get(key)
}

// expiredNow reports whether key has a deadline that has come.
func (ks *keyspace) expiredNow(key []byte) bool {
	d := ks.deadline(key)
	return d != 0 && d <= nowMs()
}

// putDeadline adds to b the persisted record of key's deadline (0: none)
// and notes it for noteDeadline.
func (ks *keyspace) putDeadline(b *sieve.Batch, key []byte, d int64) {
	if d == 0 {
		if ks.deadline(key) != 0 {
			_ = b.DeleteCF(ks.expCF, key)
		}
		return
	}
	_ = b.PutCF(ks.expCF, key, binary.BigEndian.AppendUint64(nil, uint64(d)))
}

// noteDeadline records key's deadline in memory once its batch is
// applied (in a transaction: once EXEC's is).
func (ks *keyspace) noteDeadline(key []byte, d int64) {
	if ks.tx != nil {
		if ks.tx.exp == nil {
			ks.tx.exp = map[string]int64{}
		}
		ks.tx.exp[string(key)] = d
		return
	}
	ks.exp.set(key, d)
}

// applyTxExpires publishes a committed transaction's deadlines.
func (ks *keyspace) applyTxExpires(t *txn) {
	if t.flushed {
		ks.exp.clear()
	}
	for k, d := range t.exp {
		ks.exp.set([]byte(k), d)
	}
}

// writeValue writes key's stored value v (a string's tagged bytes, an
// HLL, a sketch header) with deadline d (0: none) and records d.
// REQUIRES: key's lock.
func (ks *keyspace) writeValue(key, v []byte, d int64) error {
	b := ks.newBatch()
	if d == 0 {
		_ = b.PutCF(ks.cf, key, v)
	} else {
		_ = b.PutCFWithExpiry(ks.cf, key, v, time.UnixMilli(d))
	}
	ks.putDeadline(b, key, d)
	if err := ks.apply(b, [][]byte{key}); err != nil {
		return err
	}
	ks.noteDeadline(key, d)
	return nil
}

// expireIfNeeded deletes key if its deadline has come. REQUIRES: key's
// lock.
func (ks *keyspace) expireIfNeeded(key []byte) error {
	if !ks.expiredNow(key) {
		return nil
	}
	err := ks.del(key)
	if err == nil {
		ks.expired.Add(1)
	}
	return err
}

// keepDeadline writes key's merged value again with its deadline after a
// command that may have merged operands onto it. REQUIRES: key's lock.
func (ks *keyspace) keepDeadline(key []byte) error {
	d := ks.deadline(key)
	if d == 0 {
		return nil
	}
	v, err := ks.rawEngine(key)
	if err != nil || v == nil {
		return err
	}
	return ks.writeValue(key, v, d)
}

// rawEngine reads key's stored value from the engine (nil: missing),
// ignoring the deadline table.
func (ks *keyspace) rawEngine(key []byte) ([]byte, error) {
	var v []byte
	var err error
	if ks.tx != nil {
		v, err = ks.tx.b.GetCF(ks.cf, key)
	} else {
		v, err = ks.cf.Get(key)
	}
	if errors.Is(err, sieve.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// sweepExpired deletes up to n keys whose deadline has come (Redis's
// active expiry), reporting how many it found.
func (ks *keyspace) sweepExpired(n int) int {
	keys := ks.exp.due(n)
	for _, k := range keys {
		unlock := ks.lock(k)
		_ = ks.expireIfNeeded(k)
		unlock()
	}
	return len(keys)
}

// runSweeper sweeps every 100 ms until stop is closed, and again at once
// while a sweep finds a full round.
func (ks *keyspace) runSweeper(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			for ks.sweepExpired(200) == 200 {
			}
		}
	}
}

// keyArgsOf returns the keys among a command's arguments (Redis's key
// specs, for the commands sieve-server has): args[1] unless listed.
func keyArgsOf(name string, args [][]byte) [][]byte {
	switch name {
	case "mget", "del", "unlink", "exists", "touch", "pfcount", "pfmerge", "watch":
		return args[1:]
	case "mset", "msetnx":
		var ks [][]byte
		for i := 1; i < len(args); i += 2 {
			ks = append(ks, args[i])
		}
		return ks
	case "rename", "renamenx", "copy", "lcs":
		if len(args) >= 3 {
			return args[1:3]
		}
	case "bitop":
		if len(args) >= 3 {
			return args[2:]
		}
	case "cms.merge":
		if len(args) >= 4 {
			return append([][]byte{args[1]}, args[3:]...)
		}
	case "ping", "echo", "info", "client", "config", "command", "select", "auth", "hello",
		"quit", "flushall", "flushdb", "dbsize", "scan", "keys", "time", "multi", "exec",
		"discard", "unwatch", "debug", "role", "monitor", "save", "bgsave", "lastsave", "shutdown", "memory", "object":
		return nil
	}
	if len(args) > 1 {
		return args[1:2]
	}
	return nil
}

// expireKeys deletes the keys of a command whose deadline has come,
// before it runs (Redis's expireIfNeeded). Outside a transaction only.
func (s *Server) expireKeys(name string, args [][]byte) {
	if s.ks.exp.nexp.Load() == 0 {
		return
	}
	for _, k := range keyArgsOf(name, args) {
		if s.ks.expiredNow(k) {
			unlock := s.ks.lock(k)
			_ = s.ks.expireIfNeeded(k)
			unlock()
		}
	}
}

// keepsDeadline reports whether a write command may merge operands onto
// its key (a sketch command), whose deadline must then be written again.
func keepsDeadline(name string) bool {
	switch {
	case name == "pfadd", name == "pfmerge", name == "setbit", name == "bitfield":
		return true
	}
	for _, p := range []string{"bf.", "cf.", "cms.", "topk."} {
		if len(name) > len(p) && name[:len(p)] == p {
			return true
		}
	}
	return false
}

// needsDeadline reports whether a write command may merge operands onto
// a key with a deadline (a sketch command), which must then be written
// again with it.
func (s *Server) needsDeadline(c *command, args [][]byte) bool {
	return c.write && len(args) >= 2 && s.ks.exp.nexp.Load() != 0 && keepsDeadline(c.name) && s.ks.deadline(args[1]) != 0
}

// afterWrite, in a transaction's view, writes the deadline of a sketch
// command's key again into the transaction's batch.
func (s *Server) afterWrite(c *command, args [][]byte) {
	if s.ks.tx != nil && s.needsDeadline(c, args) {
		_ = s.ks.keepDeadline(args[1])
	}
}

// runKeepingDeadline runs a sketch command on a key with a deadline as a
// transaction of its own (EXEC's view, under the command's keys' locks):
// its writes and the key's merged value written again with the deadline
// go in one batch, so no crash can leave its operands without the
// deadline, which would outlive it.
func (s *Server) runKeepingDeadline(r *reply, c *command, args [][]byte) {
	keys := keyArgsOf(c.name, args)
	unlock := s.ks.lockKeys(keys)
	defer unlock()
	t := &txn{b: s.db.NewIndexedBatch()}
	view := &Server{serverState: s.serverState, ks: &keyspace{ksState: s.ks.ksState, st: s.ks.st.WithBatch(t.b), tx: t}}
	mark := len(r.out)
	c.fn(view, r, args)
	if err := view.ks.keepDeadline(args[1]); err != nil {
		r.out = r.out[:mark]
		r.storeErr(err)
		return
	}
	if err := s.ks.st.Apply(t.b, t.keys); err != nil {
		r.out = r.out[:mark]
		r.storeErr(err)
		return
	}
	s.ks.applyTxMeta(t)
	s.ks.applyTxExpires(t)
	for _, k := range t.keys {
		s.ks.watch.touch(k)
	}
}

// moveDeadline gives dst, just made a copy of src (RENAME, COPY), src's
// deadline (or none), and with del forgets src's. It is a second batch
// after the copy's: a crash between them leaves dst without its deadline.
// REQUIRES: both keys' locks.
func (ks *keyspace) moveDeadline(src, dst []byte, del bool) error {
	d := ks.deadline(src)
	if d != 0 || ks.deadline(dst) != 0 {
		if err := ks.setDeadline(dst, d); err != nil {
			return err
		}
	}
	if !del || d == 0 {
		return nil
	}
	b := ks.newBatch()
	ks.putDeadline(b, src, 0)
	if err := ks.apply(b, nil); err != nil {
		return err
	}
	ks.noteDeadline(src, 0)
	return nil
}
