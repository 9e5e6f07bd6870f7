package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/sketchcol"
)

// readFlags are the flags "sieve get" and "sieve scan" share: the column
// family and how keys and values are printed.
type readFlags struct {
	cf     string
	format string  // auto, or a byteFmt mode for keys and values
	keys   byteFmt // keys: -keys, else -format's mode (text under auto)
	vals   byteFmt // raw values: -format's mode (text under auto), cut at -v
	decode bool    // decode the sketch families' values (-format auto)
}

func (r *readFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.cf, "cf", "default", "the column family to read, by `name`")
	fs.StringVar(&r.format, "format", "auto", "how to print keys and values: `auto` (text, and the values of the sketch families decoded), text, quote, hex or base64 (keys and values alike, nothing decoded)")
	fs.StringVar(&r.keys.mode, "keys", "", "how to print keys, and to read the keys given (KEY, -start, -end, -prefix): `text`, quote, hex or base64 (default: as -format)")
	fs.IntVar(&r.vals.max, "v", 0, "print at most `N` bytes of each raw value (0: whole values)")
}

// resolve checks the flags and settles the key and value modes.
func (r *readFlags) resolve() error {
	mode := r.format
	switch {
	case r.format == "auto":
		mode, r.decode = "text", true
	case !validMode(r.format):
		return usagef("-format=%s: want auto, %s", r.format, keyModes)
	}
	r.vals.mode = mode
	if r.keys.mode == "" {
		r.keys.mode = mode
	}
	return r.keys.check()
}

// dbView is a database opened read-only on a pinned view of its files
// (pinFS), and one of its column families.
type dbView struct {
	pin    *pinFS
	db     *sieve.DB
	cfName string
	get    func([]byte) ([]byte, time.Time, error)
	iter   func(*sieve.IterOptions) *sieve.Iterator
	merger *unknownMerger // the family's merger when the tool does not have it
	sketch *sketchView    // set for the sketch families when decoding
}

// openView pins the database in dir and opens it read-only with column
// family cf.
func openView(dir string, rf *readFlags) (*dbView, error) {
	pin, err := pinDB(dir)
	if err != nil {
		return nil, err
	}
	v := &dbView{pin: pin, cfName: rf.cf}
	if err := v.open(dir, rf); err != nil {
		v.close()
		return nil, err
	}
	return v, nil
}

func (v *dbView) open(dir string, rf *readFlags) error {
	vs, err := manifest.Load(v.pin, dir, manifest.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	cfs := vs.ColumnFamilies()
	vs.Close()
	mergers := map[string]string{}
	for _, cf := range cfs {
		mergers[cf.Name] = cf.Merger
	}
	recorded, ok := mergers[rf.cf]
	if !ok {
		names := slices.Sorted(maps.Keys(mergers))
		return fmt.Errorf("%s: no column family %s (it has %s)", dir, rf.keys.key([]byte(rf.cf)), strings.Join(names, ", "))
	}
	opts := &sieve.Options{FS: v.pin, ReadOnly: true, BlockCacheSize: 8 << 20}
	var m sieve.Merger
	if m, v.merger = mergerFor(recorded); rf.cf == "default" {
		opts.Merger = m
	}
	if v.db, err = sieve.Open(dir, opts); err != nil {
		return err
	}
	if rf.cf == "default" {
		v.get, v.iter = v.db.GetWithExpiry, v.db.NewIter
	} else {
		h, err := v.db.OpenColumnFamily(rf.cf, &sieve.ColumnFamilyOptions{Merger: m})
		if err != nil {
			return err
		}
		v.get, v.iter = h.GetWithExpiry, h.NewIter
	}
	if rf.decode && (rf.cf == sketchcol.ColumnFamilyName || rf.cf == sketchcol.PagesColumnFamilyName) {
		v.sketch = newSketchView(v.db, &rf.vals, mergers)
	}
	return nil
}

// newSketchView opens a Store on the read-only database when both of its
// families exist (it reads paged filters through their pages).
func newSketchView(db *sieve.DB, bf *byteFmt, families map[string]string) *sketchView {
	s := &sketchView{bf: bf}
	_, hasSketch := families[sketchcol.ColumnFamilyName]
	_, hasPages := families[sketchcol.PagesColumnFamilyName]
	if !hasSketch || !hasPages {
		return s
	}
	st, err := sketchcol.Open(db)
	if err != nil {
		return s
	}
	s.st, s.pages = st, st.PagesColumnFamily()
	return s
}

func (v *dbView) close() {
	if v.db != nil {
		v.db.Close()
	}
	v.pin.Close()
}

// mergerFor returns the merger the tool uses for a family whose recorded
// merger is name: sketchcol's own, none, or a stand-in that shows a key's
// operands unmerged.
func mergerFor(name string) (sieve.Merger, *unknownMerger) {
	switch name {
	case "":
		return nil, nil
	case sketchcol.MergerName:
		return sketchcol.Merger{}, nil
	case sketchcol.PageMergerName:
		return sketchcol.PageMerger{}, nil
	}
	u := &unknownMerger{name: name, seen: map[string]unmerged{}}
	return u, u
}

// unknownMerger stands in for a merger the tool does not link (an
// application's own): it cannot merge, so it keeps what it was given, and
// the key prints as its base and operands.
type unknownMerger struct {
	name string
	seen map[string]unmerged
}

type unmerged struct {
	base    []byte
	hasBase bool
	ops     [][]byte
}

func (m *unknownMerger) Name() string { return m.name }

func (m *unknownMerger) FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	u := unmerged{base: bytes.Clone(base), hasBase: hasBase}
	for _, op := range operands {
		u.ops = append(u.ops, bytes.Clone(op))
	}
	m.seen[string(key)] = u
	return nil, nil
}

func (m *unknownMerger) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) { return nil, false }

// value renders key's value: decoded (sketch families), unmerged (a
// merger the tool lacks), or its bytes; then its deadline if it has one.
func (v *dbView) value(rf *readFlags, key, val []byte, expiry time.Time) string {
	var s string
	u, merged := unmerged{}, false
	if v.merger != nil {
		if u, merged = v.merger.seen[string(key)]; merged {
			delete(v.merger.seen, string(key))
		}
	}
	switch {
	case merged:
		s = u.render(&rf.vals, v.merger.name)
	case v.sketch != nil && v.cfName == sketchcol.PagesColumnFamilyName:
		s = v.sketch.describePage(key, val)
	case v.sketch != nil:
		s = v.sketch.describe(key, val)
	default:
		s = rf.vals.value(val)
	}
	if !expiry.IsZero() {
		s += "  (expires " + expiry.UTC().Format(time.RFC3339Nano) + ")"
	}
	return s
}

func (u unmerged) render(bf *byteFmt, merger string) string {
	var ops []string
	for _, op := range u.ops {
		ops = append(ops, bf.value(op))
	}
	base := "no base"
	if u.hasBase {
		base = "base " + bf.value(u.base)
	}
	return fmt.Sprintf("unmerged (merger %s is not in the tool): %s, operands %s", merger, base, strings.Join(ops, " "))
}

func getCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("get", "DIR KEY", stderr)
	var rf readFlags
	rf.register(fs)
	pos, err := parseN(fs, args, 2)
	if err != nil {
		return err
	}
	if err := rf.resolve(); err != nil {
		return err
	}
	key, err := parseArg(rf.keys.mode, pos[1])
	if err != nil {
		return usagef("get: KEY %q: %v", pos[1], err)
	}
	v, err := openView(pos[0], &rf)
	if err != nil {
		return err
	}
	defer v.close()
	val, expiry, err := v.get(key)
	if errors.Is(err, sieve.ErrNotFound) {
		return fmt.Errorf("%s: not found in column family %s", rf.keys.key(key), rf.keys.key([]byte(rf.cf)))
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, v.value(&rf, key, val, expiry))
	return nil
}

// parseN parses args and requires exactly n positional arguments.
func parseN(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() != n {
		return nil, usagef("%s: want %d arguments, got %d (%s)", fs.Name(), n, fs.NArg(), strings.Join(fs.Args(), " "))
	}
	return fs.Args(), nil
}

// scanFlags are "sieve scan"'s own flags: the range and the count.
type scanFlags struct {
	start, end, prefix string
	limit              int
}

func scanCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("scan", "DIR", stderr)
	var rf readFlags
	rf.register(fs)
	var sf scanFlags
	fs.StringVar(&sf.start, "start", "", "the first `key` (inclusive; read as -keys says)")
	fs.StringVar(&sf.end, "end", "", "the `key` to stop before (exclusive)")
	fs.StringVar(&sf.prefix, "prefix", "", "only keys that start with `bytes`")
	fs.IntVar(&sf.limit, "limit", 0, "print at most `N` keys (0: all)")
	pos, err := parseN(fs, args, 1)
	if err != nil {
		return err
	}
	if err := rf.resolve(); err != nil {
		return err
	}
	bounds, err := sf.bounds(rf.keys.mode)
	if err != nil {
		return err
	}
	v, err := openView(pos[0], &rf)
	if err != nil {
		return err
	}
	defer v.close()
	it := v.iter(bounds)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if sf.limit > 0 && n == sf.limit {
			fmt.Fprintf(stderr, "(stopped at -limit %d; more keys follow)\n", sf.limit)
			break
		}
		fmt.Fprintf(stdout, "%s = %s\n", rf.keys.key(it.Key()), v.value(&rf, it.Key(), it.Value(), it.Expiry()))
		n++
	}
	return it.Close()
}

// bounds turns -start, -end and -prefix into the iterator's bounds.
func (sf *scanFlags) bounds(mode string) (*sieve.IterOptions, error) {
	var o sieve.IterOptions
	for _, a := range []struct {
		name, arg string
		dst       *[]byte
	}{{"start", sf.start, &o.LowerBound}, {"end", sf.end, &o.UpperBound}} {
		if a.arg == "" {
			continue
		}
		b, err := parseArg(mode, a.arg)
		if err != nil {
			return nil, usagef("scan: -%s %q: %v", a.name, a.arg, err)
		}
		*a.dst = b
	}
	if sf.prefix == "" {
		return &o, nil
	}
	p, err := parseArg(mode, sf.prefix)
	if err != nil {
		return nil, usagef("scan: -prefix %q: %v", sf.prefix, err)
	}
	if o.LowerBound == nil || bytes.Compare(p, o.LowerBound) > 0 {
		o.LowerBound = p
	}
	if pe := prefixEnd(p); pe != nil && (o.UpperBound == nil || bytes.Compare(pe, o.UpperBound) < 0) {
		o.UpperBound = pe
	}
	return &o, nil
}

// prefixEnd is the smallest key greater than every key starting with p
// (nil: none, p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
