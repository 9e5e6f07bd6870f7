package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestCompactionModel drives the whole package as a DB would — flushes to
// L0, Picker.Pick and PickManual, NewInputIter, NewElider, Iter, Splitter,
// trivial moves, installing edits in a manifest.Version — while snapshots
// open and close, and after every compaction checks, for every open
// snapshot and the latest state, that each key reads as in a model holding
// every write ever made; and that each key's versions are ordered newest
// first from L0 down to L6 (what a point lookup relies on).
//
// Up to three compactions are pending at once, as with concurrent
// background compactions: each is picked with its inputs then marked
// compacting, and later run with the snapshots open at that time and an
// elider over the version it was picked from, and installed into the
// version as it is by then (flushes and other compactions having happened
// in between). Now and then the picker is replaced by one with other
// options, as a reopen with new options would, which leaves data above
// the new base level to be drained.
func TestCompactionModel(t *testing.T) {
	for _, mergerName := range []string{"counter", "append"} {
		t.Run(mergerName, func(t *testing.T) {
			rng := rand.New(rand.NewSource(testutil.Seed(t)))
			splitRuns, outputBusy = 0, 0
			for trial := 0; trial < trials(10); trial++ {
				runCompactionModel(t, rng, mergerName)
			}
			// Guard against bounds that never split (the equivalence check
			// would then be vacuous).
			require.Positive(t, splitRuns, "no compaction ran as subcompactions")
			t.Logf("%d subcompacted runs, %d candidates refused for a pending compaction's output range", splitRuns, outputBusy)
		})
	}
}

// pendingCompaction is a picked compaction waiting to run, with the levels
// of the version it was picked from.
type pendingCompaction struct {
	c      *Compaction
	levels *manifest.Levels
}

func randomModelPicker(rng *rand.Rand) *Picker {
	return NewPicker(PickerOptions{
		L0CompactionTrigger: 2 + rng.Intn(3),
		LBaseMaxBytes:       int64(50 + rng.Intn(800)),
		LevelMultiplier:     2 + rng.Intn(3),
		TargetFileSize:      int64(100 + rng.Intn(300)),
	})
}

func runCompactionModel(t *testing.T, rng *rand.Rand, mergerName string) {
	m, err := mergerByName(mergerName)
	require.NoError(t, err)
	s := &lsm{t: t, version: &manifest.Version{CFs: map[uint32]*manifest.Levels{0: {}}}, tables: map[uint64][]entry{}, nextFile: 1}
	r := &compactionModelRun{t: t, rng: rng, s: s, m: m, mergerName: mergerName}
	r.newPicker()
	r.nKeys = 5 + rng.Intn(40)
	r.maxPending = 1 + rng.Intn(3)
	for step := 0; step < 200; step++ {
		r.step()
	}
	for len(r.pending) > 0 {
		r.complete()
	}
	require.NotZero(t, r.compactions)
}

// compactionModelRun is one trial of TestCompactionModel: the LSM, the
// model of every write, the open snapshots and the pending compactions.
type compactionModelRun struct {
	t          *testing.T
	rng        *rand.Rand
	s          *lsm
	m          Merger
	mergerName string
	nKeys      int
	maxPending int

	model       []entry // every write, any order
	snapshots   []uint64
	pending     []pendingCompaction
	seq         uint64
	compactions int
}

// step is one random step: a flush, a snapshot taken or released, a
// compaction picked (or a pending one run), a manual compaction, or a new
// picker.
func (r *compactionModelRun) step() {
	switch x := r.rng.Intn(20); {
	case x < 8:
		r.flush()
	case x < 10:
		r.snapshots = append(r.snapshots, r.seq)
		sort.Slice(r.snapshots, func(i, j int) bool { return r.snapshots[i] < r.snapshots[j] })
	case x < 12:
		if len(r.snapshots) > 0 {
			i := r.rng.Intn(len(r.snapshots))
			r.snapshots = append(r.snapshots[:i], r.snapshots[i+1:]...)
		}
	case x < 17:
		if c := r.s.picker.Pick(r.s.levels()); c != nil {
			r.queue(c)
		} else if len(r.pending) > 0 {
			r.complete()
		}
	case x < 19:
		r.manual()
	default:
		r.newPicker()
	}
}

// newPicker replaces the picker by one with random options which, as the
// DB's, asks whether a pending compaction writes a candidate's output
// range (an in-place L6 compaction's output may span the gap a pending
// move into L6 lands in).
func (r *compactionModelRun) newPicker() {
	r.s.picker = randomModelPicker(r.rng)
	r.s.picker.SetOutputBusy(func(level int, smallest, largest []byte) bool {
		for _, pc := range r.pending {
			if pc.c.OutputLevel == level && bytes.Compare(pc.c.Smallest, largest) <= 0 && bytes.Compare(smallest, pc.c.Largest) <= 0 {
				outputBusy++
				return true
			}
		}
		return false
	})
}

// flush writes a batch of random writes to L0 (and the model).
func (r *compactionModelRun) flush() {
	t, rng := r.t, r.rng
	var batch []entry
	for n := 1 + rng.Intn(20); n > 0; n-- {
		r.seq++
		ukey := []byte(fmt.Sprintf("k%02d", rng.Intn(r.nKeys)))
		e := entry{key: base.MakeInternalKey(ukey, r.seq, kinds[rng.Intn(len(kinds))])}
		if e.key.Kind() != base.KindDelete {
			e.value = []byte(strconv.Itoa(rng.Intn(10)))
			if r.mergerName == "append" {
				e.value = []byte(fmt.Sprintf("<%d>", r.seq))
			}
		}
		batch = append(batch, e)
		r.model = append(r.model, e)
	}
	sortEntries(batch)
	if rng.Intn(2) == 0 { // a flush may drop what no snapshot needs
		it := NewIter(newSliceIter(batch), GCOptions{Snapshots: r.snapshots, Merger: r.m})
		batch = collect(t, it)
		require.NoError(t, it.Close())
	}
	if len(batch) > 0 {
		f := r.s.newTable(r.s.nextFile, batch, 0)
		require.NoError(t, r.s.apply(&manifest.VersionEdit{NewFiles: []manifest.NewFile{{Level: 0, Meta: f}}}))
	}
}

// manual picks a manual compaction of a random level, of a random range
// or all; inputs already compacting make a pending compaction run first.
func (r *compactionModelRun) manual() {
	t, rng := r.t, r.rng
	level := rng.Intn(manifest.NumLevels)
	var start, end []byte
	if rng.Intn(2) == 0 {
		start = []byte(fmt.Sprintf("k%02d", rng.Intn(r.nKeys)))
		end = []byte(fmt.Sprintf("k%02d", rng.Intn(r.nKeys)))
		if string(start) > string(end) {
			start, end = end, start
		}
	}
	c, err := r.s.picker.PickManual(r.s.levels(), level, start, end)
	if errors.Is(err, ErrInputsCompacting) {
		require.NotEmpty(t, r.pending)
		r.complete()
		return
	}
	require.NoError(t, err)
	if c != nil {
		r.queue(c)
	}
}

// complete runs a random pending compaction and checks the model.
func (r *compactionModelRun) complete() {
	i := r.rng.Intn(len(r.pending))
	pc := r.pending[i]
	r.pending = append(r.pending[:i], r.pending[i+1:]...)
	r.s.last = pc.c
	runModelCompaction(r.t, r.rng, r.s, pc.levels, r.snapshots, r.m)
	r.compactions++
	checkModel(r.t, r.s, r.model, r.snapshots, r.seq, r.m)
}

// queue marks c's inputs compacting and makes it pending; pending
// compactions run when there are maxPending of them, or at random.
func (r *compactionModelRun) queue(c *Compaction) {
	for _, f := range c.InputFiles() {
		f.Compacting = true
	}
	r.pending = append(r.pending, pendingCompaction{c, r.s.levels()})
	for len(r.pending) >= r.maxPending || (len(r.pending) > 0 && r.rng.Intn(2) == 0) {
		r.complete()
	}
}

// runModelCompaction runs s.last, picked from levels, as the DB would and
// installs its result.
// splitRuns counts the model compactions that ran as more than one
// subcompaction.
var splitRuns int

// outputBusy counts the candidates the model's pickers refused because a
// pending compaction writes their output range.
var outputBusy int

func runModelCompaction(t *testing.T, rng *rand.Rand, s *lsm, levels *manifest.Levels, snapshots []uint64, m Merger) {
	c := s.last
	edit := &manifest.VersionEdit{}
	for i, files := range c.Inputs {
		level := c.StartLevel
		if i == 1 {
			level = c.OutputLevel
		}
		for _, f := range files {
			f.Compacting = false
			edit.DeletedFiles = append(edit.DeletedFiles, manifest.DeletedFile{Level: level, FileNum: f.FileNum})
		}
	}
	if c.IsMove {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: c.OutputLevel, Meta: c.Inputs[0][0]})
	} else {
		// The whole compaction's output in one run, and the same as up to
		// four subcompactions (key ranges run one after another, each
		// with its own iterators, elider and splitter): the entries must
		// be identical, and the ranges' tables are what gets installed.
		run := func(lower, upper []byte, emit func(e entry, split bool)) {
			it := NewIter(c.NewInputIterRange(s.opener, lower, upper), GCOptions{
				Snapshots:      snapshots,
				ElideTombstone: NewElider(levels, c.OutputLevel),
				Merger:         m,
			})
			sp := c.NewSplitter()
			var size uint64
			for ok := it.First(); ok; ok = it.Next() {
				split := sp.ShouldSplitBefore(it.Key(), size)
				if split {
					size = 0
				}
				emit(entry{key: it.Key().Clone(), value: append([]byte(nil), it.Value()...)}, split)
				size += uint64(it.Key().Size() + len(it.Value()))
			}
			require.NoError(t, it.Close())
			require.Zero(t, s.open, "tables left open")
		}
		var whole []entry
		run(nil, nil, func(e entry, _ bool) { whole = append(whole, e) })
		bounds := c.SubcompactionBounds(1+rng.Intn(4), 0)
		if len(bounds) > 0 {
			splitRuns++
		}
		var parts, cur []entry
		finish := func() {
			if len(cur) > 0 {
				f := s.newTable(s.nextFile, cur, 0)
				edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: c.OutputLevel, Meta: f})
			}
			cur = nil
		}
		for r := 0; r <= len(bounds); r++ {
			lower, upper := SubcompactionRange(bounds, r)
			run(lower, upper, func(e entry, split bool) {
				if split {
					finish()
				}
				cur = append(cur, e)
				parts = append(parts, e)
			})
			finish()
		}
		require.Equal(t, formatByUserKey(whole), formatByUserKey(parts), "%s as subcompactions %q", c, bounds)
	}
	require.NoError(t, s.apply(edit), "installing %s", c)
}

// checkModel reads every key of the model at every snapshot and at the
// latest seqnum through the LSM and compares.
func checkModel(t *testing.T, s *lsm, model []entry, snapshots []uint64, latest uint64, m Merger) {
	// Each key's versions in lookup order: L0 tables newest first, then
	// L1..L6.
	inLSM := map[string][]entry{}
	for _, files := range s.levels() {
		for _, f := range files {
			for _, e := range s.tables[f.FileNum] {
				uk := string(e.key.UserKey)
				if vs := inLSM[uk]; len(vs) > 0 && vs[len(vs)-1].key.SeqNum() <= e.key.SeqNum() {
					t.Fatalf("key %s: version #%d found below #%d\n%s", uk, e.key.SeqNum(), vs[len(vs)-1].key.SeqNum(), s.describe(false))
				}
				inLSM[uk] = append(inLSM[uk], e)
			}
		}
	}
	all := append([]entry(nil), model...)
	sortEntries(all)
	want := byUserKey(all)
	for uk, versions := range want {
		for _, r := range append(append([]uint64(nil), snapshots...), latest) {
			v1, ok1, err1 := resolveAt([]byte(uk), versions, r, m)
			v2, ok2, err2 := resolveAt([]byte(uk), inLSM[uk], r, m)
			if v1 != v2 || ok1 != ok2 || (err1 != nil) != (err2 != nil) {
				t.Fatalf("key %s at #%d (snapshots %v): model (%q, %v, %v), LSM (%q, %v, %v)\nLSM:\n%s",
					uk, r, snapshots, v1, ok1, err1, v2, ok2, err2, s.describe(false))
			}
		}
	}
}
