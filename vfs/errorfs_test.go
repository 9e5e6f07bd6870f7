package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// workload exercises every operation kind once or more and stops at the
// first error, which it returns.
func workload(fs FS) error {
	steps := []func() error{}
	var f, r File
	var l io.Closer
	step := func(fn func() error) { steps = append(steps, fn) }
	step(func() error { return fs.MkdirAll("db", 0o755) })
	step(func() (err error) { l, err = fs.Lock("db/LOCK"); return err })
	step(func() (err error) { f, err = fs.Create("db/a.tmp"); return err })
	step(func() error { _, err := f.Write([]byte("hello")); return err })
	step(func() error { _, err := f.Write([]byte(" world")); return err })
	step(func() error { return f.Truncate(5) })
	step(func() error { return f.Sync() })
	step(func() error { return f.Close() })
	step(func() error { return fs.Rename("db/a.tmp", "db/a") })
	step(func() error { return fs.SyncDir("db") })
	step(func() (err error) { r, err = fs.Open("db/a"); return err })
	step(func() error {
		buf := make([]byte, 5)
		_, err := r.ReadAt(buf, 0)
		if err == nil && string(buf) != "hello" {
			err = fmt.Errorf("read %q", buf)
		}
		return err
	})
	step(func() error { _, err := r.Size(); return err })
	step(func() error { return r.Close() })
	step(func() error { _, err := fs.List("db"); return err })
	step(func() error { _, err := fs.Stat("db/a"); return err })
	step(func() error { return fs.Remove("db/a") })
	step(func() error { return l.Close() })
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

func TestErrorFSCounts(t *testing.T) {
	e := NewErrorFS(NewMem(), ErrorOptions{})
	require.NoError(t, workload(e))
	require.EqualValues(t, 17, e.Ops()) // Lock's Close is not a File.Close
	want := map[Op]int64{
		OpCreate: 1, OpOpen: 1, OpRead: 1, OpWrite: 2, OpSync: 1, OpTruncate: 1,
		OpClose: 2, OpRemove: 1, OpRename: 1, OpMkdir: 1, OpList: 1, OpStat: 2,
		OpLock: 1, OpSyncDir: 1,
	}
	for op := range numOps {
		require.Equal(t, want[op], e.Count(op), "%v", op)
	}
	require.Zero(t, e.Injected())
	require.EqualValues(t, 11, e.Written())
}

// TestErrorFSEveryIndex fails each operation of the workload in turn.
func TestErrorFSEveryIndex(t *testing.T) {
	counter := NewErrorFS(NewMem(), ErrorOptions{})
	require.NoError(t, workload(counter))
	for n := int64(1); n <= counter.Ops(); n++ {
		for _, persistent := range []bool{false, true} {
			e := NewErrorFS(NewMem(), ErrorOptions{Nth: n, Persistent: persistent})
			err := workload(e)
			require.ErrorIs(t, err, ErrInjected, "n=%d", n)
			require.ErrorIs(t, err, syscall.EIO, "n=%d", n)
			require.Equal(t, n, e.Ops(), "the workload stops at the failed operation")
			require.EqualValues(t, 1, e.Injected())
			_, err = e.List("")
			if persistent {
				require.ErrorIs(t, err, ErrInjected, "persistent: later operations fail too")
			} else {
				require.NoError(t, err, "transient: later operations succeed")
			}
		}
	}
}

func TestErrorFSSelection(t *testing.T) {
	t.Run("by kind", func(t *testing.T) {
		mem := NewMem()
		e := NewErrorFS(mem, ErrorOptions{Ops: OpsOf(OpSync), Nth: 2})
		f, err := e.Create("f")
		require.NoError(t, err)
		for i, wantErr := range []bool{false, true, false} {
			_, err := f.Write([]byte{'a' + byte(i)})
			require.NoError(t, err)
			err = f.Sync()
			require.Equal(t, wantErr, err != nil, "sync %d: %v", i+1, err)
		}
		require.EqualValues(t, 3, e.Ops())
		require.EqualValues(t, 3, e.Count(OpWrite))
	})
	t.Run("by name", func(t *testing.T) {
		e := NewErrorFS(NewMem(), ErrorOptions{
			Match:      func(op Op, name string) bool { return name == "MANIFEST" },
			Nth:        1,
			Persistent: true,
		})
		writeFile(t, e, "other", "x", true)
		_, err := e.Create("MANIFEST")
		require.ErrorIs(t, err, ErrInjected)
		require.NoError(t, e.Rename("other", "other2"))
		require.ErrorIs(t, e.Rename("other2", "MANIFEST"), ErrInjected)
	})
	t.Run("custom error", func(t *testing.T) {
		e := NewErrorFS(NewMem(), ErrorOptions{Nth: 1, Err: os.ErrPermission})
		_, err := e.Create("f")
		require.ErrorIs(t, err, os.ErrPermission)
		require.ErrorIs(t, err, ErrInjected)
		var pe *os.PathError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "f", pe.Path)
	})
}

// TestErrorFSFailedOpNotPerformed: an injected failure leaves no trace of
// the operation.
func TestErrorFSFailedOpNotPerformed(t *testing.T) {
	mem := NewMem()
	durableFile(t, mem, "a", "v")
	fail := func(op Op) *ErrorFS { return NewErrorFS(mem, ErrorOptions{Ops: OpsOf(op), Nth: 1}) }

	require.Error(t, fail(OpRename).Rename("a", "b"))
	require.Error(t, fail(OpRemove).Remove("a"))
	_, err := fail(OpCreate).Create("c")
	require.Error(t, err)
	require.Equal(t, map[string]string{"a": "v"}, tree(t, mem))

	e := fail(OpWrite)
	f, err := e.OpenReadWrite("a")
	require.NoError(t, err)
	n, err := f.Write([]byte("lost"))
	require.Zero(t, n)
	require.Error(t, err)
	_, err = f.Write([]byte("kept"))
	require.NoError(t, err)

	e = fail(OpSync)
	f, err = e.OpenReadWrite("a")
	require.NoError(t, err)
	require.Error(t, f.Sync())
	require.Equal(t, map[string]string{"a": "v"}, tree(t, mem.CrashClone(CrashOptions{})), "the failed sync synced nothing")

	e = fail(OpClose)
	f, err = e.Open("a")
	require.NoError(t, err)
	require.ErrorIs(t, f.Close(), ErrInjected)
	_, err = f.ReadAt(make([]byte, 1), 0)
	require.ErrorIs(t, err, os.ErrClosed, "a failed Close still closes")
}

func TestErrorFSNoSpace(t *testing.T) {
	mem := NewMem()
	e := NewErrorFS(mem, ErrorOptions{SpaceLimit: 10})
	f, err := e.Create("f")
	require.NoError(t, err)
	n, err := f.Write([]byte("123456"))
	require.NoError(t, err)
	require.Equal(t, 6, n)
	n, err = f.Write([]byte("789abc"))
	require.Equal(t, 4, n, "the bytes that fit are written")
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorIs(t, err, ErrInjected)
	n, err = f.Write([]byte("x"))
	require.Zero(t, n)
	require.ErrorIs(t, err, syscall.ENOSPC)
	got, err := mem.ReadFile("f")
	require.NoError(t, err)
	require.Equal(t, "123456789a", string(got))
	require.EqualValues(t, 2, e.Injected())

	e.SetSpaceLimit(12)
	_, err = f.Write([]byte("bc"))
	require.NoError(t, err)
	e.SetSpaceLimit(0)
	_, err = f.Write(make([]byte, 1000))
	require.NoError(t, err)
	require.EqualValues(t, 1012, e.Written())
}

// TestErrorFSConcurrent: with many goroutines, exactly one operation is the
// Nth.
func TestErrorFSConcurrent(t *testing.T) {
	e := NewErrorFS(NewMem(), ErrorOptions{Ops: OpsOf(OpWrite), Nth: 500})
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for g := range 8 {
		f, err := e.Create(fmt.Sprint("f", g))
		require.NoError(t, err)
		wg.Go(func() {
			for range 100 {
				if _, err := f.Write([]byte("x")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	require.Len(t, all, 1)
	require.ErrorIs(t, all[0], ErrInjected)
	require.EqualValues(t, 800, e.Ops())
}

// TestSkipSyncFS shows the self-check the crash test relies on: a workload
// that needs each of its syncs, run with each sync skipped in turn, loses
// data in a crash every time.
func TestSkipSyncFS(t *testing.T) {
	run := func(fs FS) {
		require.NoError(t, fs.MkdirAll("wal", 0o755))
		writeFile(t, fs, "wal/LOG", "record", true) // sync 1
		require.NoError(t, fs.SyncDir("wal"))       // sync 2
		writeFile(t, fs, "tmp", "v2", true)         // sync 3
		require.NoError(t, fs.Rename("tmp", "CURRENT"))
		require.NoError(t, fs.SyncDir("")) // sync 4
	}
	want := map[string]string{"wal/": "", "wal/LOG": "record", "CURRENT": "v2"}

	mem := NewMem()
	counter := NewSkipSyncFS(mem, 0)
	run(counter)
	require.EqualValues(t, 4, counter.Syncs())
	require.Equal(t, want, tree(t, mem.CrashClone(CrashOptions{})))
	_, _, skipped := counter.Skipped()
	require.False(t, skipped)

	wantSkipped := []string{"sync wal/LOG", "syncdir wal", "sync tmp", "syncdir "}
	for n := int64(1); n <= counter.Syncs(); n++ {
		mem := NewMem()
		s := NewSkipSyncFS(mem, n)
		run(s)
		op, name, ok := s.Skipped()
		require.True(t, ok)
		require.Equal(t, wantSkipped[n-1], op.String()+" "+name)
		require.NotEqual(t, want, tree(t, mem.CrashClone(CrashOptions{})), "skipping %v %q went unnoticed", op, name)
		require.Equal(t, want, tree(t, mem), "without a crash nothing is missing")
	}
}

func TestOpSet(t *testing.T) {
	require.Equal(t, "{sync,syncdir}", SyncOps.String())
	require.True(t, AllOps.Has(OpClose))
	require.False(t, MutatingOps.Has(OpRead))
	require.Equal(t, AllOps, MutatingOps|ReadOps|OpsOf(OpClose))
	require.Zero(t, MutatingOps&ReadOps)
	require.Equal(t, "op(200)", Op(200).String())
	require.True(t, errors.Is(NewErrorFS(NewMem(), ErrorOptions{Nth: 1}).MkdirAll("x", 0), ErrInjected))
}
