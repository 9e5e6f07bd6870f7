package replica

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sievedb/sieve"
)

// The snapshot stream: snapshotMagic, the applied index (uvarint), then
// per column family a recFamily record (its name) followed by its keys
// in order, recKey records (key, value, expiry as varint Unix nanoseconds,
// 0 for none), and recEnd after the last family. Length-prefixed fields
// are uvarint lengths.
const (
	snapshotMagic = "sieve-replica-snapshot-1\n"
	recFamily     = 'F'
	recKey        = 'K'
	recEnd        = 'E'
)

// restoreMarker is the file, in Config.Dir, that says a restore is under
// way: written (and synced) before the first change to the state
// machine's DB, removed after the last. Open redoes a restore it finds.
const restoreMarker = "RESTORING"

// fsmSnapshot is a checkpoint of the state machine's DB (hard links),
// streamed by Persist and removed by Release.
type fsmSnapshot struct {
	dir      string
	opts     *sieve.Options
	families map[string]*sieve.ColumnFamilyOptions
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.dir, s.opts, s.families); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() { os.RemoveAll(s.dir) }

// writeSnapshot opens the checkpoint dir read-only and streams it to w.
func writeSnapshot(w io.Writer, dir string, opts *sieve.Options, families map[string]*sieve.ColumnFamilyOptions) error {
	o := *opts
	o.ReadOnly = true
	db, err := sieve.Open(dir, &o)
	if err != nil {
		return err
	}
	defer db.Close()
	meta, err := db.OpenColumnFamily(metaFamily, nil)
	if err != nil {
		return err
	}
	applied := uint64(0)
	if v, err := meta.Get(keyApplied); err == nil && len(v) == 8 {
		applied = binary.BigEndian.Uint64(v)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(snapshotMagic)
	bw.Write(binary.AppendUvarint(nil, applied))
	for _, name := range db.ColumnFamilies() {
		cf, err := db.OpenColumnFamily(name, families[name])
		if err != nil {
			return err
		}
		if err := writeFamily(bw, cf); err != nil {
			return err
		}
	}
	bw.WriteByte(recEnd)
	return bw.Flush()
}

func writeFamily(bw *bufio.Writer, cf *sieve.ColumnFamily) error {
	bw.WriteByte(recFamily)
	bw.Write(appendBytes(nil, []byte(cf.Name())))
	it := cf.NewIter(nil)
	var rec []byte
	for ok := it.First(); ok; ok = it.Next() {
		rec = append(rec[:0], recKey)
		rec = appendBytes(rec, it.Key())
		rec = appendBytes(rec, it.Value())
		var exp int64
		if e := it.Expiry(); !e.IsZero() {
			exp = e.UnixNano()
		}
		rec = binary.AppendVarint(rec, exp)
		if _, err := bw.Write(rec); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// streamReader reads the records of a snapshot stream.
type streamReader struct {
	r *bufio.Reader
}

func (s *streamReader) uvarint() (uint64, error) { return binary.ReadUvarint(s.r) }

func (s *streamReader) field() ([]byte, error) {
	n, err := s.uvarint()
	if err != nil {
		return nil, err
	}
	if n > sieve.MaxValueSize {
		return nil, fmt.Errorf("%w: snapshot field of %d bytes", errMalformed, n)
	}
	b := make([]byte, n)
	_, err = io.ReadFull(s.r, b)
	return b, err
}

// expiring is a key with a deadline: restored by a write after the
// ingest (external tables hold only plain values).
type expiring struct {
	family     string
	key, value []byte
	expiry     time.Time
}

// staged is a snapshot read into external tables, one per family.
type staged struct {
	applied  uint64
	tables   map[string]string // family -> table path ("" for no keys)
	order    []string          // families in stream order
	expiring []expiring
}

// restore replaces the state machine's state with the snapshot's:
//
//  1. the marker file RESTORING is written and synced;
//  2. the stream is read into one external table per column family
//     (sieve.NewExternalTableWriter) under restore-tmp/;
//  3. each family's whole key range ["", keyLimit) is replaced with its
//     table by IngestAndExcise (a family the snapshot lacks is emptied),
//     the keys with an expiry are written after, and the reserved family
//     (applied index, deduplication table) last;
//  4. the tables and the marker are removed.
//
// A crash before step 4 leaves the marker: Open then restores the latest
// snapshot of the snapshot store again from step 1 (raft persisted it
// before calling Restore), so a half-replaced state is never served.
func (f *fsm) restore(r io.Reader) error {
	marker := filepath.Join(f.dir, restoreMarker)
	if err := writeSynced(marker, []byte("restore in progress\n")); err != nil {
		return err
	}
	tmp := filepath.Join(f.dir, "restore-tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	st, err := f.stage(bufio.NewReaderSize(r, 1<<20), tmp)
	if err != nil {
		return fmt.Errorf("replica: reading snapshot: %w", err)
	}
	if err := f.install(st); err != nil {
		return fmt.Errorf("replica: installing snapshot: %w", err)
	}
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Remove(marker); err != nil {
		return err
	}
	if err := syncDir(f.dir); err != nil {
		return err
	}
	f.applied.Store(st.applied)
	f.restores.Add(1)
	return nil
}

// stage reads the stream into external tables in tmp.
func (f *fsm) stage(r *bufio.Reader, tmp string) (*staged, error) {
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != snapshotMagic {
		return nil, fmt.Errorf("%w: not a replica snapshot", errMalformed)
	}
	sr := &streamReader{r: r}
	st := &staged{tables: map[string]string{}}
	var err error
	if st.applied, err = sr.uvarint(); err != nil {
		return nil, err
	}
	for {
		kind, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		if kind == recEnd {
			return st, nil
		}
		if kind != recFamily {
			return nil, fmt.Errorf("%w: record %q where a family was expected", errMalformed, kind)
		}
		name, err := sr.field()
		if err != nil {
			return nil, err
		}
		path := filepath.Join(tmp, fmt.Sprintf("%d.sst", len(st.order)))
		if err := f.stageFamily(sr, st, string(name), path); err != nil {
			return nil, err
		}
	}
}

// stageFamily reads one family's keys into the table at path.
func (f *fsm) stageFamily(sr *streamReader, st *staged, name, path string) error {
	w, err := sieve.NewExternalTableWriter(path, f.opts)
	if err != nil {
		return err
	}
	n := 0
	for {
		kind, err := sr.r.Peek(1)
		if err != nil || kind[0] != recKey {
			break
		}
		sr.r.ReadByte()
		key, err1 := sr.field()
		value, err2 := sr.field()
		exp, err3 := binary.ReadVarint(sr.r)
		if err := errors.Join(err1, err2, err3); err != nil {
			w.Close()
			return err
		}
		if exp != 0 {
			st.expiring = append(st.expiring, expiring{name, key, value, time.Unix(0, exp)})
			continue
		}
		if err := w.Set(key, value); err != nil {
			w.Close()
			return err
		}
		n++
	}
	if err := w.Close(); err != nil {
		return err
	}
	st.order = append(st.order, name)
	st.tables[name] = path
	if n == 0 {
		st.tables[name] = ""
		return os.Remove(path)
	}
	return nil
}

// install replaces every family's key range with its staged table, the
// reserved family last.
func (f *fsm) install(st *staged) error {
	names := append([]string(nil), st.order...)
	for _, name := range f.db.ColumnFamilies() {
		if _, ok := st.tables[name]; !ok {
			names = append(names, name) // not in the snapshot: emptied
		}
	}
	for _, name := range names {
		if name != metaFamily {
			if err := f.replaceFamily(name, st.tables[name]); err != nil {
				return err
			}
		}
	}
	if len(st.expiring) > 0 {
		b := f.db.NewBatch()
		for _, e := range st.expiring {
			cf, err := f.family(e.family, true)
			if err != nil {
				return err
			}
			if err := b.PutCFWithExpiry(cf, e.key, e.value, e.expiry); err != nil {
				return err
			}
		}
		if err := f.db.Apply(b, sieve.Sync); err != nil {
			return err
		}
	}
	return f.replaceFamily(metaFamily, st.tables[metaFamily])
}

func (f *fsm) replaceFamily(name, path string) error {
	cf := f.meta
	if name != metaFamily {
		var err error
		if cf, err = f.family(name, true); err != nil {
			return err
		}
	}
	var paths []string
	if path != "" {
		paths = []string{path}
	}
	return cf.IngestAndExcise(paths, nil, keyLimit)
}

// redoRestore restores the latest snapshot of snaps when a restore was
// interrupted (the marker is there) or the state machine is behind the
// latest snapshot (a crash between raft saving an installed snapshot and
// Restore: raft, started without restoring, would apply only the entries
// after the snapshot).
func (f *fsm) redoRestore(snaps raft.SnapshotStore) error {
	_, err := os.Stat(filepath.Join(f.dir, restoreMarker))
	interrupted := err == nil
	list, err := snaps.List()
	if err != nil {
		return err
	}
	if len(list) == 0 {
		if interrupted {
			return errors.New("replica: a restore was interrupted and the snapshot store holds no snapshot")
		}
		return nil
	}
	if !interrupted && f.applied.Load() >= list[0].Index {
		return nil
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		return err
	}
	defer rc.Close()
	return f.restore(rc)
}

func writeSynced(path string, data []byte) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
