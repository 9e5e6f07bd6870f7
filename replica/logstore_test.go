package replica

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// These tests mirror hashicorp/raft-boltdb's store tests (the expectations
// raft has of a LogStore and StableStore), and add a reopen.

func openTestLogStore(t *testing.T, dir string) *LogStore {
	t.Helper()
	s, err := OpenLogStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testLog(idx uint64, data string) *raft.Log {
	return &raft.Log{Index: idx, Term: idx/3 + 1, Type: raft.LogCommand, Data: []byte(data),
		Extensions: []byte("ext"), AppendedAt: time.Unix(1700000000, int64(idx))}
}

func bounds(t *testing.T, s *LogStore) (uint64, uint64) {
	t.Helper()
	first, err1 := s.FirstIndex()
	last, err2 := s.LastIndex()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return first, last
}

func TestLogStoreIndexes(t *testing.T) {
	dir := t.TempDir()
	s := openTestLogStore(t, dir)
	if f, l := bounds(t, s); f != 0 || l != 0 {
		t.Fatalf("empty store: first %d last %d", f, l)
	}
	if err := s.StoreLogs([]*raft.Log{testLog(1, "a"), testLog(2, "b"), testLog(3, "c")}); err != nil {
		t.Fatal(err)
	}
	if f, l := bounds(t, s); f != 1 || l != 3 {
		t.Fatalf("first %d last %d, want 1 3", f, l)
	}
	s.Close()
	s = openTestLogStore(t, dir) // the bounds are read back at open
	defer s.Close()
	if f, l := bounds(t, s); f != 1 || l != 3 {
		t.Fatalf("after reopen: first %d last %d, want 1 3", f, l)
	}
}

func TestLogStoreGetSetLog(t *testing.T) {
	s := openTestLogStore(t, t.TempDir())
	defer s.Close()
	var out raft.Log
	if err := s.GetLog(1, &out); err != raft.ErrLogNotFound {
		t.Fatalf("missing log: %v, want raft.ErrLogNotFound", err)
	}
	in := testLog(1, "hello")
	if err := s.StoreLog(in); err != nil {
		t.Fatal(err)
	}
	if err := s.GetLog(1, &out); err != nil {
		t.Fatal(err)
	}
	if out.Index != in.Index || out.Term != in.Term || out.Type != in.Type ||
		!bytes.Equal(out.Data, in.Data) || !bytes.Equal(out.Extensions, in.Extensions) || !out.AppendedAt.Equal(in.AppendedAt) {
		t.Fatalf("read %+v, wrote %+v", out, in)
	}
}

func TestLogStoreDeleteRange(t *testing.T) {
	cases := []struct {
		name        string
		lo, hi      uint64
		first, last uint64
	}{
		{"prefix", 1, 2, 3, 5},
		{"suffix", 4, 5, 1, 3},
		{"all", 1, 5, 0, 0},
		{"beyond", 0, 100, 0, 0},
		{"middle", 2, 3, 1, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestLogStore(t, dir)
			var logs []*raft.Log
			for i := uint64(1); i <= 5; i++ {
				logs = append(logs, testLog(i, "x"))
			}
			if err := s.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteRange(c.lo, c.hi); err != nil {
				t.Fatal(err)
			}
			if f, l := bounds(t, s); f != c.first || l != c.last {
				t.Fatalf("first %d last %d, want %d %d", f, l, c.first, c.last)
			}
			var out raft.Log
			for i := uint64(1); i <= 5; i++ {
				err := s.GetLog(i, &out)
				if deleted := i >= c.lo && i <= c.hi; deleted != (err == raft.ErrLogNotFound) {
					t.Fatalf("index %d: %v (deleted %v)", i, err, deleted)
				}
			}
			s.Close()
			s = openTestLogStore(t, dir)
			defer s.Close()
			if c.name != "middle" { // a hole keeps the bounds
				if f, l := bounds(t, s); f != c.first || l != c.last {
					t.Fatalf("after reopen: first %d last %d, want %d %d", f, l, c.first, c.last)
				}
			}
		})
	}
}

func TestStableStore(t *testing.T) {
	dir := t.TempDir()
	s := openTestLogStore(t, dir)
	if _, err := s.Get([]byte("k")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v, want an error whose text is \"not found\"", err)
	}
	if _, err := s.GetUint64([]byte("n")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing uint64: %v", err)
	}
	if err := s.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("n"), 42); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestLogStore(t, dir)
	defer s.Close()
	if v, err := s.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get: %q %v", v, err)
	}
	if n, err := s.GetUint64([]byte("n")); err != nil || n != 42 {
		t.Fatalf("GetUint64: %d %v", n, err)
	}
	// Stable keys and log entries do not see each other.
	if f, l := bounds(t, s); f != 0 || l != 0 {
		t.Fatalf("bounds %d %d with only stable keys", f, l)
	}
}
