package main

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
)

// lsmTable is one table of the tree with what its file says about it.
type lsmTable struct {
	meta      *manifest.FileMetadata
	props     *sstable.Properties
	policy    string
	filter    filter.BlockInfo
	hasFilter bool
	// probes and fps count filter probes with keys the table does not
	// hold and the probes that passed (false positives).
	probes, fps int
	err         error // the table could not be read
}

type lsmLevel struct {
	tables            []*lsmTable
	size, entries     uint64
	filterBytes, keys uint64
	probes, fps       int
	expectedSum       float64 // sum over probed tables of expected FPR × probes
	errors            int
}

type lsmCF struct {
	id       uint32
	name     string
	merger   string
	levels   [manifest.NumLevels]lsmLevel
	policies map[string]bool
}

type lsmTree struct {
	dir                       string
	manifestNum, logNum, next uint64
	lastSeq                   uint64
	cfs                       []*lsmCF
	probes                    int
}

// loadLSM reads the current version of the database in dir and opens
// every table it names to read its properties and probe its filter with
// probes keys it does not hold.
func loadLSM(fs *roFS, dir string, probes int) (*lsmTree, error) {
	if err := fs.checkDB(dir); err != nil {
		return nil, err
	}
	vs, err := manifest.Load(fs, dir, manifest.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer vs.Close()
	v := vs.Current()
	defer v.Unref()
	t := &lsmTree{dir: dir, manifestNum: vs.ManifestNum(), logNum: vs.LogNum(), next: vs.PeekNextFileNum(),
		lastSeq: vs.LastSeq(), probes: probes}
	names := vs.ColumnFamilies()
	for _, id := range slices.Sorted(maps.Keys(v.CFs)) {
		cf := &lsmCF{id: id, name: names[id].Name, merger: names[id].Merger, policies: map[string]bool{}}
		for level, files := range v.CFs[id] {
			for _, f := range files {
				lt := probeTable(fs, dir, f, probes)
				cf.levels[level].add(lt)
				if lt.err == nil && lt.policy != "" {
					cf.policies[lt.policy] = true
				}
			}
		}
		t.cfs = append(t.cfs, cf)
	}
	return t, nil
}

// add counts table lt in l: its size, and unless it could not be read its
// entries, filter bytes and keys, and filter probes.
func (l *lsmLevel) add(lt *lsmTable) {
	l.tables = append(l.tables, lt)
	l.size += lt.meta.Size
	if lt.err != nil {
		l.errors++
		return
	}
	l.entries += lt.props.NumEntries
	l.filterBytes += lt.props.FilterSize
	l.keys += lt.props.FilterKeys
	l.probes += lt.probes
	l.fps += lt.fps
	if lt.hasFilter {
		l.expectedSum += lt.filter.ExpectedFPR() * float64(lt.probes)
	}
}

func probeTable(fs vfs.FS, dir string, f *manifest.FileMetadata, probes int) *lsmTable {
	lt := &lsmTable{meta: f}
	t, err := openTableNamed(fs, base.MakeFilename(dir, base.FileTypeTable, f.FileNum), false)
	if err != nil {
		lt.err = err
		return lt
	}
	defer t.Close()
	lt.props = t.r.Properties()
	lt.policy = lt.props.FilterPolicy
	info, ok, err := t.filterInfo()
	if err != nil {
		lt.err = err
		return lt
	}
	lt.filter, lt.hasFilter = info, ok && t.r.FilterState() == sstable.FilterLoaded
	if !lt.hasFilter {
		return lt
	}
	rng := rand.New(rand.NewPCG(f.FileNum, 0x5eed))
	key := make([]byte, 16)
	for range probes {
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		if !t.r.MayContain(key) {
			lt.probes++
			continue
		}
		held := false
		if err := t.r.Get(key, base.SeqNumMax, nil, func(base.InternalKey, []byte) bool { held = true; return false }); err != nil {
			lt.err = err
			return lt
		}
		if !held {
			lt.probes++
			lt.fps++
		}
	}
	return lt
}

func lsmCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lsm", "DIR", stderr)
	var bf byteFmt
	bf.keyFlags(fs)
	format := fs.String("format", "text", "output `format`: text, svg (a picture of the tree) or html (the picture and the text)")
	probes := fs.Int("probes", 1000, "filter probes per table with keys it does not hold, for the measured FPR (0: none)")
	tables := fs.Bool("tables", false, "list every table under its level")
	dir, err := bf.parse(fs, args)
	if err != nil {
		return err
	}
	switch *format {
	case "text", "svg", "html":
	default:
		return usagef("lsm: -format=%s: want text, svg or html", *format)
	}
	if *probes < 0 {
		return usagef("lsm: -probes must be >= 0")
	}
	t, err := loadLSM(newROFS(), dir, *probes)
	if err != nil {
		return err
	}
	switch *format {
	case "svg":
		t.svg(stdout, &bf)
	case "html":
		var text bytes.Buffer
		t.text(&text, &bf, *tables)
		fmt.Fprintf(stdout, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>sieve lsm %s</title>\n", html.EscapeString(dir))
		fmt.Fprintf(stdout, "<style>body{font-family:sans-serif;margin:1em} pre{font-size:12px}</style></head><body>\n")
		fmt.Fprintf(stdout, "<h1>LSM tree of %s</h1>\n", html.EscapeString(dir))
		t.svg(stdout, &bf)
		fmt.Fprintf(stdout, "<pre>%s</pre>\n</body></html>\n", html.EscapeString(text.String()))
	default:
		t.text(stdout, &bf, *tables)
	}
	for _, cf := range t.cfs {
		for _, l := range cf.levels {
			if l.errors > 0 {
				return fmt.Errorf("%s: some tables could not be read (see above)", dir)
			}
		}
	}
	return nil
}

func pct(num, den float64) string {
	if den == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*num/den)
}

func (l *lsmLevel) fprText() string {
	if l.probes == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (expected %s) of %d", pct(float64(l.fps), float64(l.probes)), pct(l.expectedSum, float64(l.probes)), l.probes)
}

func (l *lsmLevel) keyRange(bf *byteFmt) string {
	if len(l.tables) == 0 {
		return ""
	}
	lo, hi := l.tables[0].meta.Smallest.UserKey, l.tables[0].meta.Largest.UserKey
	for _, t := range l.tables {
		if bytes.Compare(t.meta.Smallest.UserKey, lo) < 0 {
			lo = t.meta.Smallest.UserKey
		}
		if bytes.Compare(t.meta.Largest.UserKey, hi) > 0 {
			hi = t.meta.Largest.UserKey
		}
	}
	return bf.key(lo) + " .. " + bf.key(hi)
}

func (t *lsmTree) text(w io.Writer, bf *byteFmt, tables bool) {
	fmt.Fprintf(w, "%s: MANIFEST-%06d, log %d, next file %d, last seq %d\n", t.dir, t.manifestNum, t.logNum, t.next, t.lastSeq)
	if t.probes > 0 {
		fmt.Fprintf(w, "FPR: measured with %d random 16-byte keys per table that it does not hold; expected from each filter's geometry\n", t.probes)
	}
	for _, cf := range t.cfs {
		var pol []string
		for p := range cf.policies {
			pol = append(pol, p)
		}
		sort.Strings(pol)
		extra := ""
		if len(pol) > 0 {
			extra = ", filter " + strings.Join(pol, " ")
		}
		if cf.merger != "" {
			extra += ", merger " + bf.key([]byte(cf.merger))
		}
		fmt.Fprintf(w, "\ncf %d %s%s\n", cf.id, bf.key([]byte(cf.name)), extra)
		fmt.Fprintf(w, "  %-5s %6s %10s %9s %10s %8s  %-34s %s\n", "level", "tables", "size", "entries", "filter", "bits/key", "FPR measured", "key range")
		var tot lsmLevel // the family's tables as one level
		for level := range cf.levels {
			l := &cf.levels[level]
			for _, lt := range l.tables {
				tot.add(lt)
			}
			if len(l.tables) == 0 {
				continue
			}
			l.row(w, fmt.Sprintf("L%d", level), bf)
			l.errorRows(w)
			if tables {
				for _, lt := range l.tables {
					lt.row(w, bf)
				}
			}
		}
		if len(tot.tables) == 0 {
			fmt.Fprintf(w, "  (no tables)\n")
			continue
		}
		tot.row(w, "total", bf)
	}
}

func (l *lsmLevel) row(w io.Writer, name string, bf *byteFmt) {
	bpk := "-"
	if l.keys > 0 {
		bpk = fmt.Sprintf("%.2f", 8*float64(l.filterBytes)/float64(l.keys))
	}
	fmt.Fprintf(w, "  %-5s %6d %10s %9d %10s %8s  %-34s %s\n", name, len(l.tables), size(l.size), l.entries, size(l.filterBytes), bpk, l.fprText(), l.keyRange(bf))
}

// errorRows lists the tables of l that could not be read, under its row.
func (l *lsmLevel) errorRows(w io.Writer) {
	if l.errors > 0 {
		for _, t := range l.tables {
			if t.err != nil {
				fmt.Fprintf(w, "        %06d: ERROR: %v\n", t.meta.FileNum, t.err)
			}
		}
	}
}

func (t *lsmTable) row(w io.Writer, bf *byteFmt) {
	m := t.meta
	if t.err != nil {
		return // printed with its level
	}
	f := "no filter"
	if t.hasFilter {
		f = fmt.Sprintf("%s, FPR %s of %d", t.filter, pct(float64(t.fps), float64(t.probes)), t.probes)
	}
	fmt.Fprintf(w, "        %06d %10s %9d  [%s .. %s] seqs %d..%d; %s\n", m.FileNum, size(m.Size), t.props.NumEntries,
		bf.ikey(m.Smallest), bf.ikey(m.Largest), m.SmallestSeq, m.LargestSeq, f)
}

// The geometry of the SVG picture.
const (
	svgWidth  = 1000
	svgLeft   = 90  // level labels
	svgRight  = 330 // level figures
	svgRowH   = 22
	svgHeader = 28
)

var svgColors = [manifest.NumLevels]string{"#e4572e", "#f3a712", "#a8c686", "#669bbc", "#29335c", "#7b4b94", "#3c6e71"}

// svg draws each column family's tree: one row per level (one per table in
// L0, whose tables overlap), each table a box spanning its key range. The
// horizontal axis is key order: the ranks of all table boundaries of the
// family, so that tables that overlap in keys overlap on the page.
func (t *lsmTree) svg(w io.Writer, bf *byteFmt) {
	var body strings.Builder
	y := 10
	for _, cf := range t.cfs {
		y = svgFamily(&body, cf, bf, y)
	}
	fmt.Fprintf(w, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"13\">\n", svgWidth, y+20, svgWidth, y+20)
	fmt.Fprintf(w, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n")
	io.WriteString(w, body.String())
	fmt.Fprintf(w, "<text x=\"10\" y=\"%d\" font-size=\"11\" fill=\"#666\">x: key order (ranks of table boundaries); one row per level, one per table in L0 (newest first); hover a table for details</text>\n", y+10)
	fmt.Fprintf(w, "</svg>\n")
}

// keyAxis returns the sorted distinct boundary keys of cf's tables and the
// x coordinate of a key: its rank among them.
func keyAxis(cf *lsmCF) ([][]byte, func(k []byte) float64) {
	var keys [][]byte
	for _, l := range cf.levels {
		for _, lt := range l.tables {
			keys = append(keys, lt.meta.Smallest.UserKey, lt.meta.Largest.UserKey)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
	uniq := keys[:0]
	for i, k := range keys {
		if i == 0 || !bytes.Equal(k, keys[i-1]) {
			uniq = append(uniq, k)
		}
	}
	plot := float64(svgWidth - svgLeft - svgRight)
	return uniq, func(k []byte) float64 {
		if len(uniq) < 2 {
			return svgLeft
		}
		i := sort.Search(len(uniq), func(i int) bool { return bytes.Compare(uniq[i], k) >= 0 })
		return svgLeft + plot*float64(i)/float64(len(uniq)-1)
	}
}

// svgFamily draws cf from height y down and returns the height below it.
func svgFamily(body *strings.Builder, cf *lsmCF, bf *byteFmt, y int) int {
	fmt.Fprintf(body, "<text x=\"10\" y=\"%d\" font-weight=\"bold\">cf %d %s</text>\n", y+16, cf.id, html.EscapeString(bf.key([]byte(cf.name))))
	y += svgHeader
	uniq, x := keyAxis(cf)
	if len(uniq) == 0 {
		fmt.Fprintf(body, "<text x=\"%d\" y=\"%d\" fill=\"#666\">no tables</text>\n", svgLeft, y+14)
		y += svgRowH
	}
	for level := range cf.levels {
		l := &cf.levels[level]
		if len(l.tables) == 0 {
			continue
		}
		fmt.Fprintf(body, "<text x=\"10\" y=\"%d\">L%d</text>\n", y+15, level)
		fmt.Fprintf(body, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s, %s, filter %s, FPR %s</text>\n",
			svgWidth-svgRight+10, y+15, count(len(l.tables), "table"), html.EscapeString(size(l.size)), html.EscapeString(size(l.filterBytes)), pct(float64(l.fps), float64(l.probes)))
		for i, lt := range l.tables {
			ry := y
			if level == 0 {
				ry = y + i*svgRowH
			}
			svgTable(body, lt, level, x, ry, bf)
		}
		if level == 0 {
			y += len(l.tables) * svgRowH
		} else {
			y += svgRowH
		}
	}
	if len(uniq) > 0 {
		fmt.Fprintf(body, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#666\">%s</text>\n", svgLeft, y+12, html.EscapeString(bf.key(uniq[0])))
		fmt.Fprintf(body, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#666\" text-anchor=\"end\">%s</text>\n", svgWidth-svgRight, y+12, html.EscapeString(bf.key(uniq[len(uniq)-1])))
		y += 18
	}
	return y + 10
}

// svgTable draws one table's box at height ry, with its details as a
// tooltip; a table that failed to open is red.
func svgTable(body *strings.Builder, lt *lsmTable, level int, x func([]byte) float64, ry int, bf *byteFmt) {
	x0, x1 := x(lt.meta.Smallest.UserKey), x(lt.meta.Largest.UserKey)
	fill := svgColors[level]
	if lt.err != nil {
		fill = "#ff0000"
	}
	tip := fmt.Sprintf("%06d L%d %s [%s .. %s] seqs %d..%d", lt.meta.FileNum, level, size(lt.meta.Size),
		bf.key(lt.meta.Smallest.UserKey), bf.key(lt.meta.Largest.UserKey), lt.meta.SmallestSeq, lt.meta.LargestSeq)
	if lt.err == nil {
		tip += fmt.Sprintf(", %d entries, filter %s", lt.props.NumEntries, size(lt.props.FilterSize))
	} else {
		tip += ", ERROR: " + lt.err.Error()
	}
	fmt.Fprintf(body, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>%s</title></rect>\n",
		x0, ry+2, max(x1-x0, 2), svgRowH-4, fill, html.EscapeString(tip))
}
