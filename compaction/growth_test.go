package compaction

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"

	"github.com/sievedb/sieve/internal/manifest"
	"github.com/stretchr/testify/require"
)

// growth simulates the LSM shape the Picker produces under a sustained
// load of flushes over a uniform key space, without data: tables are key
// ranges with sizes. Every flush is one L0 table over the whole key space;
// after each, compactions are picked and installed one at a time until
// none is needed; a compaction's output keeps its input bytes (no
// overwrites) and is cut into tables of TargetFileSize, each covering an
// equal share of the compaction's key range.
type growth struct {
	t       *testing.T
	picker  *Picker
	version *manifest.Version
	next    uint64 // next file number
	seq     uint64
	flushes int
	flushed uint64 // bytes flushed
	written uint64 // bytes written by compactions (moves write nothing)
	base    int    // base level after the last settle
}

const growthKeys = 1_000_000 // keys are "%07d" below this

func growthKey(k int) []byte { return []byte(fmt.Sprintf("%07d", k)) }

func (g *growth) table(lo, hi int, size uint64) *manifest.FileMetadata {
	g.next++
	g.seq += 10
	return fileMeta(g.next, growthKey(lo), growthKey(hi), g.seq-9, g.seq, size)
}

func (g *growth) apply(e *manifest.VersionEdit) {
	v, err := g.version.Apply(e, nil)
	require.NoError(g.t, err)
	g.version = v
}

// settle runs compactions until the picker finds none, and returns the
// base levels seen on the way.
func (g *growth) settle() []int {
	var bases []int
	for n := 0; ; n++ {
		require.Less(g.t, n, 100000, "compactions do not settle")
		lv := g.version.Levels(0)
		bases = append(bases, g.picker.Targets(lv).BaseLevel)
		c := g.picker.Pick(lv)
		if c == nil {
			g.base = bases[len(bases)-1]
			return bases
		}
		e := &manifest.VersionEdit{}
		for i, files := range c.Inputs {
			level := c.StartLevel
			if i == 1 {
				level = c.OutputLevel
			}
			for _, f := range files {
				e.DeletedFiles = append(e.DeletedFiles, manifest.DeletedFile{Level: level, FileNum: f.FileNum})
			}
		}
		if c.IsMove {
			e.NewFiles = append(e.NewFiles, manifest.NewFile{Level: c.OutputLevel, Meta: c.Inputs[0][0]})
		} else {
			size := c.InputBytes()
			g.written += size
			lo, hi := atoiKey(g.t, c.Smallest), atoiKey(g.t, c.Largest)
			n := int(max(1, (size+uint64(g.picker.opts.TargetFileSize)-1)/uint64(g.picker.opts.TargetFileSize)))
			n = min(n, hi-lo+1)
			for i := 0; i < n; i++ {
				tlo, thi := lo+(hi-lo+1)*i/n, lo+(hi-lo+1)*(i+1)/n-1
				e.NewFiles = append(e.NewFiles, manifest.NewFile{Level: c.OutputLevel, Meta: g.table(tlo, thi, size/uint64(n))})
			}
		}
		g.apply(e)
	}
}

func atoiKey(t *testing.T, k []byte) int {
	var n int
	_, err := fmt.Sscanf(string(k), "%d", &n)
	require.NoError(t, err)
	return n
}

// shape renders the levels: "base L5: L5 900 (9) L6 5100 (51)".
func (g *growth) shape() string {
	lv := g.version.Levels(0)
	var sb strings.Builder
	fmt.Fprintf(&sb, "base L%d:", g.base)
	for l := 0; l < manifest.NumLevels; l++ {
		if len(lv[l]) > 0 {
			fmt.Fprintf(&sb, " L%d %d (%d)", l, lv.Size(l), len(lv[l]))
		}
	}
	if g.flushed > 0 {
		fmt.Fprintf(&sb, "; write-amp %.2f", float64(g.flushed+g.written)/float64(g.flushed))
	}
	return sb.String()
}

// TestGrowthDataDriven runs testdata/growth:
//
//	init [l0-trigger= lbase-max-bytes= multiplier= target-file-size=]
//	flush n= size= [every=]   n flushes of size bytes, each followed by
//	                          compactions until none is needed; prints the
//	                          shape every `every` flushes and at the end
//	shrink factor=            every table keeps that fraction of its bytes
//	                          (as if compactions had dropped the rest),
//	                          then compactions run until none is needed
//
// Checked on the way: during flushes the base level never moves down, and
// after each settle no level above the base level holds data.
func TestGrowthDataDriven(t *testing.T) {
	var g *growth
	testutil.RunDataDriven(t, "testdata/growth", func(t *testing.T, d *testutil.Case) string {
		switch d.Cmd {
		case "init":
			g = &growth{t: t, version: &manifest.Version{CFs: map[uint32]*manifest.Levels{0: {}}}, base: manifest.NumLevels - 1}
			g.picker = NewPicker(PickerOptions{
				L0CompactionTrigger: int(d.Int(t, "l0-trigger", 0)),
				LBaseMaxBytes:       d.Int(t, "lbase-max-bytes", 0),
				LevelMultiplier:     int(d.Int(t, "multiplier", 0)),
				TargetFileSize:      d.Int(t, "target-file-size", 0),
			})
			return ""
		case "flush":
			n, size, every := int(d.Int(t, "n", 1)), uint64(d.Int(t, "size", 0)), int(d.Int(t, "every", 0))
			var sb strings.Builder
			for i := 0; i < n; i++ {
				g.apply(&manifest.VersionEdit{NewFiles: []manifest.NewFile{{Level: 0, Meta: g.table(0, growthKey0Max, size)}}})
				g.flushes++
				g.flushed += size
				prev := g.base
				for _, b := range g.settle() {
					require.LessOrEqual(t, b, prev, "%s: flush %d: base level moved down to L%d", d.Pos, g.flushes, b)
					prev = b
				}
				g.checkAboveBase(d)
				if (every > 0 && (i+1)%every == 0) || i == n-1 {
					fmt.Fprintf(&sb, "flush %d: %s\n", g.flushes, g.shape())
				}
			}
			return sb.String()
		case "shrink":
			var factor float64
			if _, err := fmt.Sscanf(d.Str("factor", "1"), "%g", &factor); err != nil {
				t.Fatalf("%s: bad factor", d.Pos)
			}
			e := &manifest.VersionEdit{}
			for l, files := range g.version.Levels(0) {
				for _, f := range files {
					size := uint64(float64(f.Size) * factor)
					e.DeletedFiles = append(e.DeletedFiles, manifest.DeletedFile{Level: l, FileNum: f.FileNum})
					e.NewFiles = append(e.NewFiles, manifest.NewFile{Level: l, Meta: fileMeta(f.FileNum, f.Smallest.UserKey, f.Largest.UserKey, f.SmallestSeq, f.LargestSeq, size)})
				}
			}
			g.apply(e)
			before := g.shape()
			g.flushed, g.written = 0, 0
			g.settle()
			g.checkAboveBase(d)
			return fmt.Sprintf("shrunk:  %s\nsettled: %s\nwritten: %d\n", before, g.shape(), g.written)
		}
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		return ""
	})
}

const growthKey0Max = growthKeys - 1

func (g *growth) checkAboveBase(d *testutil.Case) {
	lv := g.version.Levels(0)
	for l := 1; l < g.base; l++ {
		require.Empty(g.t, lv[l], "%s: after %d flushes L%d holds data above the base level L%d\n%s", d.Pos, g.flushes, l, g.base, g.version)
	}
}
