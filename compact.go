package sieve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
)

// compactState is guarded by db.mu.
type compactState struct {
	running int
	// pickers keep each column family's round-robin cursors.
	pickers map[uint32]*compaction.Picker
	// lastErr is the error of the last failed background compaction; the
	// next Compact call returns it.
	lastErr error
	// active are the running compactions, by column family; ingesting
	// holds new ones back while an Ingest places its tables (ingest.go).
	active    map[*compaction.Compaction]uint32
	ingesting bool
	// seekWanted is set by a table whose seeks asked for an L0
	// compaction (seekcompact.go).
	seekWanted atomic.Bool
}

// pickerLocked returns column family cf's picker, creating it.
// REQUIRES: db.mu held (it guards the pickers and their cursors).
func (db *DB) pickerLocked(cf uint32) *compaction.Picker {
	if db.compact.pickers == nil {
		db.compact.pickers = map[uint32]*compaction.Picker{}
	}
	p, ok := db.compact.pickers[cf]
	if !ok {
		p = compaction.NewPicker(compaction.PickerOptions{
			L0CompactionTrigger: db.opts.L0CompactionTrigger,
			LBaseMaxBytes:       db.opts.LBaseMaxBytes,
			LevelMultiplier:     db.opts.LevelMultiplier,
			TargetFileSize:      db.opts.TargetFileSize,
		})
		// A compaction must not write a level's key range another running
		// one writes (an in-place L6 compaction spanning the gap a move
		// into L6 lands in, say): their tables would overlap and the
		// install would fail as corruption. Called under db.mu, as Pick.
		p.SetOutputBusy(func(level int, smallest, largest []byte) bool {
			return db.compactionWritesLocked(cf, level, smallest, largest)
		})
		db.compact.pickers[cf] = p
	}
	return p
}

// compactable reports whether column family cf may be compacted: a family
// whose recorded merger is not supplied is left alone, since its operands
// could not be collapsed.
func (db *DB) compactable(cf uint32) bool {
	st := db.cfs.get(cf)
	return st != nil && (st.recordedMerger == "" || st.merger != nil)
}

// maybeScheduleCompactionLocked starts background compactions while a
// level needs one and a slot is free. REQUIRES: db.mu held.
func (db *DB) maybeScheduleCompactionLocked() {
	for db.compact.running < db.opts.MaxConcurrentCompactions {
		if db.mu.bgErr != nil || db.closed.Load() || db.opts.ReadOnly || db.compact.ingesting {
			return
		}
		v := db.versions.Current()
		var picked *compaction.Compaction
		var cf uint32
		for id, lv := range v.CFs {
			if !db.compactable(id) {
				continue
			}
			if c := db.pickerLocked(id).Pick(lv); c != nil && (picked == nil || c.Score > picked.Score) {
				picked, cf = c, id
			}
		}
		if picked == nil {
			picked, cf = db.pickSeekCompactionLocked(v)
		}
		if picked == nil {
			v.Unref()
			return
		}
		setCompacting(picked, true)
		db.compact.track(cf, picked)
		db.compact.running++
		db.metrics.compactionsRunning.Store(int64(db.compact.running))
		db.bg.Add(1)
		go func() {
			defer db.bg.Done()
			err := db.runCompaction(cf, picked, v)
			v.Unref()
			db.mu.Lock()
			db.finishCompactionLocked(picked, err)
			db.maybeScheduleCompactionLocked()
			db.mu.Unlock()
		}()
	}
}

// track records c, of column family cf, as running until
// finishCompactionLocked. REQUIRES: db.mu held.
func (s *compactState) track(cf uint32, c *compaction.Compaction) {
	if s.active == nil {
		s.active = map[*compaction.Compaction]uint32{}
	}
	s.active[c] = cf
}

func setCompacting(c *compaction.Compaction, on bool) {
	for _, f := range c.InputFiles() {
		f.Compacting = on
	}
}

// finishCompactionLocked releases a compaction's inputs and records its
// error. REQUIRES: db.mu held.
func (db *DB) finishCompactionLocked(c *compaction.Compaction, err error) {
	setCompacting(c, false)
	delete(db.compact.active, c)
	db.compact.running--
	db.metrics.compactionsRunning.Store(int64(db.compact.running))
	if err != nil && !errors.Is(err, ErrClosed) {
		if !c.Manual {
			// A manual compaction's error goes to its caller; a
			// background one's waits for the next Compact.
			db.compact.lastErr = err
		}
		db.opts.Logger.Error("compaction failed", "compaction", c.String(), "err", err)
		if errors.Is(err, ErrCorruption) {
			// Refuse writes rather than compact garbage into new tables.
			db.setBackgroundErrorLocked(err)
		}
	}
	db.updateReadStateLocked()
	db.mu.cond.Broadcast()
}

// runCompaction executes c on column family cf, picked from version v, and
// installs its result. The inputs must be marked Compacting.
func (db *DB) runCompaction(cf uint32, c *compaction.Compaction, v *manifest.Version) error {
	if c.IsMove {
		return db.runMove(cf, c)
	}
	start := time.Now()
	outs, gc, err := db.runSubcompactions(cf, c, v)
	var metas []*manifest.FileMetadata
	for _, out := range outs {
		metas = append(metas, out.metas...)
	}
	if err == nil && len(metas) > 0 {
		err = db.fs.SyncDir(db.dirname)
	}
	if err != nil {
		for _, out := range outs {
			out.abandon()
		}
		return fmt.Errorf("compaction %s: %w", c, err)
	}
	if err := db.logAndApply(c.Edit(cf, metas), nil); err != nil {
		// Keep the outputs: the edit naming them may be in the manifest
		// (after a failed sync its state is unknown). The next Open
		// deletes them if the manifest does not name them.
		return err
	}
	db.recordCompaction(c, metas, gc, len(outs), time.Since(start))
	return nil
}

// runMove installs a trivial move: c's one input table changes level in
// the manifest, unrewritten.
func (db *DB) runMove(cf uint32, c *compaction.Compaction) error {
	if err := db.logAndApply(c.Edit(cf, c.Inputs[0]), nil); err != nil {
		return err
	}
	db.metrics.moves.Add(1)
	db.opts.Logger.Info("compaction move", "compaction", c.String())
	return nil
}

// gcOptions are the compaction iterator's options for column family cf, as
// a flush needs them: the open snapshots and the family's merger, and no
// ElideTombstone (a compaction sets its own).
func (db *DB) gcOptions(cf uint32) compaction.GCOptions {
	db.mu.Lock()
	snapshots := db.mu.snapshots.all()
	db.mu.Unlock()
	opts := compaction.GCOptions{Snapshots: snapshots, Now: db.nowNanos()}
	if st := db.cfs.get(cf); st != nil && st.merger != nil {
		opts.Merger = st.merger
	}
	if f := db.compactionFilter(cf); f != nil {
		opts.Filter = func(ukey, value []byte, deadline int64) bool {
			return f.Filter(ukey, value, deadlineTime(deadline))
		}
	}
	return opts
}

// runSubcompactions writes the output tables of compaction c, picked from
// version v: as one run, or, for a large enough input of a compaction
// writers or a caller wait for (subcompactions), as subcompactions — disjoint key ranges merged and
// written by separate goroutines, to be installed by one edit. It returns
// every range's output (their tables in key order; on an error, what to
// abandon), their summed GC statistics, and the first range's error.
func (db *DB) runSubcompactions(cf uint32, c *compaction.Compaction, v *manifest.Version) ([]*tableOutput, compaction.GCStats, error) {
	lv := v.Levels(cf)
	opts := db.gcOptions(cf)
	rd, err := db.inputRangeDels(c)
	if err != nil {
		return nil, compaction.GCStats{}, err
	}
	opts.RangeDels = rd
	skip := db.coveredInputs(c, rd, opts.Snapshots)
	var bounds [][]byte
	if n := db.subcompactions(c, len(lv[0])); n > 1 {
		bounds = c.SubcompactionBounds(n, 2*uint64(db.opts.TargetFileSize))
		if rd != nil {
			// A range's tables take the tombstones up to its upper bound,
			// the last of them with that bound as its largest key: cut at
			// b+"\x00" so that it covers exactly the keys up to b and the
			// next range's tables start above b (sstable.TableBounds).
			for i, b := range bounds {
				bounds[i] = append(b[:len(b):len(b)], 0)
			}
		}
	}
	outs := make([]*tableOutput, len(bounds)+1)
	stats := make([]compaction.GCStats, len(outs))
	errs := make([]error, len(outs))
	var failed atomic.Bool // one range's error stops the others
	var wg sync.WaitGroup
	for r := range outs {
		lower, upper := compaction.SubcompactionRange(bounds, r)
		outs[r] = &tableOutput{db: db, cf: cf, level: c.OutputLevel, c: c}
		if rd != nil {
			outs[r].rd = db.outputRangeDels(opts, func(start, end []byte) bool {
				return nothingBelow(lv, c.OutputLevel, start, end)
			}, r == 0)
			outs[r].rdLower, outs[r].rdUpper = lower, upper
			outs[r].skip = skip
		}
		wg.Go(func() {
			defer func() {
				// A panic (in a user's Merger, say) fails this range
				// instead of killing the process from a goroutine the
				// caller cannot recover in.
				if p := recover(); p != nil {
					errs[r] = fmt.Errorf("sieve: subcompaction panicked: %v", p)
				}
				if errs[r] != nil {
					failed.Store(true)
				}
			}()
			ropts := opts // each range its own elider: it keeps cursors
			ropts.ElideTombstone = compaction.NewElider(lv, c.OutputLevel)
			stats[r], errs[r] = db.compactRange(c, ropts, outs[r], lower, upper, &failed)
		})
	}
	wg.Wait()
	var gc compaction.GCStats
	for r := range outs {
		gc.Add(stats[r])
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, errSubcompactionStopped) {
			return outs, gc, e
		}
	}
	return outs, gc, nil
}

// subcompactions is how many key ranges compaction c, picked while L0
// held l0 tables, may be split into: MaxSubcompactions for a manual
// compaction (its caller waits), and for a background compaction out of
// an L0 that holds twice L0CompactionTrigger tables or more, which writers
// are about to wait on (from L0SlowdownWritesTrigger each write group is
// delayed): a long fill of random keys outruns one compaction goroutine on
// a 2-core machine. Other background compactions, an L0 compaction that
// is keeping up among them, stay one goroutine and leave the other cores
// to writers and readers.
func (db *DB) subcompactions(c *compaction.Compaction, l0 int) int {
	if c.Manual || (c.StartLevel == 0 && l0 >= 2*db.opts.L0CompactionTrigger) {
		return db.opts.MaxSubcompactions
	}
	return 1
}

// recordCompaction counts an installed compaction, which wrote metas, in
// the metrics and the log.
func (db *DB) recordCompaction(c *compaction.Compaction, metas []*manifest.FileMetadata, gc compaction.GCStats, ranges int, took time.Duration) {
	read, written := c.InputBytes(), totalSize(metas)
	m := &db.metrics
	m.compactions.Add(1)
	m.compactBytesRead.Add(int64(read))
	m.compactBytesWritten.Add(int64(written))
	m.levelBytesIn[c.OutputLevel].Add(int64(totalSize(c.Inputs[0])))
	m.levelBytesRead[c.OutputLevel].Add(int64(read))
	m.levelBytesWritten[c.OutputLevel].Add(int64(written))
	m.mergeErrors.Add(gc.MergeErrors)
	m.rangeDel.keysDropped.Add(gc.DroppedByRangeDel)
	m.expired.Add(gc.Expired)
	m.filtered.Add(gc.Filtered)
	if ranges > 1 {
		m.splitCompactions.Add(1)
	}
	db.opts.Logger.Info("compacted", "compaction", c.String(), "tables", len(metas), "subcompactions", ranges,
		"read", read, "written", written, "dropped", gc.DroppedShadowed+gc.DroppedTombstones, "took", took)
}

// errSubcompactionStopped ends a subcompaction whose sibling failed; the
// sibling's error is the one reported.
var errSubcompactionStopped = errors.New("sieve: subcompaction stopped: another range failed")

// compactRange runs the part of compaction c in user keys [lower, upper)
// (nil = open) into out, which it leaves with its finished, synced tables
// (or with what to abandon, on an error). Subcompactions call it
// concurrently: each with its own iterators, splitter and output.
func (db *DB) compactRange(c *compaction.Compaction, opts compaction.GCOptions, out *tableOutput,
	lower, upper []byte, failed *atomic.Bool) (compaction.GCStats, error) {
	zeroSeqs := c.OutputLevel == manifest.NumLevels-1
	earliestSnap := base.SeqNumMax
	if len(opts.Snapshots) > 0 {
		earliestSnap = opts.Snapshots[0]
	}
	it := compaction.NewIter(c.NewInputIterRange(out.opener(db.compactionTableOpener()), lower, upper), opts)
	splitter := c.NewSplitter()
	var err error
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		if db.closed.Load() {
			err = ErrClosed
			break
		}
		if failed.Load() {
			err = errSubcompactionStopped
			break
		}
		k := it.Key()
		if zeroSeqs && k.Kind() == base.KindSet && k.SeqNum() <= earliestSnap {
			// At the bottom, a value every reader sees is the oldest
			// surviving version of its key: its sequence number carries
			// no information, and zeros compress (RocksDB and Pebble do
			// the same).
			k.Trailer = base.MakeTrailer(0, base.KindSet)
		}
		if out.w != nil && splitter.ShouldSplitBefore(k, out.w.EstimatedSize()) {
			err = out.finish(false)
		} else if out.w == nil {
			splitter.ShouldSplitBefore(k, 0)
		}
		if err == nil && out.w == nil {
			err = out.start()
		}
		if err == nil {
			err = out.add(k, it.Value())
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err == nil && out.w == nil && len(out.rd.Clip(out.rdLower, out.rdUpper)) > 0 {
		err = out.start() // a table of range tombstones only
	}
	if err == nil && out.w != nil {
		err = out.finish(true)
	}
	return it.Stats(), err
}

func totalSize(files []*manifest.FileMetadata) uint64 {
	var n uint64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// Compact flushes the memtables, then compacts the key range [start, end]
// (nil = unbounded) of the default column family level by level down to
// the bottom level, and waits for it.
func (db *DB) Compact(start, end []byte) error {
	return db.compactCF(0, start, end)
}

// Compact compacts the range [start, end] of the column family down to the
// bottom level (see DB.Compact).
func (cf *ColumnFamily) Compact(start, end []byte) error {
	if err := cf.checkLive(); err != nil {
		return err
	}
	return cf.db.compactCF(cf.id, start, end)
}

func (db *DB) compactCF(cf uint32, start, end []byte) error {
	return db.compactCFContext(context.Background(), cf, start, end)
}

// compactCFContext is compactCF stopping with ctx's error between
// compactions (each is installed whole or not at all).
func (db *DB) compactCFContext(ctx context.Context, cf uint32, start, end []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := db.Flush(); err != nil {
		return err
	}
	if !db.compactable(cf) {
		return fmt.Errorf("%w: column family %d cannot be compacted until its merger is supplied", ErrNoMerger, cf)
	}
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		return fmt.Errorf("sieve: Compact: start %q > end %q", start, end)
	}
	db.mu.Lock()
	if err := db.compact.lastErr; err != nil {
		db.compact.lastErr = nil
		db.mu.Unlock()
		return err
	}
	if db.closed.Load() {
		db.mu.Unlock()
		return ErrClosed
	}
	// Close waits for the compaction (which stops at its next entry once
	// closed is set) as for background work: no subcompaction goroutine
	// may still be writing tables after Close returns. Close sets closed
	// under db.mu before it waits, so this Add never races its Wait.
	db.bg.Add(1)
	db.mu.Unlock()
	defer db.bg.Done()
	ran := false
	for level := 0; level < manifest.NumLevels; level++ {
		if level == manifest.NumLevels-1 && ran {
			// The range was just rewritten into the bottom level; a
			// second pass over it would only copy it again. When nothing
			// was above the bottom level, rewrite the bottom level in
			// place, to drop what snapshots no longer need.
			break
		}
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			c, v, err := db.pickManual(cf, level, start, end)
			if err != nil {
				return err
			}
			if c == nil {
				break
			}
			err = db.runCompaction(cf, c, v)
			v.Unref()
			ran = true
			db.mu.Lock()
			db.finishCompactionLocked(c, err)
			db.maybeScheduleCompactionLocked()
			db.mu.Unlock()
			if err != nil {
				return err
			}
			if level > 0 {
				break // Ln -> Ln+1 took the whole range at once
			}
		}
	}
	return nil
}

// pickManual picks the manual compaction of level in [start, end], waiting
// while its inputs are busy in a background compaction. It returns the
// version it was picked from, referenced.
func (db *DB) pickManual(cf uint32, level int, start, end []byte) (*compaction.Compaction, *manifest.Version, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for {
		if db.mu.bgErr != nil {
			return nil, nil, db.mu.bgErr
		}
		if db.closed.Load() {
			return nil, nil, ErrClosed
		}
		v := db.versions.Current()
		lv := v.Levels(cf)
		if lv == nil {
			v.Unref()
			return nil, nil, nil
		}
		c, err := db.pickerLocked(cf).PickManual(lv, level, start, end)
		if err == nil && db.compact.ingesting {
			err = compaction.ErrInputsCompacting // wait for the Ingest to place its tables
		}
		switch {
		case errors.Is(err, compaction.ErrInputsCompacting):
			v.Unref()
			db.mu.cond.Wait()
			continue
		case err != nil || c == nil:
			v.Unref()
			return nil, nil, err
		}
		setCompacting(c, true)
		db.compact.track(cf, c)
		db.compact.running++
		db.metrics.compactionsRunning.Store(int64(db.compact.running))
		return c, v, nil
	}
}
