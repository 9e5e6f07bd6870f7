package sieve

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// first4 is a fixed-length prefix: "p012" of "p012/7".
func first4(k []byte) int { return 4 }

// writeStripedTables flushes n L0 tables that all span the keyspace
// ("a" .. "z"), table i holding the prefixes p with p%n == i, ten keys
// each, among prefixes p000..p(np-1).
func writeStripedTables(t testing.TB, db *DB, n, np int) {
	for i := 0; i < n; i++ {
		require.NoError(t, db.Put([]byte("a"), []byte("a"), nil))
		require.NoError(t, db.Put([]byte("z"), []byte("z"), nil))
		for p := i; p < np; p += n {
			for j := 0; j < 10; j++ {
				require.NoError(t, db.Put([]byte(fmt.Sprintf("p%03d/%d", p, j)), []byte(fmt.Sprintf("v%d", p)), nil))
			}
		}
		require.NoError(t, db.Flush())
	}
}

// TestSeekPrefixGESkipsTables checks on eight overlapping L0 tables that
// a seek of a present prefix reads about one table and finds its keys,
// that a seek of an absent prefix reads about none, and that the metrics
// count the probes apart from point lookups'.
func TestSeekPrefixGESkipsTables(t *testing.T) {
	db, _ := openMem(t, &Options{Prefix: first4, PrefixName: "first4", L0CompactionTrigger: 20, L0StopWritesTrigger: 40})
	writeStripedTables(t, db, 8, 64)
	require.Equal(t, int64(8), db.Metrics().Levels[0].NumFiles)
	it := db.NewIter(nil)
	defer it.Close()
	for p := 0; p < 64; p++ {
		var got []string
		for ok := it.SeekPrefixGE([]byte(fmt.Sprintf("p%03d/3", p))); ok; ok = it.Next() {
			got = append(got, string(it.Key()))
		}
		require.NoError(t, it.Error())
		want := []string{}
		for j := 3; j < 10; j++ {
			want = append(want, fmt.Sprintf("p%03d/%d", p, j))
		}
		require.Equal(t, want, nonNil(got))
	}
	m := db.Metrics().PrefixSeeks
	require.EqualValues(t, 64, m.Seeks)
	require.EqualValues(t, 64*8, m.Checks)
	require.GreaterOrEqual(t, m.Negatives, int64(64*7*9/10), "present prefixes: most of the 7 other tables skipped")
	require.Zero(t, m.Unfiltered)
	require.Zero(t, db.Metrics().Filter.Checks, "prefix probes counted as point lookups'")
	// The memtable's key filter holds prefixes too.
	require.NoError(t, db.Put([]byte("p000/x"), nil, nil))
	require.False(t, it.SeekPrefixGE([]byte("p999")))
	require.EqualValues(t, 1, db.Metrics().PrefixSeeks.MemtablesSkipped)
	m = db.Metrics().PrefixSeeks
	for p := 64; p < 128; p++ {
		require.False(t, it.SeekPrefixGE([]byte(fmt.Sprintf("p%03d", p))))
		require.NoError(t, it.Error())
	}
	m2 := db.Metrics().PrefixSeeks
	require.GreaterOrEqual(t, m2.Negatives-m.Negatives, int64(64*8*9/10), "absent prefixes: most tables skipped")
	t.Logf("%s", m2)
	require.Contains(t, db.Metrics().String(), "prefix seeks: 129,")
	// Back to the whole keyspace.
	require.True(t, it.SeekGE([]byte("p063/9")))
	require.True(t, it.Next())
	require.Equal(t, "z", string(it.Key()))
}

// TestSeekPrefixGEBounds checks the prefix confinement against the
// iterator's bounds and Prev within the prefix.
func TestSeekPrefixGEBounds(t *testing.T) {
	db, _ := openMem(t, &Options{Prefix: first4, PrefixName: "first4"})
	writeStripedTables(t, db, 2, 4)
	it := db.NewIter(&IterOptions{LowerBound: []byte("p001/2"), UpperBound: []byte("p002/5")})
	defer it.Close()
	require.True(t, it.SeekPrefixGE([]byte("p001")))
	require.Equal(t, "p001/2", string(it.Key()), "lower bound")
	require.False(t, it.Prev())
	require.True(t, it.SeekPrefixGE([]byte("p002/1")))
	require.Equal(t, "p002/1", string(it.Key()))
	for _, want := range []string{"p002/2", "p002/3", "p002/4"} {
		require.True(t, it.Next())
		require.Equal(t, want, string(it.Key()))
	}
	require.False(t, it.Next(), "upper bound")
	require.True(t, it.SeekPrefixGE([]byte("p002/3")))
	require.True(t, it.Prev())
	require.Equal(t, "p002/2", string(it.Key()))
	require.True(t, it.Prev())
	require.True(t, it.Prev())
	require.Equal(t, "p002/0", string(it.Key()))
	require.False(t, it.Prev(), "Prev stops at the prefix's first key")
	require.True(t, it.First())
	require.Equal(t, "p001/2", string(it.Key()))
	require.NoError(t, it.Error())
}

// TestSeekPrefixGEErrors checks the option checks and SeekPrefixGE on a
// family without a prefix function.
func TestSeekPrefixGEErrors(t *testing.T) {
	_, err := Open("/db", &Options{FS: nil, Prefix: first4})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = Open("/db", &Options{PrefixName: "x"})
	require.ErrorIs(t, err, ErrInvalidOptions)
	db, _ := openMem(t, nil)
	require.NoError(t, db.Put([]byte("p000/1"), nil, nil))
	it := db.NewIter(nil)
	require.False(t, it.SeekPrefixGE([]byte("p000")))
	require.ErrorIs(t, it.Error(), ErrNoPrefix)
	require.False(t, it.First(), "the error is sticky")
	require.ErrorIs(t, it.Close(), ErrNoPrefix)
	_, err = db.OpenColumnFamily("cf", &ColumnFamilyOptions{Prefix: first4})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// TestSeekPrefixGEOldTables checks that tables written without prefixes,
// or under another PrefixName, are read, never skipped, and that a
// column family's own prefix function is used.
func TestSeekPrefixGEOldTables(t *testing.T) {
	db, fs := openMem(t, &Options{L0CompactionTrigger: 20, L0StopWritesTrigger: 40})
	writeStripedTables(t, db, 2, 8)
	require.NoError(t, db.Close())
	for _, name := range []string{"first4", "first4-v2"} {
		db = openDB(t, &Options{FS: fs, Prefix: first4, PrefixName: name, L0CompactionTrigger: 20, L0StopWritesTrigger: 40})
		it := db.NewIter(nil)
		n := 0
		for ok := it.SeekPrefixGE([]byte("p005")); ok; ok = it.Next() {
			n++
		}
		require.NoError(t, it.Close())
		require.Equal(t, 10, n)
		m := db.Metrics().PrefixSeeks
		require.Zero(t, m.Checks)
		require.Positive(t, m.Unfiltered)
		writeStripedTables(t, db, 1, 8) // tables under this name
		require.NoError(t, db.Close())
	}
	db = openDB(t, &Options{FS: fs, L0CompactionTrigger: 20, L0StopWritesTrigger: 40})
	cf, err := db.OpenColumnFamily("cf", &ColumnFamilyOptions{Prefix: first4, PrefixName: "first4"})
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		for _, k := range []string{"a", fmt.Sprintf("p%03d/0", i), "z"} {
			require.NoError(t, cf.Put([]byte(k), nil, nil))
		}
		require.NoError(t, db.Flush())
	}
	it := cf.NewIter(nil)
	require.True(t, it.SeekPrefixGE([]byte("p002")))
	require.True(t, bytes.Equal(it.Key(), []byte("p002/0")))
	require.False(t, it.Next())
	require.NoError(t, it.Close())
	require.Positive(t, cf.Metrics().PrefixSeeks.Negatives)
}

func TestPrefixSuccessor(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"", ""}, {"a", "b"}, {"a\xff", "b"}, {"\xff\xff", ""}, {"ab", "ac"}} {
		got := prefixSuccessor(nil, []byte(c.in))
		require.Equal(t, c.want, string(got), "%q", c.in)
		require.Equal(t, c.want == "", got == nil)
	}
}
