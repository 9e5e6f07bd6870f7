package vfs

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// The conformance suite runs the same scripts against Default (in a
// temporary directory) and against a MemFS (under the same absolute path),
// and holds both to the same expected output, so MemFS behaves as the
// operating system does wherever the engine can tell.
//
// Script commands, one per line: paths are relative to the test directory;
// a handle is named by the path that opened it, or by a trailing "@name".
//
//	create P [@h] | open P [@h] | openrw P [@h]  -> ok | err E
//	write H DATA | sync H | truncate H N | close H -> ok | err E
//	readat H OFF LEN     -> "bytes" (quoted) [EOF] | err E
//	size H               -> N
//	remove P | rename P Q | mkdir P | syncdir P  -> ok | err E
//	list P               -> names separated by spaces, or (empty)
//	stat P               -> file N | dir
//	lock P [@h] | unlock H -> ok | err E
//
// Errors print as the errno's name (ENOENT, ...), "locked" for ErrLocked
// and "closed" for os.ErrClosed.
var conformanceScripts = []struct {
	name   string
	script string
}{
	{"write read size", `
create a                -> ok
write a hello           -> ok
write a _world          -> ok
readat a 0 5            -> "hello"
readat a 6 20           -> "world" EOF
readat a 11 4           -> "" EOF
readat a 50 4           -> "" EOF
readat a -1 4           -> err negative offset
size a                  -> 11
stat a                  -> file 11
list .                  -> a
open a @r               -> ok
readat r 0 11           -> "hello_world"
write r x               -> err EBADF
truncate r 1            -> err EINVAL
sync r                  -> ok
close r                 -> ok
close a                 -> ok
close a                 -> err closed
write a x               -> err closed
readat a 0 1            -> err closed
sync a                  -> err closed
size a                  -> err closed
`},
	{"missing things", `
open nope               -> err ENOENT
openrw nope             -> err ENOENT
create nodir/a          -> err ENOENT
remove nope             -> err ENOENT
rename nope b           -> err ENOENT
list nodir              -> err ENOENT
stat nope               -> err ENOENT
syncdir nodir           -> err ENOENT
lock nodir/LOCK         -> err ENOENT
create a                -> ok
rename a nodir/b        -> err ENOENT
list .                  -> a
`},
	{"files and directories mixed up", `
create f                -> ok
mkdir d/e               -> ok
create f/g              -> err ENOTDIR
mkdir f/g               -> err ENOTDIR
list f                  -> err ENOTDIR
create d                -> err EISDIR
openrw d                -> err EISDIR
remove d                -> err ENOTEMPTY
rename f d              -> err EEXIST
rename d f              -> err ENOTDIR
rename d d/e/x          -> err EINVAL
mkdir x/y               -> ok
rename x d              -> err EEXIST
rename x x              -> err EEXIST
rename x d/e/x          -> ok
stat d/e/x/y            -> dir
stat d                  -> dir
list .                  -> d f
`},
	{"append and truncate", `
create a                -> ok
write a 0123456789      -> ok
truncate a 4            -> ok
write a X               -> ok
readat a 0 10           -> "0123X" EOF
truncate a 7            -> ok
readat a 0 10           -> "0123X\x00\x00" EOF
write a Y               -> ok
size a                  -> 8
truncate a -1           -> err EINVAL
close a                 -> ok
openrw a                -> ok
write a Z               -> ok
readat a 0 20           -> "0123X\x00\x00YZ" EOF
close a                 -> ok
`},
	{"create truncates the same inode", `
create a @w             -> ok
write w 12345           -> ok
open a @r               -> ok
create a @w2            -> ok
readat r 0 5            -> "" EOF
write w2 ab             -> ok
readat r 0 5            -> "ab" EOF
write w cd              -> ok
readat r 0 5            -> "abcd" EOF
`},
	{"rename keeps data and replaces", `
create a                -> ok
write a new             -> ok
create b                -> ok
write b old             -> ok
open b @oldb            -> ok
rename a b              -> ok
list .                  -> b
readat oldb 0 10        -> "old" EOF
open b @newb            -> ok
readat newb 0 10        -> "new" EOF
write a +               -> ok
readat newb 0 10        -> "new+" EOF
rename b b              -> ok
stat a                  -> err ENOENT
mkdir d/sub             -> ok
create d/sub/f          -> ok
rename d e              -> ok
list e/sub              -> f
mkdir empty             -> ok
rename e empty          -> err EEXIST
list .                  -> b e empty
`},
	{"removed file stays open", `
create a                -> ok
write a data            -> ok
open a @r               -> ok
remove a                -> ok
list .                  -> (empty)
stat a                  -> err ENOENT
readat r 0 10           -> "data" EOF
write a more            -> ok
sync a                  -> ok
readat r 0 10           -> "datamore" EOF
size r                  -> 8
create a @fresh         -> ok
size fresh              -> 0
`},
	{"directories", `
mkdir x/y/z             -> ok
mkdir x/y/z             -> ok
mkdir x/y/../w          -> ok
list x                  -> w y
list x/y/z              -> (empty)
stat x/y                -> dir
create x/y/z/f          -> ok
syncdir x/y/z           -> ok
syncdir .               -> ok
remove x/y/z            -> err ENOTEMPTY
remove x/y/z/f          -> ok
remove x/y/z            -> ok
list x/y                -> (empty)
list ./x/../x           -> w y
`},
	{"locks", `
lock LOCK @l1           -> ok
lock LOCK @l2           -> err locked
lock ./LOCK @l3         -> err locked
list .                  -> LOCK
stat LOCK               -> file 0
unlock l1               -> ok
unlock l1               -> err closed
lock LOCK @l4           -> ok
lock OTHER              -> ok
unlock l4               -> ok
unlock OTHER            -> ok
mkdir d                 -> ok
lock d                  -> err EISDIR
`},
}

func TestConformance(t *testing.T) {
	for _, sc := range conformanceScripts {
		t.Run(sc.name, func(t *testing.T) {
			root := t.TempDir()
			mem := NewMem()
			require.NoError(t, mem.MkdirAll(root, 0o755))
			for _, impl := range []struct {
				name string
				fs   FS
			}{{"os", Default}, {"mem", mem}} {
				t.Run(impl.name, func(t *testing.T) {
					runScript(t, impl.fs, filepath.Join(root, impl.name), sc.script)
				})
			}
		})
	}
}

func runScript(t *testing.T, fs FS, dir, script string) {
	require.NoError(t, fs.MkdirAll(dir, 0o755))
	r := &scriptRunner{fs: fs, dir: dir, files: map[string]File{}, locks: map[string]io.Closer{}}
	defer r.closeAll()
	for i, line := range strings.Split(strings.TrimSpace(script), "\n") {
		in, want, ok := strings.Cut(line, "->")
		require.True(t, ok, "line %d: %q has no ->", i+1, line)
		in, want = strings.TrimSpace(in), strings.TrimSpace(want)
		require.Equal(t, want, r.run(strings.Fields(in)), "line %d: %s", i+1, in)
	}
}

type scriptRunner struct {
	fs    FS
	dir   string
	files map[string]File
	locks map[string]io.Closer
}

func (r *scriptRunner) closeAll() {
	for _, f := range r.files {
		f.Close()
	}
	for _, l := range r.locks {
		l.Close()
	}
}

func (r *scriptRunner) path(p string) string { return filepath.Join(r.dir, p) }

// handle returns the handle name of an opening command: "@h" if given,
// else the path.
func handle(args []string) string {
	if last := args[len(args)-1]; strings.HasPrefix(last, "@") {
		return last[1:]
	}
	return args[1]
}

// run runs one script command and returns what it printed.
func (r *scriptRunner) run(args []string) string {
	switch args[0] {
	case "write", "sync", "truncate", "close", "readat", "size":
		if r.files[args[1]] == nil {
			return "no handle"
		}
	case "unlock":
		if r.locks[args[1]] == nil {
			return "no handle"
		}
	}
	switch args[0] {
	case "create", "open", "openrw":
		return r.open(args)
	case "write", "sync", "truncate", "close", "readat", "size":
		return r.runFile(args)
	case "remove", "rename", "mkdir", "syncdir":
		return r.runChange(args)
	case "list", "stat":
		return r.runQuery(args)
	case "lock":
		l, err := r.fs.Lock(r.path(args[1]))
		if err == nil {
			r.locks[handle(args)] = l
		}
		return errString(err)
	case "unlock":
		return errString(r.locks[args[1]].Close())
	}
	panic("unknown command " + args[0])
}

// scriptNum is args[i] as a number.
func scriptNum(args []string, i int) int64 {
	n, err := strconv.ParseInt(args[i], 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// open runs create, open and openrw: the new handle replaces (and closes)
// one of the same name.
func (r *scriptRunner) open(args []string) string {
	var f File
	var err error
	switch args[0] {
	case "create":
		f, err = r.fs.Create(r.path(args[1]))
	case "open":
		f, err = r.fs.Open(r.path(args[1]))
	default:
		f, err = r.fs.OpenReadWrite(r.path(args[1]))
	}
	if err == nil {
		if old := r.files[handle(args)]; old != nil {
			old.Close()
		}
		r.files[handle(args)] = f
	}
	return errString(err)
}

// runFile runs a command on the open handle args[1].
func (r *scriptRunner) runFile(args []string) string {
	f := r.files[args[1]]
	switch args[0] {
	case "write":
		_, err := f.Write([]byte(args[2]))
		return errString(err)
	case "sync":
		return errString(f.Sync())
	case "truncate":
		return errString(f.Truncate(scriptNum(args, 2)))
	case "close":
		return errString(f.Close())
	case "readat":
		buf := make([]byte, scriptNum(args, 3))
		n, err := f.ReadAt(buf, scriptNum(args, 2))
		switch {
		case err == io.EOF:
			return strconv.Quote(string(buf[:n])) + " EOF"
		case err != nil:
			return errString(err)
		}
		return strconv.Quote(string(buf[:n]))
	default: // size
		n, err := f.Size()
		if err != nil {
			return errString(err)
		}
		return strconv.FormatInt(n, 10)
	}
}

// runChange runs a command changing the namespace.
func (r *scriptRunner) runChange(args []string) string {
	switch args[0] {
	case "remove":
		return errString(r.fs.Remove(r.path(args[1])))
	case "rename":
		return errString(r.fs.Rename(r.path(args[1]), r.path(args[2])))
	case "mkdir":
		return errString(r.fs.MkdirAll(r.path(args[1]), 0o755))
	default: // syncdir
		return errString(r.fs.SyncDir(r.path(args[1])))
	}
}

// runQuery runs list or stat.
func (r *scriptRunner) runQuery(args []string) string {
	if args[0] == "list" {
		names, err := r.fs.List(r.path(args[1]))
		switch {
		case err != nil:
			return errString(err)
		case len(names) == 0:
			return "(empty)"
		}
		return strings.Join(names, " ")
	}
	fi, err := r.fs.Stat(r.path(args[1]))
	switch {
	case err != nil:
		return errString(err)
	case fi.IsDir():
		return "dir"
	}
	if fi.Name() != filepath.Base(args[1]) {
		return "wrong name " + fi.Name()
	}
	return fmt.Sprintf("file %d", fi.Size())
}

var errnoNames = map[syscall.Errno]string{
	syscall.ENOENT: "ENOENT", syscall.EEXIST: "EEXIST", syscall.ENOTDIR: "ENOTDIR",
	syscall.EISDIR: "EISDIR", syscall.ENOTEMPTY: "ENOTEMPTY", syscall.EBADF: "EBADF",
	syscall.EINVAL: "EINVAL", syscall.EBUSY: "EBUSY", syscall.EIO: "EIO",
	syscall.ENOSPC: "ENOSPC",
}

func errString(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrLocked):
		return "err locked"
	case errors.Is(err, os.ErrClosed):
		return "err closed"
	case strings.Contains(err.Error(), "negative offset"):
		return "err negative offset"
	case errors.As(err, &errno) && errnoNames[errno] != "":
		return "err " + errnoNames[errno]
	}
	return "err " + err.Error()
}

// TestConformanceRandom runs random scripts against both file systems and
// requires the same output from each, command by command. File and
// directory names are kept apart so that no command can turn one into the
// other (Open of a directory is where the two may differ).
func TestConformanceRandom(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	rng := rand.New(rand.NewPCG(seed, 2))
	files := []string{"a", "b", "d/a", "d/b", "e/f/x"}
	dirs := []string{"d", "e", "e/f"}
	handles := []string{"@h0", "@h1", "@h2", "@h3"}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	h := func() string { return pick(handles)[1:] }
	gen := func() string {
		switch rng.IntN(16) {
		case 0, 1:
			return "create " + pick(files) + " " + pick(handles)
		case 2:
			return "open " + pick(files) + " " + pick(handles)
		case 3:
			return "openrw " + pick(files) + " " + pick(handles)
		case 4, 5:
			return fmt.Sprintf("write %s %s", h(), strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(20)))
		case 6:
			return fmt.Sprintf("readat %s %d %d", h(), rng.IntN(40), 1+rng.IntN(40)) // os.File.ReadAt of nothing skips its closed check
		case 7:
			return fmt.Sprintf("truncate %s %d", h(), rng.IntN(30))
		case 8:
			return "sync " + h()
		case 9:
			return "close " + h()
		case 10:
			return "size " + h()
		case 11:
			return "remove " + pick(append(files, dirs...))
		case 12:
			return "rename " + pick(files) + " " + pick(files)
		case 13:
			return "mkdir " + pick(dirs)
		case 14:
			return "list " + pick(append(dirs, "."))
		default:
			return "stat " + pick(files)
		}
	}
	root := t.TempDir()
	mem := NewMem()
	require.NoError(t, mem.MkdirAll(root, 0o755))
	var runners []*scriptRunner
	for _, fs := range []FS{Default, mem} {
		dir := filepath.Join(root, fmt.Sprintf("%T", fs))
		require.NoError(t, fs.MkdirAll(dir, 0o755))
		r := &scriptRunner{fs: fs, dir: dir, files: map[string]File{}, locks: map[string]io.Closer{}}
		defer r.closeAll()
		runners = append(runners, r)
	}
	var history []string
	for range 2000 {
		cmd := gen()
		history = append(history, cmd)
		osOut, memOut := runners[0].run(strings.Fields(cmd)), runners[1].run(strings.Fields(cmd))
		if osOut != memOut {
			t.Fatalf("after:\n%s\nos: %s\nmem: %s", strings.Join(history[max(0, len(history)-30):], "\n"), osOut, memOut)
		}
	}
}

// TestErrorsLikeOS checks the errors.Is and errors.As properties callers
// rely on, on both file systems.
func TestErrorsLikeOS(t *testing.T) {
	for _, fs := range []FS{Default, NewMem()} {
		t.Run(fmt.Sprintf("%T", fs), func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, fs.MkdirAll(filepath.Join(dir, "sub"), 0o755))
			missing := filepath.Join(dir, "missing")
			_, err := fs.Open(missing)
			require.ErrorIs(t, err, os.ErrNotExist)
			var pe *os.PathError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, missing, pe.Path)
			_, err = fs.Stat(missing)
			require.ErrorIs(t, err, os.ErrNotExist)
			require.ErrorIs(t, fs.Remove(missing), os.ErrNotExist)

			f, err := fs.Create(filepath.Join(dir, "f"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			err = fs.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "sub"))
			require.ErrorIs(t, err, os.ErrExist)
			var le *os.LinkError
			require.ErrorAs(t, err, &le)
		})
	}
}
