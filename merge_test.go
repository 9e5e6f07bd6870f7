package sieve

import (
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// counterMerger adds decimal integers: associative and commutative.
type counterMerger struct{}

func (counterMerger) Name() string { return "test.counter" }

func (counterMerger) FullMerge(key, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	var sum int64
	if hasBase {
		v, err := strconv.ParseInt(string(base), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("base %q: %w", base, err)
		}
		sum = v
	}
	for _, op := range ops {
		v, err := strconv.ParseInt(string(op), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("operand %q: %w", op, err)
		}
		sum += v
	}
	return []byte(strconv.FormatInt(sum, 10)), nil
}

func (m counterMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	v, err := m.FullMerge(key, nil, false, ops)
	return v, err == nil
}

// appendMerger concatenates operands with commas: associative, not
// commutative — it catches operands merged out of order.
type appendMerger struct{}

func (appendMerger) Name() string { return "test.append" }

func (appendMerger) FullMerge(key, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	out := []byte{}
	if hasBase {
		out = append(out, base...)
	}
	for _, op := range ops {
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(out, op...)
	}
	return out, nil
}

func (m appendMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	v, _ := m.FullMerge(key, nil, false, ops)
	return v, true
}

// failingMerger fails on operands equal to "bad".
type failingMerger struct{ appendMerger }

func (failingMerger) Name() string { return "test.failing" }

func (f failingMerger) FullMerge(key, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	for _, op := range ops {
		if string(op) == "bad" {
			return nil, errors.New("bad operand")
		}
	}
	return f.appendMerger.FullMerge(key, base, hasBase, ops)
}

// PartialMerge declines to fold a "bad" operand, so that it reaches a full
// merge intact.
func (f failingMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	for _, op := range ops {
		if string(op) == "bad" {
			return nil, false
		}
	}
	return f.appendMerger.PartialMerge(key, ops)
}

func TestMergeBasics(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: appendMerger{}})
	k := []byte("k")
	require.NoError(t, db.Merge(k, []byte("a"), nil))
	require.NoError(t, db.Merge(k, []byte("b"), nil))
	v, err := db.Get(k)
	require.NoError(t, err)
	require.Equal(t, "a,b", string(v))
	require.NoError(t, db.Put(k, []byte("base"), nil))
	require.NoError(t, db.Merge(k, []byte("c"), nil))
	v, _ = db.Get(k)
	require.Equal(t, "base,c", string(v))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Merge(k, []byte("d"), nil))
	v, _ = db.Get(k)
	require.Equal(t, "base,c,d", string(v))
	require.NoError(t, db.Delete(k, nil))
	require.NoError(t, db.Merge(k, []byte("e"), nil))
	v, _ = db.Get(k)
	require.Equal(t, "e", string(v))
}

func TestMergerNameRecorded(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs, Merger: appendMerger{}})
	require.NoError(t, err)
	require.NoError(t, db.Merge([]byte("k"), []byte("x"), nil))
	require.NoError(t, db.Close())

	_, err = Open("/db", &Options{FS: fs, Merger: counterMerger{}})
	require.Error(t, err, "another merger name")
	require.Contains(t, err.Error(), "test.append")

	// Without the merger: reads of merge operands fail clearly, and so
	// does Merge; plain keys still read.
	db, err = Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	_, err = db.Get([]byte("k"))
	require.ErrorIs(t, err, ErrNoMerger)
	require.Contains(t, err.Error(), "test.append")
	require.ErrorIs(t, db.Merge([]byte("k"), []byte("y"), nil), ErrNoMerger)
	require.NoError(t, db.Close())

	db, err = Open("/db", &Options{FS: fs, Merger: appendMerger{}})
	require.NoError(t, err)
	v, err := db.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, "x", string(v))
	require.NoError(t, db.Close())
}

func TestMergerErrorFailsOnlyThatKey(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: failingMerger{}})
	require.NoError(t, db.Merge([]byte("bad-key"), []byte("bad"), nil))
	require.NoError(t, db.Merge([]byte("good-key"), []byte("fine"), nil))
	_, err := db.Get([]byte("bad-key"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "bad operand")
	v, err := db.Get([]byte("good-key"))
	require.NoError(t, err)
	require.Equal(t, "fine", string(v))
}

// TestSuccessiveMergeCap stacks 10,000 operands on one key: the memtable
// cap replaces long stacks by values, so a Get reads few operands.
func TestSuccessiveMergeCap(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: counterMerger{}})
	k := []byte("hot")
	for i := 1; i <= 10000; i++ {
		require.NoError(t, db.Merge(k, []byte("1"), nil))
	}
	v, err := db.Get(k)
	require.NoError(t, err)
	require.Equal(t, "10000", string(v))
	st, err := db.lookup(0, k, db.visibleSeq.Load())
	require.NoError(t, err)
	require.LessOrEqual(t, len(st.opEnds), db.opts.MaxSuccessiveMerges)
	require.NoError(t, db.Flush())
	v, err = db.Get(k)
	require.NoError(t, err)
	require.Equal(t, "10000", string(v))
}

// TestMergeModel mixes puts, deletes, merges and flushes over a small key
// space and compares reads with a model.
func TestMergeModel(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	db, _ := openMem(t, &Options{Merger: appendMerger{}, MemTableSize: 64 << 10, MaxSuccessiveMerges: 8})
	model := map[string]string{}
	for i := 0; i < 5000; i++ {
		k := fmt.Sprintf("k%02d", rng.Intn(40))
		switch r := rng.Intn(10); {
		case r < 5:
			op := fmt.Sprintf("m%d", i)
			require.NoError(t, db.Merge([]byte(k), []byte(op), nil))
			if v, ok := model[k]; ok && v != "" {
				model[k] = v + "," + op
			} else {
				model[k] = op
			}
		case r < 7:
			v := fmt.Sprintf("p%d", i)
			require.NoError(t, db.Put([]byte(k), []byte(v), nil))
			model[k] = v
		case r < 8:
			require.NoError(t, db.Delete([]byte(k), nil))
			delete(model, k)
		case r < 9:
			if rng.Intn(20) == 0 {
				require.NoError(t, db.Flush())
			}
		default:
			v, err := db.Get([]byte(k))
			if want, ok := model[k]; ok {
				require.NoError(t, err)
				require.Equal(t, want, string(v), "key %s at op %d", k, i)
			} else {
				require.ErrorIs(t, err, ErrNotFound)
			}
		}
	}
}
