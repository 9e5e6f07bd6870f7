package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/wal"
)

// standInMerger lets "sieve check" walk a column family whose merger the
// tool does not have: it carries the recorded name and resolves operands
// to the newest one. The values are not shown or checked; the walk checks
// that every entry can be read.
type standInMerger struct{ name string }

func (m standInMerger) Name() string { return m.name }
func (m standInMerger) FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	return operands[len(operands)-1], nil
}
func (m standInMerger) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) { return nil, false }

type checker struct {
	w        io.Writer
	bf       *byteFmt
	verbose  bool
	problems int
}

func (c *checker) fail(format string, args ...any) {
	c.problems++
	fmt.Fprintf(c.w, "  FAIL: %s\n", errText(fmt.Errorf(format, args...)))
}

func (c *checker) note(format string, args ...any) { fmt.Fprintf(c.w, "  note: "+format+"\n", args...) }

func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", "DIR", stderr)
	var bf byteFmt
	bf.keyFlags(fs)
	verbose := fs.Bool("v", false, "print a line for every table and WAL checked")
	dir, err := bf.parse(fs, args)
	if err != nil {
		return err
	}
	c := &checker{w: stdout, bf: &bf, verbose: *verbose}
	ro := newROFS()
	c.run(ro, dir)
	if c.problems > 0 {
		fmt.Fprintf(stdout, "%s: %s found\n", dir, count(c.problems, "problem"))
		if ro.heldElsewhere.Load() {
			fmt.Fprintf(stdout, "(another process has the database open: a table it deleted or a log it appended to while the check ran fails the check too; check again when it is closed)\n")
		}
		return errFound
	}
	fmt.Fprintf(stdout, "%s: ok\n", dir)
	return nil
}

func (c *checker) run(fs *roFS, dir string) {
	if err := fs.checkDB(dir); err != nil {
		c.fail("%v", err)
		return
	}
	names, err := fs.List(dir)
	if err != nil {
		c.fail("listing %s: %v", dir, err)
		return
	}
	fmt.Fprintf(c.w, "manifest:\n")
	mpath, err := currentManifest(fs, dir)
	if err != nil {
		c.fail("%v", err)
		return
	}
	vs, err := manifest.Load(fs, dir, manifest.Options{ReadOnly: true})
	if err != nil {
		c.fail("%v", err)
		return
	}
	defer vs.Close()
	v := vs.Current()
	defer v.Unref()
	fmt.Fprintf(c.w, "  %s: ok (log %d, next file %d, last seq %d)\n", mpath, vs.LogNum(), vs.PeekNextFileNum(), vs.LastSeq())
	c.manifestTail(fs, mpath)
	if err := v.CheckLevels(); err != nil {
		c.fail("level invariants: %v", err)
	} else {
		fmt.Fprintf(c.w, "  level invariants: ok (L1+ sorted and disjoint, seqnums consistent)\n")
	}

	inVersion := map[uint64]bool{}
	c.tables(fs, dir, vs, v, names, inVersion)
	c.wals(fs, dir, vs, names)
	var extra []string
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		switch {
		case !ok:
		case t == base.FileTypeTable && !inVersion[num]:
			extra = append(extra, name+" is not in the current version (obsolete, or left by a crash; a read-write open deletes it)")
		case t == base.FileTypeManifest && num != vs.ManifestNum():
			extra = append(extra, name+" is not the current manifest (a read-write open deletes it)")
		case t == base.FileTypeTemp:
			extra = append(extra, name+" is a temporary file (a read-write open deletes it)")
		}
	}
	if len(extra) > 0 {
		fmt.Fprintf(c.w, "other files:\n")
		for _, e := range extra {
			c.note("%s", e)
		}
	}
	c.openDB(fs, dir, vs)
}

// manifestTail notes a manifest that ends torn: Load accepts it (a crash
// while an edit was written loses that edit), but the user should know.
func (c *checker) manifestTail(fs *roFS, path string) {
	r, f, _, err := openLog(fs, path, base.FileTypeManifest)
	if err != nil {
		c.fail("%v", err)
		return
	}
	defer f.Close()
	for {
		if _, err := r.Next(); err != nil {
			if err != io.EOF {
				c.fail("%s: %v", path, err)
			}
			break
		}
	}
	if tail := r.Tail(); tail.Torn {
		c.note("the manifest ends with a %s (an edit lost in a crash, or damage)", tail)
	}
}

func (c *checker) tables(fs *roFS, dir string, vs *manifest.VersionSet, v *manifest.Version, names []string, inVersion map[uint64]bool) {
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	cfs := vs.ColumnFamilies()
	ids := slices.Sorted(maps.Keys(v.CFs))
	fmt.Fprintf(c.w, "tables:\n")
	var n, entries, bytes uint64
	bad := 0
	for _, id := range ids {
		for level, files := range v.CFs[id] {
			for _, f := range files {
				inVersion[f.FileNum] = true
				n++
				bytes += f.Size
				name := base.FileName(base.FileTypeTable, f.FileNum)
				where := fmt.Sprintf("%s (cf %s L%d)", name, c.bf.key([]byte(cfs[id].Name)), level)
				if !present[name] {
					c.fail("%s: missing from the directory", where)
					bad++
					continue
				}
				e, err := c.table(fs, dir, f)
				if err != nil {
					c.fail("%s: %v", where, err)
					bad++
					continue
				}
				entries += e
				if c.verbose {
					fmt.Fprintf(c.w, "  %s: ok, %d entries\n", where, e)
				}
			}
		}
	}
	if bad > 0 {
		fmt.Fprintf(c.w, "  %s in %s, %s: %d failed\n", count(int(n), "table"), count(len(ids), "column family"), size(bytes), bad)
		return
	}
	fmt.Fprintf(c.w, "  %s in %s, %s, %s: every block checksummed, keys in order, properties and filters agree with the data and the manifest\n",
		count(int(n), "table"), count(len(ids), "column family"), size(bytes), count(int(entries), "entry"))
}

// table verifies one table and compares it with its manifest entry.
func (c *checker) table(fs *roFS, dir string, f *manifest.FileMetadata) (uint64, error) {
	t, err := openTableNamed(fs, base.MakeFilename(dir, base.FileTypeTable, f.FileNum), false)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	if uint64(t.size) != f.Size {
		return 0, fmt.Errorf("%w: %d bytes, the manifest says %d", base.ErrCorruption, t.size, f.Size)
	}
	if err := t.r.Verify(); err != nil {
		return 0, err
	}
	p := t.r.Properties()
	if p.NumEntries == 0 && t.r.RangeDels().Empty() {
		return 0, fmt.Errorf("%w: empty table", base.ErrCorruption)
	}
	// The table's range is its entries' and its range tombstones'.
	smallest, largest, lo, hi := sstable.TableBounds(p, t.r.RangeDels())
	if base.CompareInternal(smallest, f.Smallest) != 0 || base.CompareInternal(largest, f.Largest) != 0 ||
		lo != f.SmallestSeq || hi != f.LargestSeq {
		return 0, fmt.Errorf("%w: table holds [%s .. %s] seqs %d..%d, the manifest says [%s .. %s] seqs %d..%d",
			base.ErrCorruption, c.bf.ikey(smallest), c.bf.ikey(largest), lo, hi,
			c.bf.ikey(f.Smallest), c.bf.ikey(f.Largest), f.SmallestSeq, f.LargestSeq)
	}
	return p.NumEntries, nil
}

// wals reads every WAL the manifest does not cover, as recovery would:
// every one but the newest must end with its trailer (so must the one a
// clean close sealed); the newest may end torn.
func (c *checker) wals(fs *roFS, dir string, vs *manifest.VersionSet, names []string) {
	var logs []uint64
	for _, name := range names {
		if t, num, ok := base.ParseFilename(name); ok && t == base.FileTypeLog {
			if num >= vs.LogNum() {
				logs = append(logs, num)
			} else {
				c.note("%s is older than the manifest's log number %d (obsolete; a read-write open deletes it)", name, vs.LogNum())
			}
		}
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i] < logs[j] })
	fmt.Fprintf(c.w, "WALs:\n")
	var records, entries int
	var prevSeq uint64
	for i, num := range logs {
		name := base.FileName(base.FileTypeLog, num)
		r, f, _, err := openLog(fs, base.MakeFilename(dir, base.FileTypeLog, num), base.FileTypeLog)
		if err != nil {
			c.fail("%s: %v", name, err)
			continue
		}
		n, e, err := readWAL(r, &prevSeq)
		f.Close()
		records += n
		entries += e
		if err != nil {
			c.fail("%s: %v", name, err)
			continue
		}
		tail := r.Tail()
		last := i == len(logs)-1
		switch {
		case !tail.Clean && (!last || num == vs.SealedLog()):
			why := "a newer WAL exists"
			if num == vs.SealedLog() {
				why = "the manifest records that a clean close sealed it"
			}
			c.fail("%s: %v: %s, but it does not end with its end-of-log trailer: %s", name, base.ErrCorruption, why, tail)
		case tail.Torn:
			c.note("%s: %s (a crash; the next open truncates it)", name, tail)
		}
		if c.verbose {
			fmt.Fprintf(c.w, "  %s: %s, %s; %s\n", name, count(n, "record"), count(e, "entry"), tail)
		}
	}
	fmt.Fprintf(c.w, "  %s to replay, %s, %s\n", count(len(logs), "WAL"), count(records, "record"), count(entries, "entry"))
}

// readWAL reads a WAL's records and decodes their batches, checking that
// sequence numbers grow along the logs. prevSeq starts at 0, not at the
// manifest's last seq: a WAL may hold writes already flushed.
func readWAL(r *wal.Reader, prevSeq *uint64) (records, entries int, err error) {
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return records, entries, nil
		}
		if err != nil {
			return records, entries, err
		}
		records++
		bs, err := decodeBatches(rec)
		if err != nil {
			return records, entries, fmt.Errorf("record at offset %d: %w: %v", r.Offset(), base.ErrCorruption, err)
		}
		for _, b := range bs {
			if b.count > 0 && b.seq <= *prevSeq {
				return records, entries, fmt.Errorf("record at offset %d: %w: batch seq %d does not follow seq %d",
					r.Offset(), base.ErrCorruption, b.seq, *prevSeq)
			}
			entries += len(b.entries)
			*prevSeq = max(*prevSeq, b.seq+uint64(b.count)-1)
		}
	}
}

// openDB opens the database read-only as a reader would (this replays the
// WALs and checks the directory against the manifest), checks its
// invariants with every table verified through the table cache, and walks
// every key of every column family.
func (c *checker) openDB(fs *roFS, dir string, vs *manifest.VersionSet) {
	fmt.Fprintf(c.w, "read-only open:\n")
	cfs := vs.ColumnFamilies()
	opts := &sieve.Options{FS: fs, ReadOnly: true, BlockCacheSize: -1}
	if m := cfs[manifest.DefaultCFID].Merger; m != "" {
		opts.Merger = standInMerger{m}
	}
	db, err := sieve.Open(dir, opts)
	if fs.heldElsewhere.Load() {
		c.note("the database is open in another process; read without its lock (files it changes meanwhile may fail the check)")
	}
	if p := fs.lockErr.Load(); p != nil {
		c.note("read without the database's lock, which could not be taken: %v", *p)
	}
	if err != nil {
		c.fail("open: %v", err)
		return
	}
	defer db.Close()
	if err := db.CheckInvariants(true); err != nil {
		c.fail("invariants: %v", err)
	} else {
		fmt.Fprintf(c.w, "  invariants: ok\n")
	}
	for _, id := range slices.Sorted(maps.Keys(cfs)) {
		cf := cfs[id]
		var iter *sieve.Iterator
		if id == manifest.DefaultCFID {
			iter = db.NewIter(nil)
		} else {
			var co sieve.ColumnFamilyOptions
			if cf.Merger != "" {
				co.Merger = standInMerger{cf.Merger}
			}
			h, err := db.OpenColumnFamily(cf.Name, &co)
			if err != nil {
				c.fail("column family %s: %v", c.bf.key([]byte(cf.Name)), err)
				continue
			}
			iter = h.NewIter(nil)
		}
		n := 0
		for ok := iter.First(); ok; ok = iter.Next() {
			n++
		}
		if err := iter.Close(); err != nil {
			c.fail("column family %s: walking its keys: %v", c.bf.key([]byte(cf.Name)), err)
			continue
		}
		fmt.Fprintf(c.w, "  cf %d %s: %d live keys read\n", id, c.bf.key([]byte(cf.Name)), n)
	}
}
