package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// openMem opens a database on a fresh in-memory FS; see openDB for the
// cleanup it registers.
func openMem(t testing.TB, o *Options) (*DB, *vfs.MemFS) {
	t.Helper()
	fs := vfs.NewMem()
	if o == nil {
		o = &Options{}
	}
	o.FS = fs
	return openDB(t, o), fs
}

// openDB opens the database at /db on o.FS and registers a cleanup, as
// bbolt's test helper does, that checks the database's invariants
// (CheckInvariants(true): level invariants and every live table) and closes
// it, failing the test on either error. A test may close the database
// itself (to reopen it, or to test Close); the cleanup then only checks
// that a second Close returns nil. A test whose database is expected to
// fail closes it itself or opens it with Open.
func openDB(t testing.TB, o *Options) *DB {
	t.Helper()
	db, err := Open("/db", o)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := db.CheckInvariants(true); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("invariants at the end of the test: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("Close at the end of the test: %v", err)
		}
	})
	return db
}

func TestBasicAPI(t *testing.T) {
	db, _ := openMem(t, nil)

	cases := []struct {
		name       string
		key, value []byte
	}{
		{"simple", []byte("a"), []byte("1")},
		{"empty key", []byte{}, []byte("empty-key")},
		{"nil value", []byte("nilval"), nil},
		{"binary", []byte{0, 1, 2, 0xff}, []byte{0, 0, 0}},
		{"large value", []byte("large"), bytes.Repeat([]byte("x"), 1<<20)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, db.Put(c.key, c.value, nil))
			v, err := db.Get(c.key)
			require.NoError(t, err)
			require.NotNil(t, v)
			require.Equal(t, len(c.value), len(v))
			if len(c.value) > 0 {
				require.Equal(t, c.value, v)
			}
		})
	}

	// Overwrite and delete.
	require.NoError(t, db.Put([]byte("a"), []byte("2"), Sync))
	v, err := db.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
	require.NoError(t, db.Delete([]byte("a"), nil))
	_, err = db.Get([]byte("a"))
	require.ErrorIs(t, err, ErrNotFound)
	_, err = db.Get([]byte("never"))
	require.ErrorIs(t, err, ErrNotFound)

	// Get returns the caller's copy.
	require.NoError(t, db.Put([]byte("c"), []byte("abc"), nil))
	v, _ = db.Get([]byte("c"))
	v[0] = 'X'
	v2, _ := db.Get([]byte("c"))
	require.Equal(t, "abc", string(v2))
}

func TestBatch(t *testing.T) {
	db, _ := openMem(t, nil)
	b := db.NewBatch()
	require.NoError(t, b.Put([]byte("k1"), []byte("v1")))
	require.NoError(t, b.Put([]byte("k2"), []byte("v2")))
	require.NoError(t, b.Delete([]byte("k1")))
	require.Equal(t, 3, b.Len())
	require.NoError(t, db.Apply(b, Sync))
	_, err := db.Get([]byte("k1"))
	require.ErrorIs(t, err, ErrNotFound)
	v, err := db.Get([]byte("k2"))
	require.NoError(t, err)
	require.Equal(t, "v2", string(v))

	b.Reset()
	require.Equal(t, 0, b.Len())
	require.NoError(t, db.Apply(b, nil)) // empty batch is a no-op
	require.NoError(t, b.Put([]byte("k3"), []byte("v3")))
	require.NoError(t, db.Apply(b, nil))
	v, err = db.Get([]byte("k3"))
	require.NoError(t, err)
	require.Equal(t, "v3", string(v))
}

func TestTooLarge(t *testing.T) {
	db, _ := openMem(t, nil)
	big := make([]byte, MaxValueSize+1)
	require.ErrorIs(t, db.Put([]byte("k"), big, nil), ErrTooLarge)
	require.ErrorIs(t, db.Put(big, nil, nil), ErrTooLarge)
	b := db.NewBatch()
	require.NoError(t, b.Put([]byte("ok"), []byte("1")))
	require.ErrorIs(t, b.Put([]byte("k"), big), ErrTooLarge)
	require.ErrorIs(t, db.Apply(b, nil), ErrTooLarge)
	_, err := db.Get([]byte("ok"))
	require.ErrorIs(t, err, ErrNotFound, "nothing of a refused batch is written")

	// The limits themselves are allowed.
	maxVal := make([]byte, MaxValueSize)
	require.NoError(t, db.Put([]byte("max"), maxVal, nil))
	v, err := db.Get([]byte("max"))
	require.NoError(t, err)
	require.Len(t, v, MaxValueSize)
}

func TestClosed(t *testing.T) {
	db, _ := openMem(t, nil)
	require.NoError(t, db.Close())
	require.NoError(t, db.Close(), "double Close is harmless")
	require.ErrorIs(t, db.Put([]byte("a"), nil, nil), ErrClosed)
	require.ErrorIs(t, db.Delete([]byte("a"), nil), ErrClosed)
	require.ErrorIs(t, db.Merge([]byte("a"), nil, nil), ErrClosed)
	require.ErrorIs(t, db.Apply(db.NewBatch(), nil), ErrClosed)
	require.ErrorIs(t, db.Flush(), ErrClosed)
	_, err := db.Get([]byte("a"))
	require.ErrorIs(t, err, ErrClosed)
}

func TestMergeWithoutMerger(t *testing.T) {
	db, _ := openMem(t, nil)
	require.ErrorIs(t, db.Merge([]byte("a"), []byte("1"), nil), ErrNoMerger)
	b := db.NewBatch()
	require.NoError(t, b.Merge([]byte("a"), []byte("1")))
	require.ErrorIs(t, db.Apply(b, nil), ErrNoMerger)
}

func TestOptionsValidation(t *testing.T) {
	bad := []Options{
		{MemTableSize: -1},
		{MemTableSize: 10},
		{BlockSize: 3},
		{LevelMultiplier: 1},
		{L0CompactionTrigger: 8, L0StopWritesTrigger: 4},
		{L0SlowdownWritesTrigger: -1},
		{L0SlowdownWritesTrigger: 13, L0StopWritesTrigger: 12},
		{L0SlowdownWritesTrigger: 37}, // above the default stop trigger
		{Compression: Compression(99)},
		{MaxOpenFiles: 2},
	}
	for i, o := range bad {
		o.FS = vfs.NewMem()
		_, err := Open("/db", &o)
		require.ErrorIs(t, err, ErrInvalidOptions, "case %d", i)
		require.Contains(t, err.Error(), "is out of range (want ", "case %d: the error states the allowed range", i)
	}
	_, err := Open("/db", &Options{FS: vfs.NewMem(), MaxOpenFiles: 2})
	require.EqualError(t, err, "sieve: invalid options: MaxOpenFiles = 2 is out of range (want 0 for the default, or 16 or more)")
}

func TestLockAndReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	_, err = Open(dir, nil)
	require.ErrorIs(t, err, ErrLocked)
	for i := 0; i < 1000; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("v%d", i)), NoSync))
	}
	require.NoError(t, db.Delete([]byte("k0007"), NoSync))
	require.NoError(t, db.Close())

	_, err = Open(dir, &Options{ErrorIfExists: true})
	require.Error(t, err)

	db, err = Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	for i := 0; i < 1000; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
		if i == 7 {
			require.ErrorIs(t, err, ErrNotFound)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("v%d", i), string(v))
	}
}

func TestReopenManyTimes(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, MemTableSize: 64 << 10}
	model := map[string]string{}
	for round := 0; round < 8; round++ {
		db, err := Open("/db", o)
		require.NoError(t, err, "round %d", round)
		for k, v := range model {
			got, err := db.Get([]byte(k))
			require.NoError(t, err, "round %d key %s", round, k)
			require.Equal(t, v, string(got))
		}
		for i := 0; i < 500; i++ {
			k := fmt.Sprintf("r%d-k%d", round, i)
			v := fmt.Sprintf("%d-%s", round, bytes.Repeat([]byte("v"), i%300))
			require.NoError(t, db.Put([]byte(k), []byte(v), nil))
			model[k] = v
		}
		require.NoError(t, db.Close())
	}
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	db, _ := openMem(t, &Options{MemTableSize: 256 << 10})
	const writers, perWriter = 8, 500
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				k := []byte(fmt.Sprintf("w%d-%05d", w, i))
				o := NoSync
				if i%50 == 0 {
					o = Sync
				}
				if err := db.Put(k, k, o); err != nil {
					t.Error(err)
					return
				}
				if v, err := db.Get(k); err != nil || !bytes.Equal(v, k) {
					t.Errorf("read own write %s: %q %v", k, v, err)
					return
				}
			}
		}()
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				k := []byte(fmt.Sprintf("w%d-%05d", i%writers, i%perWriter))
				if _, err := db.Get(k); err != nil && !errors.Is(err, ErrNotFound) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for w := 0; w < writers; w++ {
		for i := 0; i < perWriter; i++ {
			k := []byte(fmt.Sprintf("w%d-%05d", w, i))
			v, err := db.Get(k)
			require.NoError(t, err)
			require.Equal(t, k, v)
		}
	}
}

// A database closed with more L0 tables than the trigger compacts them at
// Open, without waiting for a write.
func TestOpenCompactsAnL0OverItsTrigger(t *testing.T) {
	db, fs := openMem(t, &Options{L0CompactionTrigger: 100, L0StopWritesTrigger: 200})
	for f := 0; f < 6; f++ {
		for i := 0; i < 50; i++ {
			require.NoError(t, db.Put([]byte(fmt.Sprintf("k%04d", i*6+f)), []byte("v"), nil))
		}
		require.NoError(t, db.Flush())
	}
	v := db.versions.Current()
	require.Len(t, v.CFs[0][0], 6)
	v.Unref()
	require.NoError(t, db.Close())

	db = openDB(t, &Options{FS: fs, L0CompactionTrigger: 4})
	for {
		db.mu.Lock()
		running := db.compact.running
		db.mu.Unlock()
		v := db.versions.Current()
		n := len(v.CFs[0][0])
		v.Unref()
		if running == 0 {
			require.Less(t, n, 4, "no compaction ran after Open")
			break
		}
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 300; i++ {
		got, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
		require.NoError(t, err)
		require.Equal(t, "v", string(got))
	}
}
