package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sievedb/sieve/sstable"
)

// fakeClock replaces the server's clock (and so the engine's) for a test.
func fakeClock(t *testing.T) *atomic.Int64 {
	var ns atomic.Int64
	ns.Store(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	old := clock
	clock = func() time.Time { return time.Unix(0, ns.Load()) }
	t.Cleanup(func() { clock = old })
	return &ns
}

// TestExpirySketches: a sketch with a deadline keeps it across its
// writes (PFADD, BF.ADD, CMS.INCRBY), disappears at it, and a new sketch
// at the key starts empty (its predecessor's pages are gone).
func TestExpirySketches(t *testing.T) {
	ns := fakeClock(t)
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	c := newClient(t, s.Addr())
	ctx := context.Background()
	do := func(args ...any) any {
		v, err := c.Do(ctx, args...).Result()
		if err != nil {
			return "ERR:" + err.Error()
		}
		return v
	}
	for _, step := range [][]any{
		{"pfadd", "uv", "a", "b"}, {"expire", "uv", 100}, {"pfadd", "uv", "c"},
		{"bf.reserve", "bf", 0.01, 10000}, {"expire", "bf", 100},
		{"cms.initbydim", "cms", 100, 4}, {"cms.incrby", "cms", "x", 5}, {"expire", "cms", 100}, {"cms.incrby", "cms", "x", 1},
		{"set", "s", "v", "ex", 100}, {"append", "s", "w"},
	} {
		do(step...)
	}
	for i := range 500 {
		do("bf.add", "bf", i)
	}
	for _, k := range []string{"uv", "bf", "cms", "s"} {
		if ttl := do("ttl", k); ttl != int64(100) {
			t.Fatalf("TTL %s after its writes: %v, want 100", k, ttl)
		}
	}
	if v := do("pfcount", "uv"); v != int64(3) {
		t.Fatalf("PFCOUNT %v", v)
	}
	ns.Add(int64(101 * time.Second))
	for _, k := range []string{"uv", "bf", "cms", "s"} {
		if n := do("exists", k); n != int64(0) {
			t.Fatalf("%s exists after its deadline", k)
		}
	}
	if v := do("pfcount", "uv"); v != int64(0) {
		t.Fatalf("PFCOUNT of an expired HLL: %v", v)
	}
	if v := do("dbsize"); v != int64(0) {
		t.Fatalf("DBSIZE counts expired keys: %v", v)
	}
	if v := do("keys", "*"); fmt.Sprint(v) != "[]" {
		t.Fatalf("KEYS lists expired keys: %v", v)
	}
	if v := do("scan", 0); fmt.Sprint(v) != "[0 []]" {
		t.Fatalf("SCAN lists expired keys: %v", v)
	}
	if v := do("type", "bf"); v != "none" {
		t.Fatalf("TYPE of an expired filter: %v", v)
	}
	do("bf.reserve", "bf", 0.01, 10000)
	pos := 0
	for i := range 500 {
		if do("bf.exists", "bf", i) == int64(1) {
			pos++
		}
	}
	if pos > 25 {
		t.Fatalf("a new filter at an expired one's key answers %d of its 500 items", pos)
	}
	if v := do("ttl", "bf"); v != int64(-1) {
		t.Fatalf("TTL of the new filter: %v", v)
	}
	// Deadlines survive a restart.
	do("set", "later", "x", "px", 5000)
	_ = c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir, nil)
	c = newClient(t, s.Addr())
	if v := do("pttl", "later"); v != int64(5000) {
		t.Fatalf("PTTL after a restart: %v", v)
	}
}

// TestSeedsWeek is the users' scenario: a daily HLL of visitors kept for
// 7 days and a Bloom guard rebuilt every night, run for two weeks on a
// fake clock. After a compaction the tables hold only the live days.
func TestSeedsWeek(t *testing.T) {
	ns := fakeClock(t)
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	c := newClient(t, s.Addr())
	ctx := context.Background()
	const days = 14
	for day := range days {
		p := c.Pipeline()
		uv, guard := fmt.Sprintf("uv:%02d", day), fmt.Sprintf("guard:%02d", day)
		for i := range 2000 {
			p.Do(ctx, "pfadd", uv, fmt.Sprintf("user%d", day*1000+i))
		}
		p.Do(ctx, "expire", uv, 7*86400)
		p.Do(ctx, "bf.reserve", guard, 0.01, 5000)
		for i := range 2000 {
			p.Do(ctx, "bf.add", guard, fmt.Sprintf("id%d", i))
		}
		p.Do(ctx, "expire", guard, 86400+3600) // until the next night's is built
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		ns.Add(int64(24 * time.Hour))
		time.Sleep(150 * time.Millisecond) // the sweeper's round
	}
	live := map[string]bool{}
	for day := days - 6; day < days; day++ { // uv:07 ran out at the start of day 14
		live[fmt.Sprintf("uv:%02d", day)] = true
	}
	live[fmt.Sprintf("guard:%02d", days-1)] = true
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(live) {
		t.Fatalf("KEYS: %v, want the %d live ones", keys, len(live))
	}
	for _, name := range s.db.ColumnFamilies() {
		cf, err := s.db.OpenColumnFamily(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := cf.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	found := tableKeys(t, dir)
	for day := range days {
		for _, k := range []string{fmt.Sprintf("uv:%02d", day), fmt.Sprintf("guard:%02d", day)} {
			if found[k] && !live[k] {
				t.Errorf("%s is still in the tables after a compaction", k)
			}
			if !found[k] && live[k] {
				t.Errorf("%s is live but not in the tables", k)
			}
		}
	}
	t.Logf("tables after two weeks and a compaction hold %d sketch keys (%d live): %v", len(found), len(live), found)
}

// tableKeys lists the uv:/guard: keys named by any entry of any table
// in dir (pages' keys start with their sketch's key).
func tableKeys(t *testing.T, dir string) map[string]bool {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	found := map[string]bool{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		r, err := sstable.NewReader(f, fi.Size(), sstable.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		it := r.NewIter(nil, nil)
		for ok := it.First(); ok; ok = it.Next() {
			for _, pre := range []string{"uv:", "guard:"} {
				if i := bytes.Index(it.Key().UserKey, []byte(pre)); i >= 0 {
					found[string(it.Key().UserKey[i:i+len(pre)+2])] = true
				}
			}
		}
		_ = it.Close()
		_ = r.Close()
	}
	return found
}

// TestExpiryBitmap: bit writes keep a bitmap's deadline, inline or paged,
// and the bitmap's pages go with it.
func TestExpiryBitmap(t *testing.T) {
	ns := fakeClock(t)
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	ctx := context.Background()
	for _, k := range []string{"small", "big"} {
		if err := c.SetBit(ctx, k, 7, 1).Err(); err != nil {
			t.Fatal(err)
		}
		c.Expire(ctx, k, 100*time.Second)
	}
	c.SetBit(ctx, "small", 9, 1)
	c.SetBit(ctx, "big", 1<<20, 1) // grows it: a new header
	for _, k := range []string{"small", "big"} {
		if ttl := c.TTL(ctx, k).Val(); ttl != 100*time.Second {
			t.Fatalf("%s: TTL %v after SETBIT", k, ttl)
		}
	}
	ns.Add(int64(101 * time.Second))
	if n := c.BitCount(ctx, "big", nil).Val(); n != 0 {
		t.Fatalf("BITCOUNT of an expired bitmap: %d", n)
	}
	c.SetBit(ctx, "big", 3, 1)
	if n := c.BitCount(ctx, "big", nil).Val(); n != 1 {
		t.Fatalf("a new bitmap at an expired one's key counts %d bits", n)
	}
}

// TestExpiryStringWrites: which string writes keep a key's deadline
// (INCR, INCRBYFLOAT, APPEND, SETRANGE, SET KEEPTTL) and which drop it
// (SET, MSET, GETSET), as in Redis.
func TestExpiryStringWrites(t *testing.T) {
	fakeClock(t)
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	for _, tc := range []struct {
		write []any
		keeps bool
	}{
		{[]any{"incr", "k"}, true}, {[]any{"incrbyfloat", "k", "1.5"}, true}, {[]any{"append", "k", "0"}, true},
		{[]any{"setrange", "k", 0, "9"}, true}, {[]any{"set", "k", "1", "keepttl"}, true},
		{[]any{"set", "k", "1"}, false}, {[]any{"mset", "k", "1", "other", "2"}, false}, {[]any{"getset", "k", "1"}, false},
	} {
		do(c, "set", "k", "1", "ex", 100)
		if got := do(c, tc.write...); strings.HasPrefix(got, "ERR") {
			t.Fatalf("%v: %s", tc.write, got)
		}
		ttl := do(c, "ttl", "k")
		if (ttl == "100") != tc.keeps || (!tc.keeps && ttl != "-1") {
			t.Errorf("%v: TTL %s afterwards (keeps: %v)", tc.write, ttl, tc.keeps)
		}
	}
}

// TestExpiryInTransaction: a sketch command inside MULTI/EXEC on a key
// with a deadline keeps it (the transaction's batch carries the merged
// value with the deadline), and EXPIRE inside EXEC takes effect at EXEC.
func TestExpiryInTransaction(t *testing.T) {
	fakeClock(t)
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	do(c, "pfadd", "uv", "a")
	do(c, "expire", "uv", 100)
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.PFAdd(ctx, "uv", "b", "c")
		p.Expire(ctx, "other", 50*time.Second)
		p.Set(ctx, "s", "v", 0)
		p.Expire(ctx, "s", 60*time.Second)
		return nil
	})
	if err != nil {
		t.Fatal(err, cmds)
	}
	for k, want := range map[string]string{"uv": "100", "s": "60", "other": "-2"} {
		if got := do(c, "ttl", k); got != want {
			t.Errorf("TTL %s after EXEC: %s, want %s", k, got, want)
		}
	}
	if got := do(c, "pfcount", "uv"); got != "3" {
		t.Errorf("PFCOUNT after EXEC: %s", got)
	}
}
