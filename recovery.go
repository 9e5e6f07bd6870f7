package sieve

import (
	"fmt"
	"io"
	"sort"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/wal"
)

// recover replays the WALs the manifest does not cover into immutable
// memtable groups, truncates a torn tail of the newest WAL, starts a new
// WAL, publishes the read state, removes obsolete files and schedules the
// flush of what was recovered.
func (db *DB) recover() error {
	names, err := db.fs.List(db.dirname)
	if err != nil {
		return err
	}
	var logs []uint64
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		db.versions.MarkFileNumUsed(num)
		if t == base.FileTypeLog && num >= db.versions.LogNum() {
			logs = append(logs, num)
		}
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i] < logs[j] })
	if err := db.checkTablesPresent(names); err != nil {
		return err
	}

	db.logSeq = db.versions.LastSeq()
	var recovered []*memGroup
	for i, num := range logs {
		g, err := db.replayWAL(num, i == len(logs)-1)
		if err != nil {
			return err
		}
		if g != nil {
			recovered = append(recovered, g)
		}
	}
	db.visibleSeq.Store(db.logSeq)

	db.mu.Lock()
	defer db.mu.Unlock()
	db.mu.imm = recovered
	db.mu.wals = logs
	if db.opts.ReadOnly {
		db.mu.mem = newMemGroup(0)
		db.updateReadState()
		return nil
	}
	if err := db.newWAL(); err != nil {
		return err
	}
	db.mu.mem = newMemGroup(db.log.num)
	db.updateReadState()
	db.deleteObsoleteFilesLocked()
	db.maybeScheduleFlushLocked()
	return nil
}

// replayWAL reads one WAL into a new memtable group. A torn tail is
// tolerated only in the newest WAL (last), where it is truncated away;
// anywhere else it is corruption, because a WAL is synced and closed before
// the next one starts.
func (db *DB) replayWAL(num uint64, last bool) (*memGroup, error) {
	name := base.MakeFilename(db.dirname, base.FileTypeLog, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	g := newMemGroup(num)
	r := wal.NewReader(f, size, num)
	for first := true; ; first = false {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sieve: WAL %s: %w", name, err)
		}
		if err := db.applyRecovered(g, rec, !first); err != nil {
			return nil, fmt.Errorf("sieve: WAL %s, record at offset %d: %w", name, r.Offset(), err)
		}
	}
	if r.TornTail() {
		if !last {
			return nil, base.CorruptionErrorf("WAL %s: damaged at offset %d, but it is not the newest WAL", name, r.ValidEnd())
		}
		db.opts.Logger.Warn("truncating torn WAL tail", "wal", name, "valid_end", r.ValidEnd(), "size", size)
		if !db.opts.ReadOnly {
			if err := db.truncateWAL(name, r.ValidEnd()); err != nil {
				return nil, err
			}
		}
	} else if !db.opts.ReadOnly && !g.empty() {
		// The records may have reached the OS but not the disk (the
		// process died before a sync). New writes go to a newer WAL and
		// must not survive a power loss that these lose: sync first.
		if err := db.syncWAL(name); err != nil {
			return nil, err
		}
	}
	if g.empty() {
		return nil, nil
	}
	return g, nil
}

func (db *DB) syncWAL(name string) error {
	f, err := db.fs.OpenReadWrite(name)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (db *DB) truncateWAL(name string, size int64) error {
	f, err := db.fs.OpenReadWrite(name)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// applyRecovered applies one WAL record (a batch, or a group of batches
// committed together) to g. The batches of one WAL have consecutive
// sequence numbers: contiguous says that rec is not the WAL's first
// record, so its first batch must follow the last one replayed exactly (a
// gap means a record from elsewhere in the log, which passes its checksum).
func (db *DB) applyRecovered(g *memGroup, rec []byte, contiguous bool) error {
	for len(rec) > 0 {
		n, err := batchLen(rec)
		if err != nil {
			return err
		}
		br, seq, err := newBatchReader(rec[:n])
		if err != nil {
			return err
		}
		if seq <= db.logSeq {
			return base.CorruptionErrorf("batch sequence number %d not after %d", seq, db.logSeq)
		}
		if contiguous && seq != db.logSeq+1 {
			return base.CorruptionErrorf("batch sequence number %d does not follow %d", seq, db.logSeq)
		}
		contiguous = true
		count := uint64(0)
		for e, ok := br.next(); ok; e, ok = br.next() {
			if !db.cfs.known(e.cf) {
				return base.CorruptionErrorf("batch names unknown column family %d", e.cf)
			}
			g.tableForWrite(e.cf).Add(seq+count, e.kind, e.key, e.value)
			count++
		}
		if br.err != nil {
			return br.err
		}
		db.logSeq = seq + count - 1
		rec = rec[n:]
	}
	return nil
}

// checkTablesPresent fails Open when a table the manifest names is missing
// from the directory.
func (db *DB) checkTablesPresent(names []string) error {
	onDisk := map[uint64]bool{}
	for _, name := range names {
		if t, num, ok := base.ParseFilename(name); ok && t == base.FileTypeTable {
			onDisk[num] = true
		}
	}
	v := db.versions.Current()
	defer v.Unref()
	for cf, lv := range v.CFs {
		for level, files := range lv {
			for _, f := range files {
				if !onDisk[f.FileNum] {
					return base.CorruptionErrorf("table %s (column family %d, L%d) named by the manifest is missing from %s",
						base.FileName(base.FileTypeTable, f.FileNum), cf, level, db.dirname)
				}
			}
		}
	}
	return nil
}
