package main

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/vfs"
)

// currentManifest returns the path of the manifest CURRENT names in dir.
// It checks CURRENT's checksum; it does not load the manifest.
func currentManifest(fs vfs.FS, dir string) (string, error) {
	name := filepath.Join(dir, "CURRENT")
	f, err := fs.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return "", err
	}
	// "v1 MANIFEST-NNNNNN <xxhash64 of the first two fields, hex>\n"
	// (internal/manifest/FORMAT.md).
	fields := strings.Fields(string(buf[:n]))
	if len(fields) != 3 || !strings.HasSuffix(string(buf[:n]), "\n") {
		return "", fmt.Errorf("%s: %w: malformed content %q", name, base.ErrCorruption, buf[:n])
	}
	if sum := fmt.Sprintf("%016x", xxhash.Sum64String(fields[0]+" "+fields[1])); sum != fields[2] {
		return "", fmt.Errorf("%s: %w: checksum mismatch in %q", name, base.ErrCorruption, buf[:n])
	}
	if t, _, ok := base.ParseFilename(fields[1]); !ok || t != base.FileTypeManifest {
		return "", fmt.Errorf("%s: %w: %q is not a manifest name", name, base.ErrCorruption, fields[1])
	}
	return filepath.Join(dir, fields[1]), nil
}

// manifestState is what replaying the edits of a manifest yields.
type manifestState struct {
	v                                 *manifest.Version
	cfs                               map[uint32]manifest.ColumnFamily
	logNum, nextFile, lastSeq, sealed uint64
}

func (s *manifestState) apply(e *manifest.VersionEdit) error {
	// The column families, as recovery applies them.
	e.ApplyColumnFamilies(s.cfs)
	if e.HasLogNum {
		s.logNum = e.LogNum
	}
	if e.HasNextFileNum {
		s.nextFile = e.NextFileNum
	}
	if e.HasLastSeq {
		s.lastSeq = e.LastSeq
	}
	if e.HasSealedLog {
		s.sealed = e.SealedLog
	}
	nv, err := s.v.Apply(e, nil)
	if err != nil {
		return err
	}
	s.v = nv
	return nil
}

func (s *manifestState) cfIDs() []uint32 { return slices.Sorted(maps.Keys(s.v.CFs)) }

func (s *manifestState) cfName(id uint32) string {
	if cf, ok := s.cfs[id]; ok {
		return cf.Name
	}
	return fmt.Sprintf("#%d", id)
}

func manifestDump(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("manifest dump", "FILE|DIR", stderr)
	var bf byteFmt
	bf.keyFlags(fs)
	edits := fs.Bool("edits", true, "print the edits (false: only the resulting version)")
	maxEdits := fs.Int("n", 0, "print at most the first `N` edits (0: every edit)")
	path, err := bf.parse(fs, args)
	if err != nil {
		return err
	}
	ro := newROFS()
	if st, err := ro.Stat(path); err == nil && st.IsDir() {
		if err := ro.checkDB(path); err != nil {
			return err
		}
		if path, err = currentManifest(ro, path); err != nil {
			return err
		}
	}
	r, f, num, err := openLog(ro, path, base.FileTypeManifest)
	if err != nil {
		return err
	}
	defer f.Close()
	size, _ := f.Size()
	fmt.Fprintf(stdout, "%s: manifest %d, %d bytes\n", path, num, size)
	s := &manifestState{v: &manifest.Version{CFs: map[uint32]*manifest.Levels{}}, cfs: map[uint32]manifest.ColumnFamily{}}
	n := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: after %d edits: %w", path, n, err)
		}
		var e manifest.VersionEdit
		if err := e.Decode(rec); err != nil {
			return fmt.Errorf("%s: edit %d at offset %d: %w", path, n, r.Offset(), err)
		}
		if *edits && (*maxEdits == 0 || n < *maxEdits) {
			fmt.Fprintf(stdout, "edit %d at offset %d (%d bytes):\n", n, r.Offset(), len(rec))
			printEdit(stdout, &e, s, &bf)
		}
		if err := s.apply(&e); err != nil {
			return fmt.Errorf("%s: edit %d at offset %d does not apply: %w", path, n, r.Offset(), err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s: %w: no edits", path, base.ErrCorruption)
	}
	if *edits && *maxEdits > 0 && n > *maxEdits {
		fmt.Fprintf(stdout, "(%d of %d edits printed; -n 0 prints all)\n", *maxEdits, n)
	}
	fmt.Fprintf(stdout, "%d edits; end: %s\n", n, r.Tail())
	fmt.Fprintf(stdout, "resulting version: log %d, next file %d, last seq %d, sealed log %d\n", s.logNum, s.nextFile, s.lastSeq, s.sealed)
	printVersion(stdout, s, &bf)
	return nil
}

func printEdit(w io.Writer, e *manifest.VersionEdit, s *manifestState, bf *byteFmt) {
	if e.HasLogNum {
		fmt.Fprintf(w, "  log-num %d\n", e.LogNum)
	}
	if e.HasNextFileNum {
		fmt.Fprintf(w, "  next-file-num %d\n", e.NextFileNum)
	}
	if e.HasLastSeq {
		fmt.Fprintf(w, "  last-seq %d\n", e.LastSeq)
	}
	if e.HasSealedLog {
		fmt.Fprintf(w, "  sealed-log %d\n", e.SealedLog)
	}
	for _, cf := range e.AddedCFs {
		fmt.Fprintf(w, "  add-cf %d %s merger=%s\n", cf.ID, bf.key([]byte(cf.Name)), bf.key([]byte(cf.Merger)))
	}
	for _, id := range e.DroppedCFs {
		fmt.Fprintf(w, "  drop-cf %d\n", id)
	}
	for _, cf := range e.SetMergers {
		fmt.Fprintf(w, "  set-merger %d %s\n", cf.ID, bf.key([]byte(cf.Merger)))
	}
	for _, d := range e.DeletedFiles {
		fmt.Fprintf(w, "  del cf=%d L%d %06d\n", d.CF, d.Level, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		fmt.Fprintf(w, "  add cf=%d L%d %s\n", nf.CF, nf.Level, fileLine(nf.Meta, bf))
	}
}

func fileLine(m *manifest.FileMetadata, bf *byteFmt) string {
	return fmt.Sprintf("%06d %s [%s .. %s] seqs %d..%d", m.FileNum, size(m.Size), bf.ikey(m.Smallest), bf.ikey(m.Largest), m.SmallestSeq, m.LargestSeq)
}

func printVersion(w io.Writer, s *manifestState, bf *byteFmt) {
	for _, id := range s.cfIDs() {
		lv := s.v.CFs[id]
		merger := ""
		if m := s.cfs[id].Merger; m != "" {
			merger = ", merger " + bf.key([]byte(m))
		}
		fmt.Fprintf(w, "  cf %d %s%s:\n", id, bf.key([]byte(s.cfName(id))), merger)
		empty := true
		for level, files := range lv {
			if len(files) == 0 {
				continue
			}
			empty = false
			fmt.Fprintf(w, "    L%d: %s, %s\n", level, count(len(files), "table"), size(lv.Size(level)))
			for _, f := range files {
				fmt.Fprintf(w, "      %s\n", fileLine(f, bf))
			}
		}
		if empty {
			fmt.Fprintf(w, "    (no tables)\n")
		}
	}
}
