package sieve

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// repairOracle knows, for each key of both families, every value it held
// at some point of a history and every merge operand written to it: a
// database rebuilt from damaged files may miss keys, or hold an older
// value, but never a value the history did not produce.
type repairOracle struct {
	held  [2]map[string]map[string]bool
	ops   [2]map[string]map[string]bool
	final relState
	h     *relHistory
}

func newRepairOracle(ops []relOp) *repairOracle {
	o := &repairOracle{h: newRelHistory(ops)}
	s := newRelState()
	for cf := range o.held {
		o.held[cf], o.ops[cf] = map[string]map[string]bool{}, map[string]map[string]bool{}
	}
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	for _, op := range ops {
		s.apply(op)
		for _, e := range op.entries {
			if e.kind == base.KindMerge {
				add(o.ops[e.cf], e.key, e.value)
			}
			if v, ok := s[e.cf][e.key]; ok {
				add(o.held[e.cf], e.key, v)
			}
		}
	}
	o.final = s
	return o
}

// check returns the keys kept (as in the final state), the keys missing
// or older, and the first wrong value.
func (o *repairOracle) check(got relState) (kept, aside int, wrong string) {
	for cf := range got {
		for k, v := range got[cf] {
			if o.held[cf][k][v] {
				continue
			}
			pieces := strings.Split(v, ",")
			ok := o.held[cf][k][pieces[0]] || o.ops[cf][k][pieces[0]]
			for _, p := range pieces[1:] {
				ok = ok && o.ops[cf][k][p]
			}
			if !ok && wrong == "" {
				wrong = fmt.Sprintf("cf %d key %q = %q, never written", cf, k, trunc(v))
			}
		}
		for k, v := range o.final[cf] {
			if got[cf][k] == v {
				kept++
			} else {
				aside++
			}
		}
	}
	return kept, aside, wrong
}

type repairCase struct {
	target string
	fs     *vfs.MemFS
	name   string
	d      damage
	o      *repairOracle
	wal    bool // damage in a WAL: the recovery modes apply
}

// TestRepairAfterDamage damages each kind of file of the corruption matrix
// (a WAL's middle, a WAL's unsynced tail, the manifest, a table's data
// block and footer), then runs Repair and opens the database: its contents
// must be a subset of the history (no value the history did not produce)
// and DB.CheckInvariants(true) must pass. For WAL damage it also opens
// with each WALRecovery mode: point-in-time must give exactly a prefix of
// the history, skip-damaged a subset.
func TestRepairAfterDamage(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	var cases []repairCase
	cases = append(cases, repairWALCases(t, rng)...)
	cases = append(cases, repairManifestCases(t, rng)...)
	cases = append(cases, repairTableCases(t, rng)...)
	var n, kept, aside, lost int
	for _, c := range cases {
		fs := fullCopy(c.fs)
		require.NoError(t, c.d.apply(fs, c.name))
		rep, err := Repair("/db", relOptions(fs))
		require.NoError(t, err, "%s %s", c.target, c.d.desc)
		k, a := checkRepaired(t, fs, c, "repair", nil)
		n, kept, aside, lost = n+1, kept+k, aside+a, lost+len(rep.SetAside)
		t.Logf("%-22s %-34s repair: kept %4d keys, %3d missing or older; %d tables kept, %d files set aside, %d WAL bytes dropped",
			c.target, c.d.desc, k, a, len(rep.Tables), len(rep.SetAside), rep.WAL.BytesDropped)
		if !c.wal {
			continue
		}
		for _, mode := range []WALRecoveryMode{WALRecoveryPointInTime, WALRecoverySkipDamaged} {
			fs := fullCopy(c.fs)
			require.NoError(t, c.d.apply(fs, c.name))
			k, a := checkRepaired(t, fs, c, mode.String(), &mode)
			n, kept, aside = n+1, kept+k, aside+a
			t.Logf("%-22s %-34s %s: kept %4d keys, %3d missing or older", c.target, c.d.desc, mode, k, a)
		}
	}
	t.Logf("repair and recovery modes: %d cases, %d keys kept, %d keys missing or older, %d files set aside in lost/; no wrong value, invariants hold",
		n, kept, aside, lost)
}

// checkRepaired opens fs (with mode, when set) and checks it against the
// oracle.
func checkRepaired(t *testing.T, fs *vfs.MemFS, c repairCase, how string, mode *WALRecoveryMode) (kept, aside int) {
	o := relOptions(fs)
	if mode != nil {
		o.WALRecovery = *mode
	}
	db, err := Open("/db", o)
	require.NoError(t, err, "%s %s (%s)", c.target, c.d.desc, how)
	defer db.Close()
	got, _, err := scanDB(db)
	require.NoError(t, err, "%s %s (%s)", c.target, c.d.desc, how)
	require.NoError(t, db.CheckInvariants(true), "%s %s (%s)", c.target, c.d.desc, how)
	kept, aside, wrong := c.o.check(got)
	require.Empty(t, wrong, "%s %s (%s)", c.target, c.d.desc, how)
	if mode != nil && *mode == WALRecoveryPointInTime {
		require.GreaterOrEqual(t, c.o.h.match(got, 0, len(c.o.h.ops)), 0,
			"%s %s: point-in-time recovery gave a state that is no prefix of the history", c.target, c.d.desc)
	}
	return kept, aside
}

// repairWALCases: a closed WAL damaged in its middle, and the unsynced
// tail of a crashed one.
func repairWALCases(t *testing.T, rng *rand.Rand) []repairCase {
	fs := vfs.NewMem()
	db, cf := openRel(t, fs)
	ops := walWorkload(t, db, cf, rng, 250, 0)
	require.NoError(t, db.Close())
	name := fileOf(t, fs, "WAL")
	data, err := fs.ReadFile(name)
	require.NoError(t, err)
	o := newRepairOracle(ops)
	mid := int64(len(data) / 2)
	cases := []repairCase{
		{"WAL middle", fs, name, flipAt(mid, 3), o, true},
		{"WAL middle", fs, name, zeroAt(mid-500, 200), o, true},
		{"WAL middle", fs, name, truncateAt(mid), o, true},
	}
	fs2 := vfs.NewMem()
	db, cf = openRel(t, fs2)
	ops = walWorkload(t, db, cf, rng, 200, 10)
	ops = append(ops, walWorkload(t, db, cf, rng, 60, 0)...)
	db.flushWALBuffer()
	synced := db.log.w.SyncedOffset()
	killDB(db)
	name2 := fileOf(t, fs2, "WAL")
	o2 := newRepairOracle(ops)
	return append(cases,
		repairCase{"WAL tail", fs2, name2, flipAt(synced+300, 1), o2, true},
		repairCase{"WAL tail", fs2, name2, truncateAt(synced + 100), o2, true})
}

// repairManifestCases: a manifest of many edits, damaged in its first
// record (the snapshot: families and tables unknown) and later.
func repairManifestCases(t *testing.T, rng *rand.Rand) []repairCase {
	fs := vfs.NewMem()
	db, cf := openRel(t, fs)
	var ops []relOp
	for round := 0; round < 4; round++ {
		ops = append(ops, walWorkload(t, db, cf, rng, 40, 0)...)
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Compact(nil, nil))
	ops = append(ops, walWorkload(t, db, cf, rng, 40, 0)...)
	require.NoError(t, db.Flush())
	ops = append(ops, walWorkload(t, db, cf, rng, 20, 0)...)
	require.NoError(t, db.Close())
	name := fileOf(t, fs, "MANIFEST")
	data, err := fs.ReadFile(name)
	require.NoError(t, err)
	o := newRepairOracle(ops)
	return []repairCase{
		{"MANIFEST", fs, name, flipAt(int64(len(data))*3/4, 2), o, false},
		{"MANIFEST", fs, name, flipAt(60, 5), o, false},
		{"MANIFEST", fs, name, truncateAt(int64(len(data)) / 2), o, false},
	}
}

// repairTableCases: a data block and the footer of each table of the
// corruption matrix's table fixture.
func repairTableCases(t *testing.T, rng *rand.Rand) []repairCase {
	m := &corruptionMatrix{t: t, rng: rng, tally: map[string]*corrTally{}}
	fs, _ := m.tablesFixture()
	var cases []repairCase
	names, err := fs.List("/db")
	require.NoError(t, err)
	o := newRepairOracle(m.fixtureOps)
	for _, n := range names {
		if fileKind(n) != "table" {
			continue
		}
		name := "/db/" + n
		_, num, _ := base.ParseFilename(n)
		data, err := fs.ReadFile(name)
		require.NoError(t, err)
		f, err := fs.Open(name)
		require.NoError(t, err)
		r, err := sstable.NewReader(f, int64(len(data)), sstable.ReaderOptions{FileNum: num})
		require.NoError(t, err)
		for _, b := range r.Layout() {
			if b.Kind == "footer" || (b.Kind == "data" && b.Offset == 0) {
				cases = append(cases, repairCase{"table " + b.Kind, fs, name, flipAt(int64(b.Offset+b.Length/2), 4), o, false})
			}
		}
		r.Close()
	}
	return cases
}
