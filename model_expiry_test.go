package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// expVersion is one write of a key in the expiry model.
type expVersion struct {
	seq      uint64
	kind     byte // 's' set, 'x' expiring set, 'm' merge, 'd' delete
	value    string
	deadline int64
}

// expModel is what the expiry model test knows: every write of every key
// with its sequence number, and the range deletions.
type expModel struct {
	seq    uint64
	keys   map[string][]expVersion // oldest first
	ranges []struct {
		seq        uint64
		start, end string
	}
}

// read is the value of key as of snapshot seq at time now, by the rules
// of expiry.go: newest first, a Delete or a range deletion ends the
// search, an expiring Set past its deadline reads as a Delete, operands
// above a base are appended (appendMerger).
func (m *expModel) read(key string, seq uint64, now int64) (string, bool) {
	var tomb uint64
	for _, r := range m.ranges {
		if r.seq <= seq && r.start <= key && key < r.end {
			tomb = max(tomb, r.seq)
		}
	}
	vs := m.keys[key]
	var ops []string
	base, found := "", false
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		if v.seq > seq {
			continue
		}
		if v.seq < tomb {
			break
		}
		if v.kind == 'm' {
			ops = append(ops, v.value)
			continue
		}
		if v.kind == 's' || (v.kind == 'x' && now < v.deadline) {
			base, found = v.value, true
		}
		break
	}
	if !found && len(ops) == 0 {
		return "", false
	}
	parts := []string{}
	if found {
		parts = append(parts, base)
	}
	for i := len(ops) - 1; i >= 0; i-- {
		parts = append(parts, ops[i])
	}
	return strings.Join(parts, ","), true
}

// TestExpiryModel checks every read against a model through random puts
// with and without deadlines, merges onto them, deletes, range deletions,
// flushes, compactions, snapshots and a clock that moves: Get and both
// directions of a scan, at the latest state and at every open snapshot.
// Replay with SIEVE_SEED.
func TestExpiryModel(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("SIEVE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (replay: SIEVE_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	var reached [6]int // expired reads, live expiring reads, merged-onto-expiring, flushes, compactions, snapshot reads
	for round := range 12 {
		clock := newFakeClock()
		db, _ := openMem(t, &Options{Now: clock.Now, Merger: appendMerger{}, MemTableSize: 64 << 10, MaxSuccessiveMerges: 3})
		m := &expModel{keys: map[string][]expVersion{}}
		snaps := map[*Snapshot]uint64{}
		for step := range 400 {
			expModelStep(t, db, m, clock, rng, snaps, &reached, fmt.Sprintf("round %d step %d", round, step))
		}
		for s := range snaps {
			require.NoError(t, s.Close())
		}
	}
	t.Logf("reached: %d reads of expired values, %d of live expiring ones, %d of operands on an expiring value, %d flushes, %d compactions, %d snapshot reads",
		reached[0], reached[1], reached[2], reached[3], reached[4], reached[5])
	for i, n := range reached {
		require.Positive(t, n, "case %d never reached", i)
	}
}

func expModelStep(t *testing.T, db *DB, m *expModel, clock *fakeClock, rng *rand.Rand, snaps map[*Snapshot]uint64, reached *[6]int, where string) {
	key := fmt.Sprintf("k%02d", rng.IntN(24))
	val := strconv.Itoa(rng.IntN(1000))
	add := func(kind byte, v string, d int64) {
		m.seq++
		m.keys[key] = append(m.keys[key], expVersion{seq: m.seq, kind: kind, value: v, deadline: d})
	}
	switch r := rng.IntN(100); {
	case r < 25:
		d := clock.Now().Add(time.Duration(1+rng.IntN(4000)) * time.Millisecond)
		require.NoError(t, db.PutWithExpiry([]byte(key), []byte(val), d, nil))
		add('x', val, d.UnixNano())
	case r < 35:
		require.NoError(t, db.Put([]byte(key), []byte(val), nil))
		add('s', val, 0)
	case r < 55:
		require.NoError(t, db.Merge([]byte(key), []byte(val), nil))
		add('m', val, 0)
	case r < 60:
		require.NoError(t, db.Delete([]byte(key), nil))
		add('d', "", 0)
	case r < 63:
		end := fmt.Sprintf("k%02d", rng.IntN(25))
		if end > key {
			require.NoError(t, db.DeleteRange([]byte(key), []byte(end), nil))
			m.seq++
			m.ranges = append(m.ranges, struct {
				seq        uint64
				start, end string
			}{m.seq, key, end})
		}
	case r < 70:
		clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
	case r < 74:
		require.NoError(t, db.Flush())
		reached[3]++
	case r < 76:
		require.NoError(t, db.Compact(nil, nil))
		reached[4]++
	case r < 79:
		snaps[db.NewSnapshot()] = m.seq
	case r < 81:
		for s := range snaps {
			require.NoError(t, s.Close())
			delete(snaps, s)
			break
		}
	default:
		expModelCheck(t, db, m, clock, snaps, reached, where)
	}
}

// expModelCheck compares every key's Get and a scan in both directions
// with the model, and every open snapshot's Gets.
func expModelCheck(t *testing.T, db *DB, m *expModel, clock *fakeClock, snaps map[*Snapshot]uint64, reached *[6]int, where string) {
	now := clock.ns.Load()
	var want []string
	for i := range 25 {
		key := fmt.Sprintf("k%02d", i)
		w, ok := m.read(key, m.seq, now)
		got, err := db.Get([]byte(key))
		if !ok {
			require.True(t, errors.Is(err, ErrNotFound), "%s: Get %s = %q, %v; want none", where, key, got, err)
		} else {
			require.NoError(t, err, "%s: Get %s", where, key)
			require.Equal(t, w, string(got), "%s: Get %s", where, key)
			want = append(want, key+"="+w)
		}
		countExpiryCase(m.keys[key], now, reached)
		for s, seq := range snaps {
			w, ok := m.read(key, seq, now)
			got, err := s.Get([]byte(key))
			if !ok {
				require.True(t, errors.Is(err, ErrNotFound), "%s: snapshot %d Get %s = %q", where, seq, key, got)
			} else {
				require.Equal(t, w, string(got), "%s: snapshot %d Get %s (%v)", where, seq, key, err)
			}
			reached[5]++
		}
	}
	var fwd, bwd []string
	it := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key())+"="+string(it.Value()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd = append([]string{string(it.Key()) + "=" + string(it.Value())}, bwd...)
	}
	require.NoError(t, it.Close())
	require.Equal(t, want, fwd, "%s: forward scan", where)
	require.Equal(t, want, bwd, "%s: backward scan", where)
}

// countExpiryCase notes which of the cases the test names a key's newest
// writes make.
func countExpiryCase(vs []expVersion, now int64, reached *[6]int) {
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].kind == 'x' {
			switch {
			case now >= vs[i].deadline:
				reached[0]++
			default:
				reached[1]++
			}
			if i < len(vs)-1 && bytes.Equal([]byte{vs[i+1].kind}, []byte{'m'}) {
				reached[2]++
			}
			return
		}
		if vs[i].kind != 'm' {
			return
		}
	}
}
