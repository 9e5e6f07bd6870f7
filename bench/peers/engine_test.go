package main

import (
	"bytes"
	"fmt"
	"testing"
)

// TestEngineConformance drives every registered adapter through put, get,
// missing keys and seek+next on a tiny data set, before and after
// FlushCompact and across a reopen.
func TestEngineConformance(t *testing.T) {
	const n = 300
	vals := newValues(7)
	cfg := Config{CacheBytes: 1 << 20, BitsPerKey: 10}
	for _, info := range sortedEngines() {
		t.Run(info.name, func(t *testing.T) {
			t.Run("seq", func(t *testing.T) { conform(t, info, cfg, vals, n) })
			t.Run("scattered", func(t *testing.T) {
				scatteredKeys = true
				defer func() { scatteredKeys = false }()
				conform(t, info, cfg, vals, n)
			})
		})
	}
}

// conform puts n keys in reverse order into a new engine of info's kind
// and checks them in the memtable, after FlushCompact and after a reopen.
func conform(t *testing.T, info engineInfo, cfg Config, vals *values, n int) {
	dir := t.TempDir()
	e := openConform(t, info, dir, cfg)
	if e.Describe() == "" {
		t.Error("empty Describe")
	}
	var key []byte
	// Reverse order, so the store has to sort.
	for i := n - 1; i >= 0; i-- {
		key = presentKey(key, i)
		if err := e.Put(key, vals.value(i)); err != nil {
			t.Fatal(err)
		}
	}
	checkConform(t, e, vals, n, "memtable")
	if err := e.FlushCompact(); err != nil {
		t.Fatal(err)
	}
	checkConform(t, e, vals, n, "compacted")
	if e.Shape() == "" && info.name != "goleveldb" {
		t.Error("empty Shape after compaction")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openConform(t, info, dir, cfg)
	checkConform(t, e, vals, n, "reopened")
	checkStatNames(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// openConform opens a new engine of info's kind in dir.
func openConform(t *testing.T, info engineInfo, dir string, cfg Config) Engine {
	t.Helper()
	e := info.ctor()
	if err := e.Open(dir, cfg); err != nil {
		t.Fatal(err)
	}
	return e
}

// checkConform checks e holds keys 0..n-1 with vals and no absent key,
// through Get, a Reader and an iterator.
func checkConform(t *testing.T, e Engine, vals *values, n int, stage string) {
	t.Helper()
	checkConformGets(t, e, vals, n, stage)
	checkConformReader(t, e, vals, n, stage)
	checkConformIterator(t, e, vals, n, stage)
}

// checkConformGets: Get of every present key and of every absent one.
func checkConformGets(t *testing.T, e Engine, vals *values, n int, stage string) {
	t.Helper()
	var k, v []byte
	var found bool
	var err error
	for i := 0; i < n; i++ {
		k = presentKey(k, i)
		if v, found, err = e.Get(k, v); err != nil || !found || !bytes.Equal(v, vals.value(i)) {
			t.Fatalf("%s: Get(%s) = %q, %v, %v", stage, k, v, found, err)
		}
		k = absentKey(k, i)
		if v, found, err = e.Get(k, v); err != nil || found {
			t.Fatalf("%s: Get(absent %s) = %q, %v, %v", stage, k, v, found, err)
		}
	}
}

// checkConformReader: a Reader's Get of every 7th present and absent key.
func checkConformReader(t *testing.T, e Engine, vals *values, n int, stage string) {
	t.Helper()
	var k, v []byte
	var found bool
	rd, err := e.NewReader()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 7 {
		k = presentKey(k, i)
		if v, found, err = rd.Get(k, v); err != nil || !found || !bytes.Equal(v, vals.value(i)) {
			t.Fatalf("%s: Reader.Get(%s) = %q, %v, %v", stage, k, v, found, err)
		}
		k = absentKey(k, i)
		if v, found, err = rd.Get(k, v); err != nil || found {
			t.Fatalf("%s: Reader.Get(absent %s) = %q, %v, %v", stage, k, v, found, err)
		}
	}
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkConformIterator: seek and next from a few keys, up to and past the
// last; a seek to an absent key lands on the next present one.
func checkConformIterator(t *testing.T, e Engine, vals *values, n int, stage string) {
	t.Helper()
	it, err := e.NewIterator()
	if err != nil {
		t.Fatal(err)
	}
	for _, start := range []int{0, 17, n - 5, n - 1} {
		ok := it.Seek(presentKey(nil, start))
		for i := start; i < start+10; i++ {
			if i >= n {
				if ok {
					t.Fatalf("%s: iterator past the last key at %s", stage, it.Key())
				}
				break
			}
			if !ok || !bytes.Equal(it.Key(), presentKey(nil, i)) || !bytes.Equal(it.Value(), vals.value(i)) {
				t.Fatalf("%s: seek %d step %d: ok=%v", stage, start, i-start, ok)
			}
			ok = it.Next()
		}
	}
	// Seeking to an absent key lands on the next present one.
	if !it.Seek(absentKey(nil, 41)) || !bytes.Equal(it.Key(), presentKey(nil, 42)) {
		t.Fatalf("%s: seek to absent key", stage)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkStatNames: every stat e reports is one of statNames.
func checkStatNames(t *testing.T, e Engine) {
	t.Helper()
	s := e.Stats()
	for name := range s {
		found := false
		for _, known := range statNames {
			found = found || name == known
		}
		if !found {
			t.Errorf("unknown stat %q", name)
		}
	}
}

// TestScatteredKeys checks the scattered scheme's order: present key i sorts
// i-th, absent key j strictly between present keys j and j+1, never adjacent.
func TestScatteredKeys(t *testing.T) {
	scatteredKeys = true
	defer func() { scatteredKeys = false }()
	prev := presentKey(nil, 0)
	for i := 1; i < 5000; i++ {
		a, p := absentKey(nil, i-1), presentKey(nil, i)
		if !(bytes.Compare(prev, a) < 0 && bytes.Compare(a, p) < 0) || len(a) != keyLen || len(p) != keyLen {
			t.Fatalf("order: %s %s %s", prev, a, p)
		}
		prev = p
	}
}

func TestKeys(t *testing.T) {
	for _, c := range []struct {
		got  []byte
		want string
	}{
		{presentKey(nil, 0), fmt.Sprintf("key%013d", 0)},
		{presentKey(nil, 123456), fmt.Sprintf("key%013d", 246912)},
		{absentKey(nil, 7), fmt.Sprintf("key%013d", 15)},
	} {
		if string(c.got) != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
	}
}

// TestEngineOrdersUnique: the registry's order fixes the engines' column
// order in every report; two engines with one order would swap columns
// between runs.
func TestEngineOrdersUnique(t *testing.T) {
	seen := map[int]string{}
	for name, e := range registry {
		if other, dup := seen[e.order]; dup {
			t.Errorf("engines %s and %s share order %d", name, other, e.order)
		}
		seen[e.order] = name
	}
}
