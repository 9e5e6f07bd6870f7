// Package compaction holds the parts of leveled compaction and of the read
// iterator stack that need no DB state, so that each can be tested on its
// own (as Pebble keeps internal/compact apart from the DB):
//
//   - MergingIter merges any number of base.InternalIterators (memtables,
//     L0 tables, levels) into one, bidirectionally, with bounds.
//   - LevelIter iterates one sorted level, opening one table at a time.
//   - Iter, the compaction iterator, turns the merged input of a compaction
//     into the entries its output must keep: it drops versions no snapshot
//     can see, drops tombstones that hide nothing, and collapses merge
//     operands (the rules are below).
//   - Picker scores the levels and picks the next compaction: L0 by
//     table count, the other levels by size against targets sized
//     dynamically from the bottom level up (see Level sizing below),
//     round-robin within a level, inputs expanded to whole key ranges,
//     trivial moves; PickManual is one level step of db.Compact.
//   - Splitter cuts the output into tables at TargetFileSize or at a
//     grandparent-overlap limit, never inside one user key's history.
//   - NewElider answers Iter's "does any deeper level hold this key?".
//
// # Driving a compaction
//
// Under the DB mutex:
//
//	c := picker.Pick(version.Levels(cf))     // or picker.PickManual(levels, level, start, end)
//	mark every f in c.InputFiles() Compacting; keep version referenced
//	snaps := the open snapshots' seqnums, ascending
//
// Then, without the mutex, in the compaction goroutine:
//
//	if c.IsMove: edit = c.Edit(cf, c.Inputs[0])   // the table changes level, unrewritten
//	else:
//	  it := compaction.NewIter(c.NewInputIter(openTable), compaction.GCOptions{
//	      Snapshots: snaps, ElideTombstone: compaction.NewElider(levels, c.OutputLevel), Merger: m})
//	  sp := c.NewSplitter()
//	  for ok := it.First(); ok; ok = it.Next() {
//	      if sp.ShouldSplitBefore(it.Key(), w.EstimatedSize()) { finish w; start a new table }
//	      w.Add(it.Key(), it.Value())
//	  }
//	  err := it.Close()            // input error or corruption: install nothing
//	  finish w; sync tables and directory
//	  edit = c.Edit(cf, outputs)   // delete every input, add the outputs to OutputLevel
//
// and under the mutex again: apply the edit, clear Compacting on the inputs
// (also on failure), release the version. it.Stats() feeds the metrics.
//
// Subcompactions: c.SubcompactionBounds(n, minBytes) cuts the key range
// into up to n user-key ranges of about equal input bytes; each range runs
// the loop above on its own goroutine with c.NewInputIterRange(open, lo,
// hi), its own NewIter (and NewElider: it keeps cursors), Splitter and
// output tables. Every version of a key falls in one range, so the ranges'
// tables in range order are exactly the single run's entries, cut into a
// few more tables; one edit installs them all, or, if any range failed,
// nothing. The DB splits only manual compactions (Options.MaxSubcompactions).
//
// # Level sizing
//
// The Picker sizes levels as RocksDB's level_compaction_dynamic_level_bytes
// and Pebble do (Picker.Targets computes it): the bottom level, L6, is
// meant to hold all but 1/LevelMultiplier of the data, and each level
// above it a LevelMultiplier-th of the one below. The base level, where L0
// compacts to, is the highest level whose share exceeds
// LBaseMaxBytes/LevelMultiplier, and gets LBaseMaxBytes as its target; the
// levels between it and L6 get targets growing by one smoothed factor. A
// small LSM therefore has L6 as its base level: its flushes compact, or
// move, straight into L6, and L5, L4, ... come into use one by one as the
// bottom grows past LBaseMaxBytes, 10 × LBaseMaxBytes, ... The base level
// moves down past data only when the bottom has shrunk to half of what
// would justify that data's level (so it does not thrash); levels above
// the base level that hold data are drained. testdata/growth shows the
// shapes this gives.
//
// L0, a level being drained and a manual compaction write the first level
// below them that holds data overlapping their start-level inputs (or the
// base level, or L6 for a manual compaction), skipping the empty levels in
// between. That is safe because the skipped levels hold nothing in the
// range of the inputs when the compaction is picked, and nothing can
// arrive there while it runs: a table only arrives in a level from a
// compaction whose inputs cover its range, and such inputs would overlap
// this compaction's (its start-level tables, or transitively overlapping
// L0 tables, or output-level tables) and so be Compacting. The picker also
// refuses to expand a compaction's start-level inputs past a table of a
// skipped level. A model test (go test -run TestCompactionModel
// ./compaction) checks this with up to three compactions running at once.
//
// # Reading
//
// A DB iterator is a MergingIter whose children are, newest first, the
// memtables, one LevelIter per L0 table overlapping the bounds, and one
// LevelIter per non-empty level L1..L6 (LevelIters appends these):
//
//	children := compaction.LevelIters(memtableIters, levels, openTable, opts)
//	it := compaction.NewMergingIter(opts, children...)
//
// The DB's iterator above it hides versions newer than its sequence
// number, shadowed versions and tombstones, and resolves merge operands.
//
// # Garbage-collection rules
//
// The versions of one user key reach Iter newest first. A snapshot at
// sequence number s reads the versions with seq <= s; the latest state reads
// all of them. The open snapshots cut each key's history into stripes: two
// versions are in the same stripe when no snapshot s satisfies
// older.seq <= s < newer.seq. Every reader sees all of a stripe or none of
// it, so within a stripe only what its newest version (with the operands on
// it) resolves to matters.
//
//  1. Shadowing. Within a stripe the newest Set or Delete hides every older
//     version in that stripe; they are dropped (DroppedShadowed). Merge
//     operands newer than it, in the same stripe, are kept with it.
//  2. Merge operands, with a Merger. A stripe's run of operands collapses:
//     onto a Set in the stripe by FullMerge with that base; onto a Delete in
//     the stripe by FullMerge without a base; at the end of the key's
//     versions, when ElideTombstone(ukey) says no deeper level holds the
//     key, by FullMerge without a base. Each gives a Set carrying the newest
//     operand's sequence number (the base or Delete is consumed). Otherwise
//     (an older stripe follows, or a deeper level may hold a base) two or
//     more operands become one Merge operand by PartialMerge (ok=false keeps
//     them all); a single operand stays. Operands are never merged across a
//     stripe boundary. Without a Merger, operands are carried through as
//     they are (rule 1 still applies).
//  3. Merge errors. When FullMerge fails, the stripe's operands and its Set
//     or Delete, and every older stripe of the same key, are copied through
//     uncollapsed (MergeErrors counts the failures); newer stripes keep their
//     merged results. The compaction goes on: a bad operand stalls nothing
//     and loses nothing, and reads of that key keep failing with the
//     merger's error exactly as before.
//  4. Tombstones. A Delete is kept only while it hides something. It is
//     dropped (DroppedTombstones) when the next older version of the key
//     that survives in the output is itself a Delete (the older one gives
//     every reader the same answer), or when no older version survives and
//     ElideTombstone(ukey) is true. This covers the LevelDB/Pebble rule (a
//     tombstone in the oldest stripe with nothing below goes, with what it
//     shadowed) and also drops tombstones in newer stripes when nothing
//     older exists at all.
//
// Examples (testdata/gc has these and more; "elide" means ElideTombstone
// is true):
//
//	input                                snapshots  elide  merger  output
//	a.SET.9:x a.SET.5:y a.DEL.2          -          -      -       a.SET.9:x
//	a.SET.9:x a.SET.5:y a.SET.4:w        6          -      -       a.SET.9:x a.SET.5:y
//	a.DEL.9 a.SET.5:y                    -          no     -       a.DEL.9
//	a.DEL.9 a.SET.5:y                    -          yes    -       (nothing)
//	a.DEL.9 a.SET.5:y                    7          yes    -       a.DEL.9 a.SET.5:y
//	a.DEL.9                              3          yes    -       (nothing)
//	a.DEL.9 a.DEL.5                      7          no     -       a.DEL.5
//	a.MERGE.9:c a.SET.5:a a.SET.3:z      -          -      -       a.MERGE.9:c a.SET.5:a
//	a.MERGE.9:c a.MERGE.8:b a.SET.5:a    -          -      append  a.SET.9:abc
//	a.MERGE.9:c a.MERGE.8:b a.DEL.5      -          -      append  a.SET.9:bc
//	a.MERGE.9:c a.MERGE.8:b              -          yes    append  a.SET.9:bc
//	a.MERGE.9:c a.MERGE.8:b a.MERGE.7:a  -          no     append  a.MERGE.9:abc
//	a.MERGE.9:c a.MERGE.8:b a.SET.5:a    8          -      append  a.MERGE.9:c a.SET.8:ab
//	a.MERGE.9:c a.MERGE.8:b a.MERGE.6:a  7          yes    append  a.MERGE.9:bc a.SET.6:a
//
// ElideTombstone must be conservative: true only when no level below the
// output holds data for the key. Data never moves into the key range of a
// running compaction below its output level (the picker's Compacting checks
// ensure it, also for compactions that skip levels), so an answer computed
// from the version the compaction was picked from (NewElider) stays right
// while it runs. A flush must pass nil.
//
// # Concurrency
//
// Every object here (MergingIter, LevelIter, Iter, Splitter, the
// predicate from NewElider) is used by one goroutine at a time; different
// objects may run in different goroutines. Levels and FileMetadata are only
// read: their key ranges and sizes are immutable once in a version, and
// the Compacting flags are read by the Picker (and by PickManual) only,
// under the caller's lock (the DB mutex), which also guards every write
// of them. A Picker holds per-level cursors; Pick and PickManual must be
// serialized by that same lock. Picker.Targets and Picker.Scores read
// neither and may be called from anywhere.
package compaction
