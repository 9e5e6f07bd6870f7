package sieve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
)

// movesCounts counts the cases TestIteratorMovesModel is about: moves made
// from a key reached moving forward (after which the internal iterator is
// past the key's entries), the Nexts among them from a key with older
// versions, and such positions whose value came from a table (the key's
// newest entry flushed).
type movesCounts struct {
	next, nextShadowed, prev, seek, fromTable int
}

// TestIteratorMovesModel checks every move that can follow a key reached
// moving forward against a model: Next (over the key's older versions),
// Prev (turning around), seeks, First and Last; with bounds, snapshots,
// merges, deletes and range deletions, over memtables and flushed tables.
// Each case is counted and must occur.
func TestIteratorMovesModel(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 21))
	db, err := Open(t.TempDir(), &Options{Merger: appendMerger{}, MemTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const nkeys = 48
	model := map[string]string{}
	versions := map[string]int{} // writes per key since it was last absent
	inTable := map[string]bool{} // newest entry of the key flushed
	var c movesCounts
	for round := range 60 {
		for range 40 + rng.IntN(80) {
			applyMovesWrite(t, db, rng, model, versions, inTable, nkeys)
		}
		if rng.IntN(3) == 0 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			for k := range model {
				inTable[k] = true
			}
		}
		snapModel := cloneMovesModel(model)
		snap := db.NewSnapshot()
		// Writes after the snapshot: a snapshot iterator must skip them.
		for range rng.IntN(20) {
			applyMovesWrite(t, db, rng, model, versions, inTable, nkeys)
		}
		var o *IterOptions
		lo, hi := "", "\xff"
		if rng.IntN(2) == 0 {
			a, b := rng.IntN(nkeys), rng.IntN(nkeys)
			lo, hi = movesKey(min(a, b)), movesKey(max(a, b)+1)
			o = &IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
		}
		it, m := db.NewIter(o), model
		if rng.IntN(2) == 0 {
			it, m = snap.NewIter(o), snapModel
		}
		keys := visibleKeys(m, lo, hi)
		runModelMoves(t, it, rng, m, keys, versions, inTable, &c, fmt.Sprintf("seed %d round %d", seed, round))
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		snap.Close()
	}
	t.Logf("moves from a key reached forward: next %d (older versions to skip %d), prev %d, seek/first/last %d; from a table %d",
		c.next, c.nextShadowed, c.prev, c.seek, c.fromTable)
	if c.next == 0 || c.nextShadowed == 0 || c.prev == 0 || c.seek == 0 || c.fromTable == 0 {
		t.Fatalf("a case was not reached: %+v (seed %d)", c, seed)
	}
}

func movesKey(i int) string { return fmt.Sprintf("k%03d", i) }

func cloneMovesModel(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// applyMovesWrite makes one random write to db and to the model.
func applyMovesWrite(t *testing.T, db *DB, rng *rand.Rand, model map[string]string, versions map[string]int, inTable map[string]bool, nkeys int) {
	ki := rng.IntN(nkeys)
	k := movesKey(ki)
	v := fmt.Sprintf("v%d", rng.Uint32())
	var err error
	switch r := rng.IntN(20); {
	case r < 13:
		err = db.Put([]byte(k), []byte(v), NoSync)
		model[k] = v
		versions[k]++
	case r < 16:
		err = db.Merge([]byte(k), []byte(v), NoSync)
		if old, ok := model[k]; ok {
			v = old + "," + v
		}
		model[k] = v
		versions[k]++
	case r < 19:
		err = db.Delete([]byte(k), NoSync)
		delete(model, k)
		versions[k] = 0
	default:
		end := movesKey(min(nkeys, ki+1+rng.IntN(4)))
		err = db.DeleteRange([]byte(k), []byte(end), NoSync)
		for key := range model {
			if key >= k && key < end {
				delete(model, key)
				versions[key] = 0
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	delete(inTable, k)
}

func visibleKeys(m map[string]string, lo, hi string) []string {
	var keys []string
	for k := range m {
		if k >= lo && k < hi {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// runModelMoves makes random moves with it, checking each against the
// sorted visible keys of m, and counts the moves made from a key reached
// forward.
func runModelMoves(t *testing.T, it *Iterator, rng *rand.Rand, m map[string]string, keys []string, versions map[string]int, inTable map[string]bool, c *movesCounts, where string) {
	pos := -1 // index in keys of the iterator's key; -1 invalid
	for step := range 120 {
		from := it.valid && it.forward
		if from && pos >= 0 && inTable[keys[pos]] {
			c.fromTable++
		}
		var ok bool
		var op string
		switch r := rng.IntN(10); {
		case r < 5 && pos >= 0:
			op, ok = "Next", it.Next()
			if from {
				c.next++
				if versions[keys[pos]] > 1 {
					c.nextShadowed++
				}
			}
			pos = movesNext(pos, len(keys))
		case r < 7 && pos >= 0:
			op, ok = "Prev", it.Prev()
			if from {
				c.prev++
			}
			pos--
		case r < 8:
			op, ok = "First", it.First()
			pos = movesFirst(len(keys))
		case r < 9 && rng.IntN(2) == 0:
			op, ok = "Last", it.Last()
			pos = len(keys) - 1
		default:
			target := movesKey(rng.IntN(50))
			if rng.IntN(2) == 0 {
				op, ok = "SeekGE "+target, it.SeekGE([]byte(target))
				pos, _ = slices.BinarySearch(keys, target)
				if pos == len(keys) {
					pos = -1
				}
			} else {
				op, ok = "SeekLT "+target, it.SeekLT([]byte(target))
				i, _ := slices.BinarySearch(keys, target)
				pos = i - 1
			}
		}
		if from && !strings.HasPrefix(op, "Next") && !strings.HasPrefix(op, "Prev") {
			c.seek++
		}
		if want := pos >= 0; ok != want {
			t.Fatalf("%s step %d: %s = %v, want %v (err %v)", where, step, op, ok, want, it.Error())
		}
		if !ok {
			if err := it.Error(); err != nil {
				t.Fatalf("%s step %d: %s: %v", where, step, op, err)
			}
			pos = -1
			continue
		}
		if k, v := string(it.Key()), string(it.Value()); k != keys[pos] || v != m[k] {
			t.Fatalf("%s step %d: %s at %q=%q, want %q=%q", where, step, op, k, v, keys[pos], m[keys[pos]])
		}
	}
}

// movesNext and movesFirst give the model's position after a Next or First (-1:
// none).
func movesNext(pos, n int) int {
	if pos+1 < n {
		return pos + 1
	}
	return -1
}

func movesFirst(n int) int {
	if n > 0 {
		return 0
	}
	return -1
}
