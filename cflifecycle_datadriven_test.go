package sieve

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestColumnFamilyLifecycle is a data-driven walk through the life of
// column families (testdata/cf_lifecycle): creating them, writing to
// several, flushing, compacting, MultiGet, a checkpoint opened read-only
// next to the source, dropping a family, and reopening. Each step prints
// the LSM (db.versions.Current().String(), as TestLSMShape) or its answers.
// Automatic compactions are held off, so the shape changes only when a step
// says so. Families are named by their name; "default" is the default one.
// Commands:
//
//	open-cf name ...       OpenColumnFamily each name, print its ID
//	batch                  input lines "put cf k v", "del cf k",
//	                       "delrange cf start end" in one batch
//	put cf k v             cf.Put through the handle (prints ok or the error)
//	flush                  DB.Flush
//	compact cf             cf.Compact of the whole family
//	multiget cf k ...      cf.MultiGet, one line per key
//	get cf k ...           cf.Get of each key
//	checkpoint dir         DB.Checkpoint(dir), then its LSM
//	lsm-of dir             open dir read-only, print its LSM and families
//	get-of dir cf k ...    Gets in dir opened read-only
//	drop-cf name           DropColumnFamily (prints the error if any)
//	families               DB.ColumnFamilies
//	tables dir             the .sst files in dir
//	reopen                 Close and Open again (handles opened anew)
//	lsm                    only print the LSM
//
// Regenerate with go test -run TestColumnFamilyLifecycle -rewrite and
// review the diff.
func TestColumnFamilyLifecycle(t *testing.T) {
	fs := vfs.NewMem()
	opts := func(ro bool) *Options {
		return &Options{FS: fs, MemTableSize: 4 << 20, TargetFileSize: 4 << 10,
			L0CompactionTrigger: 1000, L0StopWritesTrigger: 2000, ReadOnly: ro}
	}
	db := openDB(t, opts(false))
	cfs := map[string]*ColumnFamily{}
	handle := func(d *testutil.Case, name string) *ColumnFamily {
		if cf, ok := cfs[name]; ok {
			return cf
		}
		cf, err := db.OpenColumnFamily(name, nil)
		require.NoError(t, err, d.Pos)
		cfs[name] = cf
		return cf
	}
	testutil.RunDataDriven(t, "testdata/cf_lifecycle", func(t *testing.T, d *testutil.Case) string {
		args := make([]string, len(d.Args))
		for i, a := range d.Args {
			args[i] = a.Key
		}
		switch d.Cmd {
		case "open-cf":
			var sb strings.Builder
			for _, name := range args {
				delete(cfs, name)
				fmt.Fprintf(&sb, "%s: id %d\n", name, handle(d, name).id)
			}
			return sb.String()
		case "batch":
			b := db.NewBatch()
			for _, line := range d.Input {
				require.NoError(t, cfBatchLine(b, strings.Fields(line), func(n string) *ColumnFamily { return handle(d, n) }), "%s: %q", d.Pos, line)
			}
			require.NoError(t, db.Apply(b, nil))
		case "put":
			require.Len(t, args, 3, d.Pos)
			if err := handle(d, args[0]).Put([]byte(args[1]), []byte(args[2]), nil); err != nil {
				return fmt.Sprintf("error: %v", err)
			}
			return "ok"
		case "flush":
			require.NoError(t, db.Flush())
		case "compact":
			require.NoError(t, handle(d, args[0]).Compact(nil, nil))
		case "multiget":
			vals, errs := handle(d, args[0]).MultiGet(keysOf(args[1:]))
			return formatGets(args[1:], vals, errs)
		case "get":
			return cfGets(handle(d, args[0]), args[1:])
		case "checkpoint":
			require.NoError(t, db.Checkpoint(args[0]))
			return lsmOf(t, args[0], opts(true), nil)
		case "lsm-of":
			return lsmOf(t, args[0], opts(true), nil)
		case "get-of":
			return lsmOf(t, args[0], opts(true), args[1:])
		case "drop-cf":
			if err := db.DropColumnFamily(handle(d, args[0])); err != nil {
				return fmt.Sprintf("error: %v", err)
			}
		case "families":
			return strings.Join(db.ColumnFamilies(), " ")
		case "tables":
			return sstFiles(t, fs, args[0])
		case "reopen":
			require.NoError(t, db.Close())
			db = openDB(t, opts(false))
			cfs = map[string]*ColumnFamily{}
			waitImmutablesFlushed(t, db)
		case "lsm":
		default:
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		}
		return lsmString(db)
	})
}

// cfBatchLine adds one "put cf k v", "del cf k" or "delrange cf start end"
// line to b.
func cfBatchLine(b *Batch, f []string, handle func(string) *ColumnFamily) error {
	switch {
	case len(f) == 4 && f[0] == "put":
		return b.PutCF(handle(f[1]), []byte(f[2]), []byte(f[3]))
	case len(f) == 3 && f[0] == "del":
		return b.DeleteCF(handle(f[1]), []byte(f[2]))
	case len(f) == 4 && f[0] == "delrange":
		return b.DeleteRangeCF(handle(f[1]), []byte(f[2]), []byte(f[3]))
	}
	return fmt.Errorf("bad batch line %q", strings.Join(f, " "))
}

// sstFiles lists the .sst files in dir, sorted.
func sstFiles(t *testing.T, fs vfs.FS, dir string) string {
	names, err := fs.List(dir)
	require.NoError(t, err)
	var ssts []string
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			ssts = append(ssts, n)
		}
	}
	sort.Strings(ssts)
	return strings.Join(ssts, " ")
}

// lsmString prints db's current version, or "(no tables)".
func lsmString(db *DB) string {
	v := db.versions.Current()
	defer v.Unref()
	if s := v.String(); s != "" {
		return s
	}
	return "(no tables)"
}

func keysOf(args []string) [][]byte {
	keys := make([][]byte, len(args))
	for i, k := range args {
		keys[i] = []byte(k)
	}
	return keys
}

func formatGets(keys []string, vals [][]byte, errs []error) string {
	var sb strings.Builder
	for i, k := range keys {
		if errs[i] != nil {
			fmt.Fprintf(&sb, "%s: %v\n", k, errs[i])
		} else {
			fmt.Fprintf(&sb, "%s: %s\n", k, vals[i])
		}
	}
	return sb.String()
}

// cfGets answers Get of each key in cf.
func cfGets(cf *ColumnFamily, keys []string) string {
	vals := make([][]byte, len(keys))
	errs := make([]error, len(keys))
	for i, k := range keys {
		vals[i], errs[i] = cf.Get([]byte(k))
	}
	return formatGets(keys, vals, errs)
}

// lsmOf opens dir read-only and prints its LSM and families, or, given
// get ("cf k ..."), the answers of Get in that family.
func lsmOf(t *testing.T, dir string, o *Options, get []string) string {
	db, err := Open(dir, o)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	if len(get) > 0 {
		cf, err := db.OpenColumnFamily(get[0], nil)
		if err != nil {
			return fmt.Sprintf("error: %v", err)
		}
		return cfGets(cf, get[1:])
	}
	return strings.TrimRight(lsmString(db), "\n") + "\nfamilies: " + strings.Join(db.ColumnFamilies(), " ")
}
