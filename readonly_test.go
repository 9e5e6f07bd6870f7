package sieve

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadOnly(t *testing.T) {
	db, fs := openMem(t, nil)
	require.NoError(t, db.Put([]byte("flushed"), []byte("1"), nil))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Put([]byte("in-wal"), []byte("2"), nil))
	require.NoError(t, db.Close())
	before, err := fs.List("/db")
	require.NoError(t, err)

	ro, err := Open("/db", &Options{FS: fs, ReadOnly: true})
	require.NoError(t, err)
	for k, want := range map[string]string{"flushed": "1", "in-wal": "2"} {
		v, err := ro.Get([]byte(k))
		require.NoError(t, err)
		require.Equal(t, want, string(v))
	}
	require.ErrorIs(t, ro.Put([]byte("x"), nil, nil), ErrReadOnly)
	require.ErrorIs(t, ro.Flush(), ErrReadOnly)
	it := ro.NewIter(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 2, n)
	require.NoError(t, ro.Close())
	after, err := fs.List("/db")
	require.NoError(t, err)
	require.Equal(t, before, after, "a read-only open writes nothing")

	_, err = Open("/nothing", &Options{FS: fs, ReadOnly: true})
	require.Error(t, err)
}
