package vfs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestDiskLockIsFlock checks that Default's lock is a real flock(2): another
// descriptor (as another process would hold) cannot take it meanwhile.
func TestDiskLockIsFlock(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	l, err := Default.Lock(name)
	require.NoError(t, err)

	other, err := os.OpenFile(name, os.O_RDWR, 0)
	require.NoError(t, err)
	defer other.Close()
	err = syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	require.ErrorIs(t, err, syscall.EWOULDBLOCK)

	_, err = Default.Lock(name)
	require.ErrorIs(t, err, ErrLocked)
	require.Contains(t, err.Error(), "by this process")

	require.NoError(t, l.Close())
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	_, err = Default.Lock(name)
	require.ErrorIs(t, err, ErrLocked, "held by another descriptor now")
	require.ErrorIs(t, err, syscall.EWOULDBLOCK)
	require.Contains(t, err.Error(), "by another process")
}

// pattern is the content of byte i of the concurrently written file.
func pattern(i int64) byte { return byte(i*7 + i>>8) }

func patterned(off int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern(off + int64(i))
	}
	return b
}

// TestConcurrentReadWhileWriting runs, on both file systems, one writer
// appending (and syncing) while readers ReadAt what has been written so far,
// and another goroutine lists, stats, creates and removes other files. Run
// it with -race.
func TestConcurrentReadWhileWriting(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	for _, impl := range []struct {
		name string
		fs   FS
		dir  string
	}{{"os", Default, t.TempDir()}, {"mem", NewMem(), "/db"}} {
		t.Run(impl.name, func(t *testing.T) {
			fs, dir := impl.fs, impl.dir
			require.NoError(t, fs.MkdirAll(dir, 0o755))
			name := filepath.Join(dir, "data")
			w, err := fs.Create(name)
			require.NoError(t, err)
			r, err := fs.Open(name)
			require.NoError(t, err)
			defer r.Close()

			c := &readWhileWriting{t: t, fs: fs, dir: dir, name: name, seed: seed, done: make(chan struct{})}
			var wg sync.WaitGroup
			wg.Go(func() { c.write(w) })
			for g := range 3 {
				wg.Go(func() { c.read(r, g) })
			}
			wg.Go(c.churn)
			wg.Wait()
		})
	}
}

// readWhileWriting is what TestConcurrentReadWhileWriting's goroutines
// share: written counts the bytes written so far; done closes when the
// writer is done.
type readWhileWriting struct {
	t         *testing.T
	fs        FS
	dir, name string
	seed      uint64
	written   atomic.Int64
	done      chan struct{}
}

// write appends 300 patterned chunks of random length to w, syncing now
// and then, then closes w and done.
func (c *readWhileWriting) write(w File) {
	t := c.t
	defer close(c.done)
	defer w.Close()
	rng := rand.New(rand.NewPCG(c.seed, 1))
	for i := range 300 {
		n := 1 + rng.IntN(700)
		off := c.written.Load()
		if _, err := w.Write(patterned(off, n)); err != nil {
			t.Error(err)
			return
		}
		c.written.Add(int64(n))
		if i%25 == 0 {
			if err := w.Sync(); err != nil {
				t.Error(err)
			}
		}
	}
}

// read is reader g: until done, ReadAt of random offsets of what has been
// written, which must hold the pattern, and Size at least that.
func (c *readWhileWriting) read(r File, g int) {
	t := c.t
	rng := rand.New(rand.NewPCG(c.seed, uint64(g)+10))
	buf := make([]byte, 600)
	for {
		select {
		case <-c.done:
			return
		default:
		}
		n := c.written.Load()
		if n == 0 {
			continue
		}
		off := rng.Int64N(n)
		k, err := r.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		if err != nil {
			t.Errorf("ReadAt(%d) of %d written: %v", off, n, err)
			return
		}
		if !bytes.Equal(buf[:k], patterned(off, k)) {
			t.Errorf("ReadAt(%d): wrong bytes", off)
			return
		}
		if size, err := r.Size(); err != nil || size < n {
			t.Errorf("Size %d < %d written (%v)", size, n, err)
			return
		}
	}
}

// churn, until done, creates, lists, stats and removes other files in the
// directory.
func (c *readWhileWriting) churn() {
	t, fs, dir := c.t, c.fs, c.dir
	for i := 0; ; i++ {
		select {
		case <-c.done:
			return
		default:
		}
		other := filepath.Join(dir, fmt.Sprint("other", i%3))
		if f, err := fs.Create(other); err == nil {
			f.Close()
		}
		names, err := fs.List(dir)
		if err != nil || len(names) == 0 || names[0] != "data" {
			t.Errorf("List: %v %v", names, err)
			return
		}
		if _, err := fs.Stat(c.name); err != nil {
			t.Error(err)
			return
		}
		_ = fs.Remove(other)
		_ = fs.SyncDir(dir)
	}
}

// TestCrashCloneAtomicUnderWrites: two files get increasing counters, B's
// write synced only after A's, so any crash state has B <= A. Clones taken
// concurrently with the writes must respect it: a clone is the state of
// the whole FS at one instant.
func TestCrashCloneAtomicUnderWrites(t *testing.T) {
	fs := NewMem()
	durableFile(t, fs, "A", "")
	durableFile(t, fs, "B", "")
	a, err := fs.OpenReadWrite("A")
	require.NoError(t, err)
	b, err := fs.OpenReadWrite("B")
	require.NoError(t, err)
	last := func(data []byte) uint64 {
		if len(data) < 8 {
			return 0
		}
		return binary.LittleEndian.Uint64(data[len(data)-8:])
	}

	// The writer runs until the cloner has taken its clones (or a cap on
	// the file size is reached).
	var stop, writerDone atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer writerDone.Store(true)
		for i := uint64(1); i <= 1_000_000 && !stop.Load(); i++ {
			rec := binary.LittleEndian.AppendUint64(nil, i)
			for _, f := range []File{a, b} {
				if _, err := f.Write(rec); err != nil {
					t.Error(err)
					return
				}
				if err := f.Sync(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	var hookSyncs atomic.Int64
	fs.SetDurabilityHook(func(op Op, name string) {
		// From the hook too: cloning here must neither deadlock nor race.
		if op == OpSync && name == "B" && hookSyncs.Add(1)%500 == 0 {
			c := fs.CrashClone(CrashOptions{})
			ga, _ := c.ReadFile("A")
			gb, _ := c.ReadFile("B")
			if last(gb) > last(ga) {
				t.Errorf("hook clone: B=%d > A=%d", last(gb), last(ga))
			}
		}
	})
	clones, states := 0, map[uint64]bool{}
	for ; (clones < 100 || len(states) < 20) && !writerDone.Load(); clones++ {
		c := fs.CrashClone(CrashOptions{})
		ga, err := c.ReadFile("A")
		require.NoError(t, err)
		gb, err := c.ReadFile("B")
		require.NoError(t, err)
		require.LessOrEqual(t, last(gb), last(ga), "clone %d", clones)
		states[last(ga)] = true
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	require.GreaterOrEqual(t, len(states), 10, "the clones must have raced with the writer")
	t.Logf("%d concurrent clones (%d distinct states), %d from the hook", clones, len(states), hookSyncs.Load()/500)
}
