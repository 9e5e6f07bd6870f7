package sketchcol

import (
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

// Type errors and Restore through the Store: every command on a key of
// another kind fails with ErrWrongType and changes nothing; a value that
// is not a sketch at all fails them with ErrWrongType and ErrCorruption;
// Restore refuses malformed values.

// storeCommands are all the Store's commands on key, run for their error.
func storeCommands(key []byte) map[Kind]map[string]func(s *Store) error {
	x := []byte("x")
	return map[Kind]map[string]func(s *Store) error{
		KindHLL: {
			"PFAdd":         func(s *Store) error { _, err := s.PFAdd(key, x); return err },
			"PFCount":       func(s *Store) error { _, err := s.PFCount(key); return err },
			"PFCount union": func(s *Store) error { _, err := s.PFCount(key, []byte("other")); return err },
			"PFMerge dst":   func(s *Store) error { return s.PFMerge(key) },
			"PFMerge src":   func(s *Store) error { return s.PFMerge([]byte("newdst"), key) },
		},
		KindBloom: {
			"BFReserve": func(s *Store) error { return s.BFReserve(key, 0.01, 100, nil) },
			"BFAdd":     func(s *Store) error { _, err := s.BFAdd(key, x); return err },
			"BFMAdd":    func(s *Store) error { _, err := s.BFMAdd(key, x); return err },
			"BFInsert":  func(s *Store) error { _, err := s.BFInsert(key, nil, x); return err },
			"BFExists":  func(s *Store) error { _, err := s.BFExists(key, x); return err },
			"BFMExists": func(s *Store) error { _, err := s.BFMExists(key, x); return err },
			"BFCard":    func(s *Store) error { _, err := s.BFCard(key); return err },
			"BFInfo":    func(s *Store) error { _, err := s.BFInfo(key); return err },
		},
		KindCuckoo: {
			"CFReserve": func(s *Store) error { return s.CFReserve(key, 100, nil) },
			"CFAdd":     func(s *Store) error { _, err := s.CFAdd(key, x); return err },
			"CFAddNX":   func(s *Store) error { _, err := s.CFAddNX(key, x); return err },
			"CFExists":  func(s *Store) error { _, err := s.CFExists(key, x); return err },
			"CFDel":     func(s *Store) error { _, err := s.CFDel(key, x); return err },
			"CFCount":   func(s *Store) error { _, err := s.CFCount(key, x); return err },
			"CFInfo":    func(s *Store) error { _, err := s.CFInfo(key); return err },
		},
	}
}

func TestStoreWrongType(t *testing.T) {
	s := openTestStore(t, nil, nil)
	x := []byte("x")
	_, err := s.PFAdd(k("hll"), x)
	require.NoError(t, err)
	_, err = s.BFAdd(k("bloom"), x)
	require.NoError(t, err)
	_, err = s.CFAdd(k("cuckoo"), x)
	require.NoError(t, err)
	keys := map[Kind][]byte{KindHLL: k("hll"), KindBloom: k("bloom"), KindCuckoo: k("cuckoo")}

	for held, key := range keys {
		before, err := s.Dump(key)
		require.NoError(t, err)
		for kind, cmds := range storeCommands(key) {
			if kind == held {
				continue
			}
			for name, c := range cmds {
				require.ErrorIs(t, c(s.Store), ErrWrongType, "%s on a %s", name, held)
			}
		}
		// Blind writes of another kind are dropped by the merge.
		require.NoError(t, s.PFAddBlind(key, k("y")))
		require.NoError(t, s.BFAddBlind(key, k("y")))
		require.NoError(t, s.CFAddBlind(key, k("y")))
		after, err := s.Dump(key)
		require.NoError(t, err)
		if held == KindHLL {
			// ... except its own: the HLL blind add applied.
			h, err := ParseHLL(before)
			require.NoError(t, err)
			h.Add(k("y"))
			require.Equal(t, h.Bytes(), after)
		} else if held == KindBloom {
			// A paged filter: the item is there and counted once more.
			cb, err := BFCardReply(before)
			require.NoError(t, err)
			ca, err := BFCardReply(after)
			require.NoError(t, err)
			require.Equal(t, cb+1, ca)
			in, err := BFExistsReply(after, k("y"))
			require.NoError(t, err)
			require.True(t, in[0])
		} else {
			c, err := parseCuckooAny(before)
			require.NoError(t, err)
			require.NoError(t, c.Add(k("y")))
			require.Equal(t, c.pagedDump(), after, "a paged filter's dump")
		}
	}
	_, err = s.PFCount(k("hll"), k("bloom"))
	require.ErrorIs(t, err, ErrWrongType)
	require.ErrorIs(t, s.PFMerge(k("hll"), k("cuckoo")), ErrWrongType)

	// A value written around the Store that is no sketch at all: every
	// command refuses it, as Redis refuses a string that is not an HLL,
	// and the error also says it is corrupt (the Store never writes one).
	require.NoError(t, s.ColumnFamily().Put(k("plain"), []byte("just a string"), sieve.Sync))
	require.NoError(t, s.ColumnFamily().Put(k("empty"), []byte{}, sieve.Sync))
	for _, key := range [][]byte{k("plain"), k("empty")} {
		for _, cmds := range storeCommands(key) {
			for name, c := range cmds {
				err := c(s.Store)
				require.ErrorIs(t, err, ErrWrongType, "%s on %q", name, key)
				require.ErrorIs(t, err, ErrCorruption, "%s on %q", name, key)
			}
		}
		_, err := s.Dump(key)
		require.ErrorIs(t, err, ErrCorruption)
	}
	v, err := s.ColumnFamily().Get(k("plain"))
	require.NoError(t, err)
	require.Equal(t, []byte("just a string"), v, "nothing was written over it")
}

func TestStoreRestore(t *testing.T) {
	s := openTestStore(t, nil, nil)
	h := NewHLL()
	for _, e := range items("r", 50) {
		h.Add(e)
	}
	good := h.Bytes()
	stale := append([]byte(nil), good...)
	stale[15] |= hllCardInvalid
	wrongCache := append([]byte(nil), good...)
	wrongCache[8] ^= 0x7 // a valid-looking cache that lies

	garbage := map[string][]byte{
		"empty":              {},
		"string":             []byte("hello"),
		"truncated HLL":      good[:len(good)-1],
		"HLL magic only":     []byte("HYLL"),
		"HLL bad encoding":   append([]byte("HYLL\x07\x00\x00\x00"), make([]byte, 8)...),
		"operand, not value": PFAddOp(k("a")),
		"sparse runs short":  append(append([]byte(nil), good[:16]...), 0x7f, 0xfe),
	}
	for name, v := range garbage {
		err := s.Restore(k("g"), v)
		require.ErrorIs(t, err, ErrCorruption, name)
		_, err = s.Dump(k("g"))
		require.ErrorIs(t, err, sieve.ErrNotFound, "%s: nothing written", name)
	}

	// A stale or lying cache is recomputed; the registers are kept.
	for name, v := range map[string][]byte{"good": good, "stale": stale, "wrong cache": wrongCache} {
		require.NoError(t, s.Restore(k(name), v), name)
		d, err := s.Dump(k(name))
		require.NoError(t, err)
		require.Equal(t, good, d, name)
		n, err := s.PFCount(k(name))
		require.NoError(t, err)
		require.Equal(t, h.Count(), n)
	}

	// Restore replaces a value of any kind (SET semantics), and the new
	// kind's commands work on it.
	_, err := s.BFAdd(k("b"), k("x"))
	require.NoError(t, err)
	require.NoError(t, s.Restore(k("b"), good))
	n, err := s.PFCount(k("b"))
	require.NoError(t, err)
	require.Equal(t, h.Count(), n)
	_, err = s.BFExists(k("b"), k("x"))
	require.ErrorIs(t, err, ErrWrongType)

	// Bloom and cuckoo values round-trip through Dump and Restore.
	_, err = s.CFAdd(k("c"), k("x"))
	require.NoError(t, err)
	_, err = s.BFAdd(k("b2"), k("x"))
	require.NoError(t, err)
	for _, key := range []string{"c", "b2"} {
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		require.NoError(t, s.Restore(k(key+"-copy"), d))
		d2, err := s.Dump(k(key + "-copy"))
		require.NoError(t, err)
		require.Equal(t, d, d2)
	}
	ok, err := s.CFExists(k("c-copy"), k("x"))
	require.NoError(t, err)
	require.True(t, ok)

	// A Batch restores too, and validates first.
	b := s.NewBatch()
	require.ErrorIs(t, b.Restore(k("bb"), []byte("junk")), ErrCorruption)
	require.NoError(t, b.Restore(k("bb"), stale))
	require.NoError(t, b.Commit(nil))
	d, err := s.Dump(k("bb"))
	require.NoError(t, err)
	require.Equal(t, good, d)
}

// TestStoreBatch: blind writes in a Batch, alone or riding in a
// sieve.Batch with a write to another column family, commit atomically.
func TestStoreBatch(t *testing.T) {
	s := openTestStore(t, nil, nil)
	b := s.NewBatch()
	require.NoError(t, b.PFAdd(k("h"), ks("a", "b")...))
	require.NoError(t, b.BFAdd(k("bf"), ks("a", "b")...))
	require.NoError(t, b.CFAdd(k("cf"), ks("a", "a")...))
	require.Equal(t, 3+1, b.Len(), "the paged Bloom filter's header and its one page")
	n, err := s.PFCount(k("h"))
	require.NoError(t, err)
	require.Zero(t, n, "nothing before Commit")
	require.NoError(t, b.Commit(sieve.Sync))
	n, err = s.PFCount(k("h"))
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	card, err := s.BFCard(k("bf"))
	require.NoError(t, err)
	require.Equal(t, int64(2), card)
	c, err := s.CFCount(k("cf"), k("a"))
	require.NoError(t, err)
	require.Equal(t, int64(2), c)

	sb := s.db.NewBatch()
	require.NoError(t, sb.Put(k("user:1"), k("seen")))
	wb := s.WrapBatch(sb)
	require.NoError(t, wb.PFAdd(k("visitors"), k("user:1")))
	require.Same(t, sb, wb.Sieve())
	require.NoError(t, s.db.Apply(sb, sieve.NoSync))
	v, err := s.db.Get(k("user:1"))
	require.NoError(t, err)
	require.Equal(t, k("seen"), v)
	n, err = s.PFCount(k("visitors"))
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
}
