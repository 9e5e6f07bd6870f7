package compaction

import (
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
			splitRuns = 0
			for trial := 0; trial < trials(10); trial++ {
				runCompactionModel(t, rng, mergerName)
			}
			// Guard against bounds that never split (the equivalence check
			// would then be vacuous).
			require.Positive(t, splitRuns, "no compaction ran as subcompactions")
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
	s.picker = randomModelPicker(rng)
	nKeys := 5 + rng.Intn(40)
	maxPending := 1 + rng.Intn(3)
	var model []entry // every write, any order
	var snapshots []uint64
	var pending []pendingCompaction
	seq := uint64(0)
	compactions := 0
	complete := func() {
		i := rng.Intn(len(pending))
		pc := pending[i]
		pending = append(pending[:i], pending[i+1:]...)
		s.last = pc.c
		runModelCompaction(t, rng, s, pc.levels, snapshots, m)
		compactions++
		checkModel(t, s, model, snapshots, seq, m)
	}
	queue := func(c *Compaction) {
		for _, f := range c.InputFiles() {
			f.Compacting = true
		}
		pending = append(pending, pendingCompaction{c, s.levels()})
		for len(pending) >= maxPending || (len(pending) > 0 && rng.Intn(2) == 0) {
			complete()
		}
	}

	for step := 0; step < 200; step++ {
		switch r := rng.Intn(20); {
		case r < 8: // flush a batch of writes to L0
			var batch []entry
			for n := 1 + rng.Intn(20); n > 0; n-- {
				seq++
				ukey := []byte(fmt.Sprintf("k%02d", rng.Intn(nKeys)))
				e := entry{key: base.MakeInternalKey(ukey, seq, kinds[rng.Intn(len(kinds))])}
				if e.key.Kind() != base.KindDelete {
					e.value = []byte(strconv.Itoa(rng.Intn(10)))
					if mergerName == "append" {
						e.value = []byte(fmt.Sprintf("<%d>", seq))
					}
				}
				batch = append(batch, e)
				model = append(model, e)
			}
			sortEntries(batch)
			if rng.Intn(2) == 0 { // a flush may drop what no snapshot needs
				it := NewIter(newSliceIter(batch), GCOptions{Snapshots: snapshots, Merger: m})
				batch = collect(t, it)
				require.NoError(t, it.Close())
			}
			if len(batch) > 0 {
				f := s.newTable(s.nextFile, batch, 0)
				require.NoError(t, s.apply(&manifest.VersionEdit{NewFiles: []manifest.NewFile{{Level: 0, Meta: f}}}))
			}
		case r < 10:
			snapshots = append(snapshots, seq)
			sort.Slice(snapshots, func(i, j int) bool { return snapshots[i] < snapshots[j] })
		case r < 12:
			if len(snapshots) > 0 {
				i := rng.Intn(len(snapshots))
				snapshots = append(snapshots[:i], snapshots[i+1:]...)
			}
		case r < 17:
			if c := s.picker.Pick(s.levels()); c != nil {
				queue(c)
			} else if len(pending) > 0 {
				complete()
			}
		case r < 19:
			level := rng.Intn(manifest.NumLevels)
			var start, end []byte
			if rng.Intn(2) == 0 {
				start = []byte(fmt.Sprintf("k%02d", rng.Intn(nKeys)))
				end = []byte(fmt.Sprintf("k%02d", rng.Intn(nKeys)))
				if string(start) > string(end) {
					start, end = end, start
				}
			}
			c, err := s.picker.PickManual(s.levels(), level, start, end)
			if errors.Is(err, ErrInputsCompacting) {
				require.NotEmpty(t, pending)
				complete()
				break
			}
			require.NoError(t, err)
			if c != nil {
				queue(c)
			}
		default:
			s.picker = randomModelPicker(rng)
		}
	}
	for len(pending) > 0 {
		complete()
	}
	require.NotZero(t, compactions)
}

// runModelCompaction runs s.last, picked from levels, as the DB would and
// installs its result.
// splitRuns counts the model compactions that ran as more than one
// subcompaction.
var splitRuns int

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
