package vfs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// strictCase is a case of TestCrashCloneStrict: what setup leaves in a
// file system, a strict crash turns into want (path: content; a directory
// ends in "/").
type strictCase struct {
	name  string
	setup func(t *testing.T, fs *MemFS)
	want  map[string]string
}

// TestCrashCloneStrict checks what the default (strict) crash keeps: synced
// data under durable entries, nothing else.
func TestCrashCloneStrict(t *testing.T) {
	cases := slices.Concat(strictSyncCases(), strictRenameCases(), strictRemoveTruncateCases(), strictDirCases())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkStrictCrash(t, tc) })
	}
}

// checkStrictCrash runs tc.setup and checks its strict crash clone, which
// leaves the original as it was and is its own strict crash clone.
func checkStrictCrash(t *testing.T, tc strictCase) {
	t.Helper()
	fs := NewMem()
	tc.setup(t, fs)
	before := fs.String()
	clone := fs.CrashClone(CrashOptions{})
	require.Equal(t, tc.want, tree(t, clone), "before the crash:\n%s", before)
	require.Equal(t, before, fs.String(), "CrashClone changed the original")
	// A crash of a crashed state changes nothing.
	require.Equal(t, tc.want, tree(t, clone.CrashClone(CrashOptions{})))
}

// strictSyncCases: which syncs make data and entries durable.
func strictSyncCases() []strictCase {
	return []strictCase{
		{"unsynced file and entry are lost", func(t *testing.T, fs *MemFS) {
			writeFile(t, fs, "a", "data", false)
		}, map[string]string{}},
		{"synced data under an unsynced entry is lost", func(t *testing.T, fs *MemFS) {
			writeFile(t, fs, "a", "data", true)
		}, map[string]string{}},
		{"durable entry, unsynced data", func(t *testing.T, fs *MemFS) {
			writeFile(t, fs, "a", "data", false)
			require.NoError(t, fs.SyncDir("."))
		}, map[string]string{"a": ""}},
		{"synced prefix survives, unsynced tail does not", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "abc")
			appendFile(t, fs, "a", "def", false)
		}, map[string]string{"a": "abc"}},
		{"sync after the dir sync counts", func(t *testing.T, fs *MemFS) {
			writeFile(t, fs, "a", "", false)
			require.NoError(t, fs.SyncDir(""))
			appendFile(t, fs, "a", "late", true)
		}, map[string]string{"a": "late"}},
		{"sync through a read-only handle", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "")
			appendFile(t, fs, "a", "x", false)
			f, err := fs.Open("a")
			require.NoError(t, err)
			require.NoError(t, f.Sync())
		}, map[string]string{"a": "x"}},
	}
}

// strictRenameCases: renames, plain and replacing, synced or not.
func strictRenameCases() []strictCase {
	return []strictCase{
		{"unsynced rename is undone", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "v1")
			require.NoError(t, fs.Rename("a", "b"))
		}, map[string]string{"a": "v1"}},
		{"synced rename", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "v1")
			require.NoError(t, fs.Rename("a", "b"))
			require.NoError(t, fs.SyncDir("."))
		}, map[string]string{"b": "v1"}},
		{"unsynced replacing rename keeps the old file", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "CURRENT", "old")
			writeFile(t, fs, "tmp", "new", true)
			require.NoError(t, fs.Rename("tmp", "CURRENT"))
		}, map[string]string{"CURRENT": "old"}},
		{"synced replacing rename", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "CURRENT", "old")
			writeFile(t, fs, "tmp", "new", true)
			require.NoError(t, fs.Rename("tmp", "CURRENT"))
			require.NoError(t, fs.SyncDir("."))
		}, map[string]string{"CURRENT": "new"}},
		{"replacing rename of unsynced data leaves an empty file", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "CURRENT", "old")
			writeFile(t, fs, "tmp", "new", false) // the missing fsync
			require.NoError(t, fs.Rename("tmp", "CURRENT"))
			require.NoError(t, fs.SyncDir("."))
		}, map[string]string{"CURRENT": ""}},
	}
}

// strictRemoveTruncateCases: removes, truncates and re-creates of durable
// files, synced or not.
func strictRemoveTruncateCases() []strictCase {
	return []strictCase{
		{"unsynced remove comes back", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "v")
			require.NoError(t, fs.Remove("a"))
		}, map[string]string{"a": "v"}},
		{"synced remove", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "v")
			require.NoError(t, fs.Remove("a"))
			require.NoError(t, fs.SyncDir("."))
		}, map[string]string{}},
		{"removed file written and synced through its handle comes back so", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "v")
			f, err := fs.OpenReadWrite("a")
			require.NoError(t, err)
			require.NoError(t, fs.Remove("a"))
			_, err = f.Write([]byte("+w"))
			require.NoError(t, err)
			require.NoError(t, f.Sync())
		}, map[string]string{"a": "v+w"}},
		{"unsynced truncate is undone", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "0123456789")
			f, err := fs.OpenReadWrite("a")
			require.NoError(t, err)
			require.NoError(t, f.Truncate(3))
		}, map[string]string{"a": "0123456789"}},
		{"synced truncate", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "0123456789")
			f, err := fs.OpenReadWrite("a")
			require.NoError(t, err)
			require.NoError(t, f.Truncate(3))
			_, err = f.Write([]byte("x"))
			require.NoError(t, err)
			require.NoError(t, f.Sync())
		}, map[string]string{"a": "012x"}},
		{"unsynced re-create keeps the old content", func(t *testing.T, fs *MemFS) {
			durableFile(t, fs, "a", "old")
			writeFile(t, fs, "a", "n", false)
		}, map[string]string{"a": "old"}},
	}
}

// strictDirCases: directories, and the entries made durable at once or
// never.
func strictDirCases() []strictCase {
	return []strictCase{
		{"MkdirAll is durable at once", func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("d/e", 0o755))
		}, map[string]string{"d/": "", "d/e/": ""}},
		{"a file needs its own directory synced", func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("d", 0o755))
			writeFile(t, fs, "d/f", "x", true)
			require.NoError(t, fs.SyncDir("."))
		}, map[string]string{"d/": ""}},
		{"file in synced subdirectory", func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("d", 0o755))
			writeFile(t, fs, "d/f", "x", true)
			require.NoError(t, fs.SyncDir("d"))
		}, map[string]string{"d/": "", "d/f": "x"}},
		{"removed directory comes back with its durable entries", func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("d", 0o755))
			durableFile(t, fs, "d/f", "x")
			require.NoError(t, fs.Remove("d/f"))
			require.NoError(t, fs.Remove("d"))
		}, map[string]string{"d/": "", "d/f": "x"}},
		{"cross-directory rename synced on one side only", func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("d1", 0o755))
			require.NoError(t, fs.MkdirAll("d2", 0o755))
			durableFile(t, fs, "d1/f", "x")
			require.NoError(t, fs.Rename("d1/f", "d2/f"))
			require.NoError(t, fs.SyncDir("d2"))
		}, map[string]string{"d1/": "", "d1/f": "x", "d2/": "", "d2/f": "x"}},
		{"WriteFile is durable", func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.WriteFile("a", []byte("planted")))
		}, map[string]string{"a": "planted"}},
		{"lock file is an ordinary unsynced entry", func(t *testing.T, fs *MemFS) {
			_, err := fs.Lock("LOCK")
			require.NoError(t, err)
		}, map[string]string{}},
	}
}

func TestCrashCloneIndependent(t *testing.T) {
	fs := NewMem()
	durableFile(t, fs, "a", "abc")
	f, err := fs.OpenReadWrite("a")
	require.NoError(t, err)
	clone := fs.CrashClone(CrashOptions{})

	_, err = f.Write([]byte("def"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, fs.Corrupt("a", 0, []byte("X")))
	appendFile(t, clone, "a", "!", true)
	durableFile(t, clone, "b", "only in clone")

	require.Equal(t, map[string]string{"a": "Xbcdef"}, tree(t, fs))
	require.Equal(t, map[string]string{"a": "abc!", "b": "only in clone"}, tree(t, clone))
	_, err = clone.Lock("a")
	require.NoError(t, err, "the clone has its own locks")
}

// unsyncedFixture is a file with syncedLen synced bytes followed by
// unsynced ones, totalLen in all; every byte is distinct from zero.
func unsyncedFixture(t *testing.T, syncedLen, totalLen int) (*MemFS, []byte) {
	content := make([]byte, totalLen)
	for i := range content {
		content[i] = byte(i%251) + 1
	}
	fs := NewMem()
	durableFile(t, fs, "f", string(content[:syncedLen]))
	appendFile(t, fs, "f", string(content[syncedLen:]), false)
	return fs, content
}

// The file of TestCrashCloneUnsyncedModes: modeSynced bytes synced, then
// unsynced ones up to modeTotal.
const modeSynced, modeTotal = 1000, 4000

// modeSectorEnd: a crash may cut the file at n, with sectors of ss bytes.
func modeSectorEnd(n, ss int) bool { return n%ss == 0 || n == modeTotal || n == modeSynced }

// unsyncedModeCase is a case of TestCrashCloneUnsyncedModes.
type unsyncedModeCase struct {
	opts CrashOptions
	// check validates one clone's file against the current content.
	check func(t *testing.T, got, cur []byte)
	// seen classifies a clone so that the test can require variety.
	seen func(got []byte) string
	want []string
}

func TestCrashCloneUnsyncedModes(t *testing.T) {
	cases := slices.Concat(unsyncedPrefixCases(), unsyncedSectorsCases(), unsyncedZeroGarbageCases())
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/frac=%v/sector=%d", tc.opts.Unsynced, tc.opts.KeepUnsyncedFraction, tc.opts.SectorSize), func(t *testing.T) {
			checkUnsyncedMode(t, tc)
		})
	}
}

// checkUnsyncedMode checks the clones of 100 seeds of the fixture file
// under tc.opts, and that they show every kind tc.want lists.
func checkUnsyncedMode(t *testing.T, tc unsyncedModeCase) {
	t.Helper()
	fs, cur := unsyncedFixture(t, modeSynced, modeTotal)
	seen := map[string]bool{}
	for seed := range uint64(100) {
		opts := tc.opts
		opts.Seed = seed
		got, err := fs.CrashClone(opts).ReadFile("f")
		require.NoError(t, err)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { tc.check(t, got, cur) })
		seen[tc.seen(got)] = true
	}
	for _, w := range tc.want {
		require.True(t, seen[w], "no clone of kind %q in 100 seeds (saw %v)", w, seen)
	}
}

// unsyncedPrefixCases: KeepUnsyncedPrefix, with 512-byte and 4 KiB
// sectors.
func unsyncedPrefixCases() []unsyncedModeCase {
	return []unsyncedModeCase{
		{
			opts: CrashOptions{Unsynced: KeepUnsyncedPrefix},
			check: func(t *testing.T, got, cur []byte) {
				require.GreaterOrEqual(t, len(got), modeSynced)
				require.Equal(t, cur[:len(got)], got)
				require.True(t, modeSectorEnd(len(got), 512), "length %d", len(got))
			},
			seen: func(got []byte) string { return prefixKind(len(got), modeSynced, modeTotal) },
			want: []string{"none", "part", "all"},
		},
		{
			opts: CrashOptions{Unsynced: KeepUnsyncedPrefix, SectorSize: 4096},
			check: func(t *testing.T, got, cur []byte) {
				require.Equal(t, cur[:len(got)], got)
				require.Contains(t, []int{modeSynced, modeTotal}, len(got), "one 4 KiB sector: all or nothing")
			},
			seen: func(got []byte) string { return fmt.Sprint(len(got)) },
			want: []string{"1000", "4000"},
		},
	}
}

// unsyncedSectorsCases: KeepUnsyncedSectors, holes and all.
func unsyncedSectorsCases() []unsyncedModeCase {
	return []unsyncedModeCase{
		{
			opts: CrashOptions{Unsynced: KeepUnsyncedSectors, KeepUnsyncedFraction: 0.5},
			check: func(t *testing.T, got, cur []byte) {
				require.GreaterOrEqual(t, len(got), modeSynced)
				require.Equal(t, cur[:modeSynced], got[:modeSynced])
				require.True(t, modeSectorEnd(len(got), 512), "length %d", len(got))
				for lo := modeSynced; lo < len(got); lo = (lo/512 + 1) * 512 {
					hi := min((lo/512+1)*512, len(got))
					s := got[lo:hi]
					require.True(t, bytes.Equal(s, cur[lo:hi]) || isZero(s), "sector at %d is neither kept nor a hole", lo)
				}
			},
			seen: func(got []byte) string {
				// "hole": a lost sector before a kept one (out of order).
				if len(got) > modeSynced && slices.Contains(got[modeSynced:], 0) {
					return "hole"
				}
				return fmt.Sprint(len(got) == modeSynced)
			},
			want: []string{"hole", "true", "false"},
		},
	}
}

// unsyncedZeroGarbageCases: ZeroUnsynced, all or some sectors, and
// GarbageUnsynced.
func unsyncedZeroGarbageCases() []unsyncedModeCase {
	return []unsyncedModeCase{
		{
			opts: CrashOptions{Unsynced: ZeroUnsynced},
			check: func(t *testing.T, got, cur []byte) {
				require.Equal(t, cur[:modeSynced], got[:modeSynced])
				require.Len(t, got, modeTotal)
				require.True(t, isZero(got[modeSynced:]))
			},
			seen: func([]byte) string { return "" }, want: []string{""},
		},
		{
			opts: CrashOptions{Unsynced: ZeroUnsynced, KeepUnsyncedFraction: 0.5},
			check: func(t *testing.T, got, cur []byte) {
				require.Equal(t, cur[:modeSynced], got[:modeSynced])
				require.Len(t, got, modeTotal)
				for lo := modeSynced; lo < modeTotal; lo = (lo/512 + 1) * 512 {
					s := got[lo:min((lo/512+1)*512, modeTotal)]
					require.True(t, bytes.Equal(s, cur[lo:lo+len(s)]) || isZero(s))
				}
			},
			seen: func(got []byte) string { return fmt.Sprint(isZero(got[modeTotal-10:])) },
			want: []string{"true", "false"},
		},
		{
			opts: CrashOptions{Unsynced: GarbageUnsynced},
			check: func(t *testing.T, got, cur []byte) {
				require.Equal(t, cur[:modeSynced], got[:modeSynced])
				require.Len(t, got, modeTotal)
				require.NotEqual(t, cur[modeSynced:], got[modeSynced:])
				require.False(t, isZero(got[modeSynced:]))
			},
			seen: func([]byte) string { return "" }, want: []string{""},
		},
	}
}

func prefixKind(n, synced, total int) string {
	switch n {
	case synced:
		return "none"
	case total:
		return "all"
	}
	return "part"
}

func isZero(b []byte) bool { return !slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) }

// TestCrashCloneUnsyncedTruncate: a shrinking Truncate is never applied by a
// crash unless synced; bytes rewritten after it may survive over the old
// ones.
func TestCrashCloneUnsyncedTruncate(t *testing.T) {
	fs := NewMem()
	old := bytes.Repeat([]byte{'o'}, 2000)
	durableFile(t, fs, "f", string(old))
	f, err := fs.OpenReadWrite("f")
	require.NoError(t, err)
	require.NoError(t, f.Truncate(100))
	_, err = f.Write(bytes.Repeat([]byte{'n'}, 50))
	require.NoError(t, err)
	for _, mode := range []UnsyncedMode{DropUnsynced, KeepUnsyncedPrefix, KeepUnsyncedSectors, ZeroUnsynced, GarbageUnsynced} {
		for seed := range uint64(20) {
			got, err := fs.CrashClone(CrashOptions{Unsynced: mode, Seed: seed, KeepUnsyncedFraction: 0.5}).ReadFile("f")
			require.NoError(t, err)
			require.Len(t, got, 2000, "%v seed %d", mode, seed)
			require.Equal(t, old[:100], got[:100])
			require.Equal(t, old[150:], got[150:])
		}
	}
}

func TestCrashCloneReproducible(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	build := func() *MemFS {
		fs := NewMem()
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := range 20 {
			name := fmt.Sprintf("f%d", rng.IntN(5))
			data := make([]byte, rng.IntN(3000))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			writeFile(t, fs, name, string(data), rng.IntN(2) == 0)
			if rng.IntN(3) == 0 {
				require.NoError(t, fs.SyncDir(""))
			}
			if i%7 == 6 {
				require.NoError(t, fs.Rename(name, "renamed"))
			}
		}
		return fs
	}
	a, b := build(), build()
	for _, mode := range []UnsyncedMode{KeepUnsyncedPrefix, KeepUnsyncedSectors, GarbageUnsynced} {
		opts := CrashOptions{Unsynced: mode, KeepUnsyncedFraction: 0.3, RandomDirOps: true, Seed: seed}
		ca, cb := a.CrashClone(opts), b.CrashClone(opts)
		require.Equal(t, tree(t, ca), tree(t, cb), "%v", mode)
		opts.Rand = rand.New(rand.NewPCG(seed, 0x5eed))
		require.Equal(t, tree(t, ca), tree(t, a.CrashClone(opts)), "Rand and Seed differ")
	}
}

func TestCrashCloneRandomDirOps(t *testing.T) {
	t.Run("a prefix of the operations in order", func(t *testing.T) {
		fs := NewMem()
		for _, name := range []string{"a", "b", "c"} {
			writeFile(t, fs, name, name, true)
		}
		seen := map[string]bool{}
		for seed := range uint64(100) {
			c := fs.CrashClone(CrashOptions{RandomDirOps: true, Seed: seed})
			names, err := c.List("")
			require.NoError(t, err)
			require.Contains(t, []string{"", "a", "ab", "abc"}, strings.Join(names, ""))
			seen[strings.Join(names, "")] = true
		}
		require.Len(t, seen, 4)
	})
	t.Run("a rename survives whole or not at all", func(t *testing.T) {
		fs := NewMem()
		durableFile(t, fs, "x", "data")
		require.NoError(t, fs.Rename("x", "y"))
		seen := map[string]bool{}
		for seed := range uint64(50) {
			got := tree(t, fs.CrashClone(CrashOptions{RandomDirOps: true, Seed: seed}))
			require.Len(t, got, 1)
			seen[fmt.Sprint(got)] = true
		}
		require.Equal(t, map[string]bool{"map[x:data]": true, "map[y:data]": true}, seen)
	})
	t.Run("synced directories are not reverted", func(t *testing.T) {
		fs := NewMem()
		require.NoError(t, fs.MkdirAll("d", 0o755))
		writeFile(t, fs, "a", "", false)
		writeFile(t, fs, "d/b", "", false)
		require.NoError(t, fs.SyncDir("d"))
		for seed := range uint64(30) {
			got := tree(t, fs.CrashClone(CrashOptions{RandomDirOps: true, Seed: seed}))
			require.Contains(t, got, "d/b")
		}
	})
}

// TestDurabilityHook checks the hook sees each mutation, after the fact and
// without locks held (it takes crash clones).
func TestDurabilityHook(t *testing.T) {
	fs := NewMem()
	type event struct {
		op    Op
		name  string
		files int
	}
	var events []event
	fs.SetDurabilityHook(func(op Op, name string) {
		events = append(events, event{op, name, len(tree(t, fs.CrashClone(CrashOptions{})))})
	})
	require.NoError(t, fs.MkdirAll("d", 0o755))
	require.NoError(t, fs.MkdirAll("d", 0o755)) // nothing created: no event
	f, err := fs.Create("d/f")
	require.NoError(t, err)
	_, err = f.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(0))
	require.NoError(t, f.Sync())
	require.NoError(t, fs.SyncDir("d"))
	require.NoError(t, fs.Rename("d/f", "d/g"))
	require.NoError(t, fs.Remove("d/g"))
	l, err := fs.Lock("d/LOCK")
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = fs.Open("d/nope")
	require.Error(t, err) // failures make no event
	fs.SetDurabilityHook(nil)
	require.NoError(t, fs.SyncDir("d"))

	require.Equal(t, []event{
		{OpMkdir, "d", 1},
		{OpCreate, "d/f", 1},
		{OpWrite, "d/f", 1},
		{OpTruncate, "d/f", 1},
		{OpSync, "d/f", 1},
		{OpSyncDir, "d", 2},
		{OpRename, "d/g", 2},
		{OpRemove, "d/g", 2},
		{OpLock, "d/LOCK", 2},
	}, events)
}

func TestMemHelpers(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	durableFile(t, fs, "db/a", "0123456789")
	appendFile(t, fs, "db/a", "abc", false)

	require.NoError(t, fs.Corrupt("db/a", 8, []byte("XYZ")))
	require.NoError(t, fs.FlipBit("db/a", 0, 0))
	got, err := fs.ReadFile("db/a")
	require.NoError(t, err)
	require.Equal(t, "11234567XYZbc", string(got))
	crashed, err := fs.CrashClone(CrashOptions{}).ReadFile("db/a")
	require.NoError(t, err)
	require.Equal(t, "11234567XY", string(crashed), "damage reaches the synced content")

	require.Error(t, fs.Corrupt("db/a", 12, []byte("toolong")))
	require.Error(t, fs.FlipBit("db/nope", 0, 0))

	require.NoError(t, fs.Truncate("db/a", 4))
	crashed, err = fs.CrashClone(CrashOptions{}).ReadFile("db/a")
	require.NoError(t, err)
	require.Equal(t, "1123", string(crashed))
	require.NoError(t, fs.Truncate("db/a", 6))
	got, err = fs.ReadFile("db/a")
	require.NoError(t, err)
	require.Equal(t, "1123\x00\x00", string(got))

	durableFile(t, fs, "db/old", "o")
	durableFile(t, fs, "db/rep", "1")
	writeFile(t, fs, "db/new", "xy", false)
	require.NoError(t, fs.Remove("db/old"))
	writeFile(t, fs, "db/tmp", "22", true)
	require.NoError(t, fs.Rename("db/tmp", "db/rep"))
	require.Equal(t, `db/
db/a size=6 synced=6
db/new size=2 synced=0 [entry not durable]
db/old size=1 synced=1 [removed, entry durable]
db/rep size=2 synced=2 [replaced, entry not durable]
`, fs.String())
}
