package compaction

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/testutil"
)

// lsm is the state of an LSM data-driven test: a version of column family
// 0 whose tables live in memory as sorted entries.
type lsm struct {
	t        *testing.T
	version  *manifest.Version
	tables   map[uint64][]entry
	opts     PickerOptions
	picker   *Picker
	last     *Compaction // the last compaction picked
	nextFile uint64
	trace    *strings.Builder // table opens and closes, when tracing
	open     int              // table iterators currently open
}

func (s *lsm) levels() *manifest.Levels { return s.version.Levels(0) }

// opener opens a table as a contract-checking sliceIter.
func (s *lsm) opener(f *manifest.FileMetadata) (base.InternalIterator, error) {
	es, ok := s.tables[f.FileNum]
	if !ok {
		return nil, fmt.Errorf("no table %06d", f.FileNum)
	}
	if s.trace != nil {
		fmt.Fprintf(s.trace, "  open %06d\n", f.FileNum)
	}
	s.open++
	it := newSliceIter(es)
	it.onClose = func() {
		s.open--
		if s.trace != nil {
			fmt.Fprintf(s.trace, "  close %06d\n", f.FileNum)
		}
	}
	return it, nil
}

// newTable records a table holding es and returns its metadata.
func (s *lsm) newTable(num uint64, es []entry, size uint64) *manifest.FileMetadata {
	sortEntries(es)
	m := &manifest.FileMetadata{FileNum: num, Smallest: es[0].key.Clone(), Largest: es[len(es)-1].key.Clone()}
	m.SmallestSeq, m.LargestSeq = base.SeqNumMax, 0
	var computed uint64
	for _, e := range es {
		m.SmallestSeq = min(m.SmallestSeq, e.key.SeqNum())
		m.LargestSeq = max(m.LargestSeq, e.key.SeqNum())
		computed += uint64(e.key.Size() + len(e.value))
	}
	if size == 0 {
		size = computed
	}
	m.Size = size
	s.tables[num] = es
	if num >= s.nextFile {
		s.nextFile = num + 1
	}
	return m
}

func (s *lsm) apply(e *manifest.VersionEdit) error {
	nv, err := s.version.Apply(e, nil)
	if err != nil {
		return err
	}
	s.version = nv
	return nil
}

// define parses
//
//	L<n>
//	  <filenum> [size=<n>] [compacting]: entries...
//
// and builds the version.
func (s *lsm) define(d *testutil.Case) string {
	t := s.t
	s.version = &manifest.Version{CFs: map[uint32]*manifest.Levels{0: {}}}
	s.tables = map[uint64][]entry{}
	s.nextFile = 1
	s.opts = PickerOptions{
		L0CompactionTrigger:        int(d.Int(t, "l0-trigger", 0)),
		LBaseMaxBytes:              d.Int(t, "lbase-max-bytes", 0),
		LevelMultiplier:            int(d.Int(t, "multiplier", 0)),
		TargetFileSize:             d.Int(t, "target-file-size", 0),
		MaxGrandparentOverlapBytes: d.Int(t, "max-gp-overlap", 0),
		MaxExpandedBytes:           d.Int(t, "max-expanded", 0),
	}
	s.picker = NewPicker(s.opts)
	s.last = nil
	edit := &manifest.VersionEdit{}
	level := -1
	for _, line := range d.Input {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "L") && !strings.Contains(line, ":") {
			n, err := strconv.Atoi(line[1:])
			if err != nil {
				t.Fatalf("%s: bad level %q", d.Pos, line)
			}
			level = n
			continue
		}
		head, body, ok := strings.Cut(line, ":")
		if !ok || level < 0 {
			t.Fatalf("%s: bad table line %q", d.Pos, line)
		}
		hf := strings.Fields(head)
		num, err := strconv.ParseUint(hf[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: bad file number in %q", d.Pos, line)
		}
		var size uint64
		compacting := false
		for _, a := range testutil.ParseArgs(hf[1:]) {
			switch a.Key {
			case "size":
				size, _ = strconv.ParseUint(a.Vals[0], 10, 64)
			case "compacting":
				compacting = true
			default:
				t.Fatalf("%s: unknown table attribute %q", d.Pos, a.Key)
			}
		}
		es, err := parseEntries(strings.Fields(body))
		if err != nil || len(es) == 0 {
			t.Fatalf("%s: table %d: %v", d.Pos, num, err)
		}
		m := s.newTable(num, es, size)
		m.Compacting = compacting
		edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: level, Meta: m})
	}
	if err := s.apply(edit); err != nil {
		return "error: " + err.Error()
	}
	return s.describe(d.Has("sizes"))
}

// describe prints the LSM shape with every table's entries.
func (s *lsm) describe(sizes bool) string {
	var sb strings.Builder
	for l, files := range s.levels() {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "L%d:\n", l)
		for _, f := range files {
			fmt.Fprintf(&sb, "  %06d", f.FileNum)
			if sizes {
				fmt.Fprintf(&sb, " size=%d", f.Size)
			}
			if f.Compacting {
				sb.WriteString(" compacting")
			}
			sb.WriteString(":")
			for _, e := range s.tables[f.FileNum] {
				sb.WriteString(" " + e.String())
			}
			sb.WriteString("\n")
		}
	}
	if sb.Len() == 0 {
		return "(empty)"
	}
	return sb.String()
}

// newIter builds the iterator the iter command walks: a LevelIter over
// one level (level=n), or a MergingIter over every L0 table and a
// LevelIter per other level.
func (s *lsm) newIter(d *testutil.Case) base.InternalIterator {
	opts := IterOptions{}
	if v, ok := d.Arg("lower"); ok {
		opts.LowerBound = []byte(v[0])
	}
	if v, ok := d.Arg("upper"); ok {
		opts.UpperBound = []byte(v[0])
	}
	lv := s.levels()
	if d.Has("level") {
		return NewLevelIter(opts, lv[d.Int(s.t, "level", 0)], s.opener)
	}
	return NewMergingIter(opts, LevelIters(nil, lv, s.opener, opts)...)
}

// runIter executes iterator commands, one per input line, printing each
// step's result ("." when the iterator is exhausted).
func runIter(t *testing.T, d *testutil.Case, it base.InternalIterator, trace *strings.Builder) string {
	var sb strings.Builder
	for _, line := range d.Input {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var ok bool
		switch f[0] {
		case "first":
			ok = it.First()
		case "last":
			ok = it.Last()
		case "next":
			ok = it.Next()
		case "prev":
			ok = it.Prev()
		case "seek-ge":
			ok = it.SeekGE([]byte(f[1]))
		case "seek-lt":
			ok = it.SeekLT([]byte(f[1]))
		default:
			t.Fatalf("%s: unknown iterator command %q", d.Pos, f[0])
		}
		fmt.Fprintf(&sb, "%s: ", line)
		switch {
		case ok:
			sb.WriteString(formatEntry(it.Key(), it.Value()))
		case it.Error() != nil:
			fmt.Fprintf(&sb, "err=%v", it.Error())
		default:
			sb.WriteString(".")
		}
		sb.WriteString("\n")
		if trace != nil {
			sb.WriteString(trace.String())
			trace.Reset()
		}
	}
	if err := it.Close(); err != nil {
		fmt.Fprintf(&sb, "close: %v\n", err)
	}
	if trace != nil {
		sb.WriteString(trace.String())
		trace.Reset()
	}
	return sb.String()
}

func (s *lsm) pickResult(c *Compaction, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	s.last = c
	if c == nil {
		return "no compaction"
	}
	return c.String()
}

// targets prints Picker.Targets and the scores: the base level, the
// expected bottom size, and per level its size, target and score.
func (s *lsm) targets() string {
	lv := s.levels()
	tg, sc := s.picker.Targets(lv), s.picker.Scores(lv)
	var sb strings.Builder
	fmt.Fprintf(&sb, "base=L%d bottom=%.0f\n", tg.BaseLevel, tg.Bottom)
	for l := 0; l < manifest.NumLevels; l++ {
		size := lv.Size(l)
		switch {
		case l == 0 && len(lv[0]) > 0:
			fmt.Fprintf(&sb, "  L0: %d tables, score %.2f\n", len(lv[0]), sc[0])
		case l == 0:
		case l == manifest.NumLevels-1:
			fmt.Fprintf(&sb, "  L%d: size %d\n", l, size)
		case l < tg.BaseLevel && len(lv[l]) > 0:
			fmt.Fprintf(&sb, "  L%d: size %d, above the base level, score %.2f\n", l, size, sc[l])
		case l >= tg.BaseLevel:
			fmt.Fprintf(&sb, "  L%d: size %d, target %.0f, score %.2f\n", l, size, tg.MaxBytes[l], sc[l])
		}
	}
	return sb.String()
}

func (s *lsm) scores() string {
	sc := s.picker.Scores(s.levels())
	parts := make([]string, 0, manifest.NumLevels)
	for l, v := range sc {
		parts = append(parts, fmt.Sprintf("L%d=%.2f", l, v))
	}
	return "scores: " + strings.Join(parts, " ")
}

// markCompacting sets the Compacting flag of the last compaction's inputs,
// as the DB does while it runs.
func (s *lsm) markCompacting() {
	if s.last == nil {
		return
	}
	for _, f := range s.last.InputFiles() {
		f.Compacting = true
	}
}

// compact runs the last picked compaction: the merged inputs through the
// GC iterator and the splitter into new tables, then installs the result
// and prints the new LSM and the counters.
func (s *lsm) compact(d *testutil.Case) string {
	c := s.last
	if c == nil {
		return "no compaction picked"
	}
	s.last = nil
	edit := inputsDeleted(c)
	var stats string
	if c.IsMove {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: c.OutputLevel, Meta: c.Inputs[0][0]})
		stats = "moved"
	} else {
		var err error
		if stats, err = s.runCompaction(d, c, edit); err != nil {
			return "error: " + err.Error()
		}
	}
	if err := s.apply(edit); err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimRight(s.describe(d.Has("sizes")), "\n") + "\n" + stats
}

// inputsDeleted is an edit deleting c's inputs, which are no longer
// compacting.
func inputsDeleted(c *Compaction) *manifest.VersionEdit {
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
	return edit
}

// runCompaction runs c (not a move), adding its output tables to edit, and
// returns its counters. subcompactions=n runs it as up to n key ranges
// (SubcompactionBounds, no minimum size), one after another, each with its
// own input, GC iterator and splitter.
func (s *lsm) runCompaction(d *testutil.Case, c *Compaction, edit *manifest.VersionEdit) (string, error) {
	t := s.t
	m, err := mergerByName(d.Str("merger", "none"))
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	elide := NewElider(s.levels(), c.OutputLevel)
	if v, ok := d.Arg("elide"); ok {
		all := v != nil && v[0] == "true"
		elide = func([]byte) bool { return all }
	}
	var bounds [][]byte
	if n := d.Int(t, "subcompactions", 1); n > 1 {
		bounds = c.SubcompactionBounds(int(n), 0)
	}
	var total GCStats
	for r := 0; r <= len(bounds); r++ {
		lower, upper := SubcompactionRange(bounds, r)
		elide := elide
		if !d.Has("elide") {
			elide = NewElider(s.levels(), c.OutputLevel) // keeps cursors: one per range
		}
		st, err := s.runSubcompaction(d, c, edit, GCOptions{Snapshots: d.Uints(t, "snapshots"), ElideTombstone: elide, Merger: m}, lower, upper)
		if err != nil {
			return "", err
		}
		total.Add(st)
	}
	stats := formatStats(total)
	if d.Has("subcompactions") {
		var bs []string
		for _, b := range bounds {
			bs = append(bs, fmt.Sprintf("%q", b))
		}
		stats = fmt.Sprintf("subcompaction bounds: [%s]\n%s", strings.Join(bs, " "), stats)
	}
	return stats, nil
}

// runSubcompaction runs c's key range [lower, upper) through a GC iterator
// with gc and a splitter (target-file-size= overrides c's), adding the
// tables it writes to edit.
func (s *lsm) runSubcompaction(d *testutil.Case, c *Compaction, edit *manifest.VersionEdit, gc GCOptions, lower, upper []byte) (GCStats, error) {
	t := s.t
	it := NewIter(c.NewInputIterRange(s.opener, lower, upper), gc)
	sp := c.NewSplitter()
	if d.Has("target-file-size") {
		sp = NewSplitter(SplitterOptions{TargetFileSize: d.Int(t, "target-file-size", 0), Grandparents: c.Grandparents})
	}
	var cur []entry
	var size uint64
	finish := func() {
		if len(cur) > 0 {
			m := s.newTable(s.nextFile, cur, 0)
			edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: c.OutputLevel, Meta: m})
		}
		cur, size = nil, 0
	}
	for ok := it.First(); ok; ok = it.Next() {
		if sp.ShouldSplitBefore(it.Key(), size) {
			finish()
		}
		e := entry{key: it.Key().Clone(), value: append([]byte(nil), it.Value()...)}
		cur = append(cur, e)
		size += uint64(e.key.Size() + len(e.value))
	}
	finish()
	if err := it.Close(); err != nil {
		return GCStats{}, err
	}
	if s.open != 0 {
		t.Fatalf("%s: %d tables left open", d.Pos, s.open)
	}
	return it.Stats(), nil
}

// TestLSMDataDriven runs the files testdata/{iter,picker,compact}:
//
//	define [l0-trigger= lbase-max-bytes= multiplier= target-file-size=
//	        max-gp-overlap= max-expanded=] [sizes]
//	  the LSM, level by level: "L1" then "  000007 [size=n] [compacting]: a.SET.5:v ..."
//	iter [level=n] [lower=k] [upper=k] [trace]
//	  first | last | next | prev | seek-ge k | seek-lt k, one per line
//	scores
//	targets                          Picker.Targets: base level, bottom, per-level targets and scores
//	pick [mark]                      Picker.Pick; mark sets Compacting on its inputs
//	pick-manual level=n [start=k] [end=k] [mark]
//	compact [snapshots=] [merger=] [elide=true|false] [target-file-size=n] [subcompactions=n] [sizes]
//	  runs the last picked compaction and installs its output
func TestLSMDataDriven(t *testing.T) {
	for _, name := range []string{"iter", "picker", "compact"} {
		t.Run(name, func(t *testing.T) {
			s := &lsm{t: t}
			testutil.RunDataDriven(t, "testdata/"+name, func(t *testing.T, d *testutil.Case) string {
				s.t = t
				switch d.Cmd {
				case "define":
					return s.define(d)
				case "iter":
					var trace *strings.Builder
					if d.Has("trace") {
						s.trace = &strings.Builder{}
						trace = s.trace
					}
					out := runIter(t, d, s.newIter(d), trace)
					s.trace = nil
					if s.open != 0 {
						t.Fatalf("%s: %d tables left open", d.Pos, s.open)
					}
					return out
				case "scores":
					return s.scores()
				case "targets":
					return s.targets()
				case "pick":
					out := s.pickResult(s.picker.Pick(s.levels()), nil)
					if d.Has("mark") {
						s.markCompacting()
					}
					return out
				case "pick-manual":
					var start, end []byte
					if v, ok := d.Arg("start"); ok {
						start = []byte(v[0])
					}
					if v, ok := d.Arg("end"); ok {
						end = []byte(v[0])
					}
					out := s.pickResult(s.picker.PickManual(s.levels(), int(d.Int(t, "level", 0)), start, end))
					if d.Has("mark") {
						s.markCompacting()
					}
					return out
				case "compact":
					return s.compact(d)
				}
				t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
				return ""
			})
		})
	}
}
