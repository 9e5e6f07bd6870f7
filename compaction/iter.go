package compaction

import (
	"bytes"
	"sort"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/rangedel"
)

// Merger resolves merge operands of a column family. It is the one
// definition of a merge operator in sieve: the root package re-exports it
// as sieve.Merger, whose documentation states the full contract.
//
// In short: operands are passed oldest first; PartialMerge may be applied
// to any run of adjacent operands not split by a snapshot, in any grouping,
// so the operation must be associative; it must be safe for concurrent use
// and deterministic. Neither merge method may retain or modify its
// arguments. Compaction does not call Name.
type Merger interface {
	// Name is recorded in the manifest for each column family; reopening
	// with a merger of another name is an error.
	Name() string
	// FullMerge applies operands (oldest first) to the base value; hasBase
	// is false when the key has none (never written, or deleted).
	FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error)
	// PartialMerge combines adjacent operands (oldest first) into one;
	// ok=false keeps them as they are.
	PartialMerge(key []byte, operands [][]byte) (merged []byte, ok bool)
}

// GCOptions configure the compaction iterator.
type GCOptions struct {
	// Snapshots are the sequence numbers of the open snapshots, in
	// ascending order (duplicates allowed; an unsorted list is sorted into
	// a copy). A snapshot at s reads the
	// versions with seq <= s. Taken once when the compaction starts:
	// snapshots opened later see every input version anyway.
	Snapshots []uint64
	// ElideTombstone reports whether no level below the compaction's
	// output level holds data for ukey (a table whose key range merely
	// contains ukey counts as holding it). nil means never, which is what
	// a flush, or a compaction with unknown lower levels, must use. It is
	// called at most once per user key, in ascending key order, and only
	// for keys where the answer matters.
	ElideTombstone func(ukey []byte) bool
	// Merger collapses merge operands; nil carries them through untouched.
	Merger Merger
	// RangeDels are the range tombstones of the input, fragmented (nil:
	// none). An entry below a tombstone covering its key in the same
	// snapshot stripe is dropped, and the tombstone is the base ("no
	// value") of the operands above it in that stripe, like a Delete. The
	// iterator does not yield the tombstones themselves: the caller
	// writes them (rangedel.Compact).
	RangeDels *rangedel.List
	// Now is the time (unix nanoseconds) deadlines are judged by: a
	// SetExpiring whose deadline is at or before Now becomes a Delete of
	// the same sequence number, which hides what is below it as the
	// expired value did (0: nothing expires).
	Now int64
	// Filter, if not nil, is asked about each full value (a Set or live
	// SetExpiring, or a FullMerge's result) of a key's newest stripe, the
	// one no snapshot sees; true removes the value, which becomes a Delete
	// of the same sequence number. deadline is the value's (0: none).
	Filter func(ukey, value []byte, deadline int64) bool
}

// GCStats counts what a compaction iterator did.
type GCStats struct {
	EntriesIn  int64 // entries read from the input
	EntriesOut int64 // entries yielded
	// DroppedShadowed counts versions dropped because a newer version in
	// the same snapshot stripe hides them.
	DroppedShadowed int64
	// DroppedTombstones counts tombstones dropped because they hid
	// nothing: nothing older survives for the key in the output, and either
	// nothing below the output level holds the key or the next older
	// surviving version is itself a tombstone.
	DroppedTombstones int64
	// OperandsMerged counts operands folded into a FullMerge or a
	// successful PartialMerge.
	OperandsMerged int64
	FullMerges     int64
	PartialMerges  int64
	// PartialMergesDeclined counts PartialMerge calls that returned
	// ok=false; their operands were kept.
	PartialMergesDeclined int64
	// MergeErrors counts FullMerge errors. The key's remaining operands
	// (from the failing stripe down) were copied through uncollapsed.
	MergeErrors int64
	// DroppedByRangeDel counts entries dropped because a range tombstone
	// in the same snapshot stripe covers them.
	DroppedByRangeDel int64
	// Expired counts values turned into Deletes because their deadline
	// had come; Filtered those GCOptions.Filter removed.
	Expired  int64
	Filtered int64
}

// Add adds o's counts to s (the stats of a compaction run as
// subcompactions).
func (s *GCStats) Add(o GCStats) {
	s.EntriesIn += o.EntriesIn
	s.EntriesOut += o.EntriesOut
	s.DroppedShadowed += o.DroppedShadowed
	s.DroppedTombstones += o.DroppedTombstones
	s.OperandsMerged += o.OperandsMerged
	s.FullMerges += o.FullMerges
	s.PartialMerges += o.PartialMerges
	s.PartialMergesDeclined += o.PartialMergesDeclined
	s.MergeErrors += o.MergeErrors
	s.DroppedByRangeDel += o.DroppedByRangeDel
	s.Expired += o.Expired
	s.Filtered += o.Filtered
}

// output is one entry waiting to be yielded; its user key is Iter.ukey.
type output struct {
	trailer uint64
	value   []byte
	// virtual marks the Delete a range tombstone stands for: it ends the
	// stripe like a Delete but is never written (the tombstone is).
	virtual bool
}

func (o output) kind() base.Kind { return base.Kind(o.trailer & 0xff) }

// deadline is a SetExpiring output's deadline (0 for other kinds).
func (o output) deadline() int64 {
	if o.kind() != base.KindSetExpiring {
		return 0
	}
	d, _, _ := base.SplitExpiring(o.value)
	return d
}

// expiring returns the output for the input's current entry, a
// SetExpiring: itself, or a Delete of its sequence number if it expired.
func (i *Iter) expiring(k base.InternalKey) output {
	d, _, ok := base.SplitExpiring(i.in.Value())
	if !ok {
		i.err = base.CorruptionErrorf("compaction: expiring value of %s shorter than its deadline", k)
		return output{}
	}
	if i.opts.Now != 0 && i.opts.Now >= d {
		i.stats.Expired++
		return output{trailer: base.MakeTrailer(k.SeqNum(), base.KindDelete)}
	}
	return output{trailer: k.Trailer, value: i.save(i.in.Value())}
}

// filtered asks GCOptions.Filter about o, a full value (val its user
// value; nil: o.value) of the given stripe, and returns o or the Delete
// that replaces it.
func (i *Iter) filtered(o output, val []byte, deadline int64, stripe int) output {
	if i.opts.Filter == nil || stripe != len(i.opts.Snapshots) || !o.kind().IsSet() {
		return o
	}
	if val == nil {
		val = o.value
	}
	if !i.opts.Filter(i.ukey, val, deadline) {
		return o
	}
	i.stats.Filtered++
	return output{trailer: base.MakeTrailer(o.trailer>>8, base.KindDelete)}
}

// Iter is the compaction iterator: it reads a forward stream of internal
// keys (the merged inputs of a compaction) and yields the entries the
// output tables must hold, applying the rules in the package documentation.
//
// Call order: NewIter, First, (Key Value Next)* until First or Next returns
// false, Error, Close. Key and Value are valid until the next call to Next;
// they point into the iterator's own buffers (or into a merger's result),
// never into the input. Not safe for concurrent use.
type Iter struct {
	in    base.InternalIterator
	opts  GCOptions
	stats GCStats
	err   error

	inValid     bool   // in is positioned at an entry not yet consumed
	keyOpen     bool   // ukey has versions still to process
	ukey        []byte // user key being processed (a copy)
	lastTrailer uint64 // trailer of the last entry read, for the order check
	elide       int8   // ElideTombstone(ukey): 0 not asked yet, 1 true, -1 false
	mergeFailed bool   // FullMerge failed for ukey: copy its operands through
	rangeDels   *rangedel.Cursor

	// Outputs of the stripe being yielded, and the bytes they own.
	out   []output
	pos   int
	arena []byte

	// Scratch for the stripe being resolved.
	opTrailers []uint64
	opValues   [][]byte // newest first
	opsOldest  [][]byte

	// A tombstone held back until we know whether it hides anything.
	pending    output
	hasPending bool
	pendingBuf []byte
}

// NewIter returns a compaction iterator over input, which must yield
// entries in CompareInternal order; only its First and Next are used. The
// Iter owns input from then on: Close closes it.
func NewIter(input base.InternalIterator, opts GCOptions) *Iter {
	if !sort.SliceIsSorted(opts.Snapshots, func(a, b int) bool { return opts.Snapshots[a] < opts.Snapshots[b] }) {
		opts.Snapshots = append([]uint64(nil), opts.Snapshots...)
		sort.Slice(opts.Snapshots, func(a, b int) bool { return opts.Snapshots[a] < opts.Snapshots[b] })
	}
	return &Iter{in: input, opts: opts, rangeDels: rangedel.NewCursor(opts.RangeDels)}
}

// First positions the iterator at the first entry to keep.
func (i *Iter) First() bool {
	if i.err != nil {
		return false
	}
	i.out, i.pos = i.out[:0], 0
	i.keyOpen, i.hasPending = false, false
	i.inValid = i.in.First()
	if !i.inValid {
		i.err = i.in.Error()
		return false
	}
	i.stats.EntriesIn++
	return i.advance()
}

// Next moves to the following entry to keep.
func (i *Iter) Next() bool {
	if i.pos < len(i.out) {
		i.pos++
	}
	return i.advance()
}

// advance yields out[pos], refilling out from the input while it is used up.
func (i *Iter) advance() bool {
	for i.pos >= len(i.out) {
		if !i.fill() {
			return false
		}
	}
	i.stats.EntriesOut++
	return true
}

// Key returns the current entry's key.
func (i *Iter) Key() base.InternalKey {
	return base.InternalKey{UserKey: i.ukey, Trailer: i.out[i.pos].trailer}
}

// Value returns the current entry's value.
func (i *Iter) Value() []byte { return i.out[i.pos].value }

// Error returns the error that stopped the iteration: the input's, or a
// corruption error if the input was out of order or held an unknown kind.
// Merger errors are not iteration errors (see GCStats.MergeErrors).
func (i *Iter) Error() error { return i.err }

// Stats returns the counters so far.
func (i *Iter) Stats() GCStats { return i.stats }

// Close closes the input and returns the first error seen.
func (i *Iter) Close() error {
	err := i.in.Close()
	if i.err != nil {
		err = i.err
	}
	i.out, i.arena, i.pos = nil, nil, 0
	return err
}

// save copies b into the arena, which is reset for every stripe.
func (i *Iter) save(b []byte) []byte {
	start := len(i.arena)
	i.arena = append(i.arena, b...)
	return i.arena[start:len(i.arena):len(i.arena)]
}

// stripe returns the index of the snapshot stripe holding seq: the index of
// the oldest snapshot that sees it, or len(Snapshots) for "only the latest
// state sees it".
func (i *Iter) stripe(seq uint64) int {
	s := i.opts.Snapshots
	if len(s) == 0 || seq > s[len(s)-1] {
		return len(s)
	}
	return sort.Search(len(s), func(j int) bool { return s[j] >= seq })
}

// rangeTomb returns the newest sequence number of a range tombstone in
// the given stripe that covers ukey, or 0.
func (i *Iter) rangeTomb(stripe int) uint64 {
	for _, s := range i.rangeDels.Seqs(i.ukey) {
		switch st := i.stripe(s); {
		case st == stripe:
			return s
		case st < stripe:
			return 0
		}
	}
	return 0
}

// elideKey asks ElideTombstone about ukey, once per key.
func (i *Iter) elideKey() bool {
	if i.elide == 0 {
		i.elide = -1
		if i.opts.ElideTombstone != nil && i.opts.ElideTombstone(i.ukey) {
			i.elide = 1
		}
	}
	return i.elide > 0
}

// step consumes the input's current entry and moves to the next one. It
// reports whether that entry continues the current user key.
func (i *Iter) step() (sameKey bool) {
	i.inValid = i.in.Next()
	if !i.inValid {
		i.err = i.in.Error()
		return false
	}
	i.stats.EntriesIn++
	k := i.in.Key()
	c := bytes.Compare(k.UserKey, i.ukey)
	if c < 0 || (c == 0 && k.Trailer >= i.lastTrailer) {
		i.err = base.CorruptionErrorf("compaction: input out of order: %s after %s",
			k, base.InternalKey{UserKey: i.ukey, Trailer: i.lastTrailer})
		i.inValid = false
		return false
	}
	i.lastTrailer = k.Trailer
	return c == 0
}

// fill reads one snapshot stripe of the current user key (starting a new
// key if the last one is finished), resolves it into out, and finishes the
// key if the stripe was its oldest. It returns false at the end of the
// input or on an error.
func (i *Iter) fill() bool {
	i.out, i.pos, i.arena = i.out[:0], 0, i.arena[:0]
	if i.err != nil || !i.inValid {
		return false
	}
	k := i.in.Key()
	if !i.keyOpen {
		i.ukey = append(i.ukey[:0], k.UserKey...)
		i.lastTrailer = k.Trailer
		i.keyOpen, i.elide, i.mergeFailed = true, 0, false
	}
	stripe := i.stripe(k.SeqNum())
	tomb := i.rangeTomb(stripe)
	i.opTrailers, i.opValues = i.opTrailers[:0], i.opValues[:0]
	var term output
	hasTerm, sameKey := false, true
	for {
		switch kind := k.Kind(); {
		case hasTerm && term.virtual:
			i.stats.DroppedByRangeDel++
		case hasTerm:
			i.stats.DroppedShadowed++
		case k.SeqNum() < tomb:
			term, hasTerm = output{trailer: base.MakeTrailer(tomb, base.KindDelete), virtual: true}, true
			i.stats.DroppedByRangeDel++
		case kind == base.KindMerge:
			i.opTrailers = append(i.opTrailers, k.Trailer)
			i.opValues = append(i.opValues, i.save(i.in.Value()))
		case kind == base.KindSet || kind == base.KindDelete:
			term, hasTerm = output{trailer: k.Trailer, value: i.save(i.in.Value())}, true
			if kind == base.KindSet {
				term = i.filtered(term, nil, 0, stripe)
			}
		case kind == base.KindSetExpiring:
			if term, hasTerm = i.expiring(k), true; i.err != nil {
				return false
			}
			if term.kind() == base.KindSetExpiring {
				term = i.filtered(term, term.value[base.ExpiryLen:], term.deadline(), stripe)
			}
		default:
			i.err = base.CorruptionErrorf("compaction: unknown kind in %s", k)
			return false
		}
		if sameKey = i.step(); !sameKey {
			break
		}
		if k = i.in.Key(); i.stripe(k.SeqNum()) != stripe {
			break
		}
	}
	if i.err != nil {
		return false
	}
	if !hasTerm && tomb > 0 {
		// The tombstone lies below every entry of the stripe: it is the
		// base of its operands.
		term, hasTerm = output{trailer: base.MakeTrailer(tomb, base.KindDelete), virtual: true}, true
	}
	i.resolveStripe(term, hasTerm, !sameKey, stripe)
	if !sameKey {
		i.finishKey()
	}
	return true
}

// resolveStripe emits what one stripe of ukey keeps: its operands (merged
// where the rules allow) and its newest Set or Delete, if any.
func (i *Iter) resolveStripe(term output, hasTerm, lastStripe bool, stripe int) {
	ops := len(i.opValues)
	m := i.opts.Merger
	switch {
	case ops == 0:
		i.emit(term)
	case m == nil || i.mergeFailed:
		i.emitOperands(term, hasTerm)
	case hasTerm && term.kind() == base.KindSet:
		i.fullMerge(term, hasTerm, term.value, true, stripe)
	case hasTerm && term.kind() == base.KindSetExpiring:
		// Operands are not folded onto an expiring value: from its
		// deadline on they read as written onto nothing (as the read
		// paths resolve them), which a merged value could not.
		if ops == 1 {
			i.emitOperands(term, true)
		} else {
			i.partialMerge()
			i.emit(term)
		}
	case hasTerm: // a Delete: the operands apply to nothing
		i.fullMerge(term, hasTerm, nil, false, stripe)
	case lastStripe && i.elideKey():
		i.fullMerge(term, hasTerm, nil, false, stripe)
	case ops == 1:
		i.emitOperands(term, hasTerm)
	default:
		i.partialMerge()
	}
}

// oldestFirst returns the stripe's operand values oldest first.
func (i *Iter) oldestFirst() [][]byte {
	i.opsOldest = i.opsOldest[:0]
	for j := len(i.opValues) - 1; j >= 0; j-- {
		i.opsOldest = append(i.opsOldest, i.opValues[j])
	}
	return i.opsOldest
}

// mergedTrailer is the trailer of a merge result: the newest operand's
// sequence number with the given kind.
func (i *Iter) mergedTrailer(kind base.Kind) uint64 {
	return base.MakeTrailer(i.opTrailers[0]>>8, kind)
}

// fullMerge merges the stripe's operands onto baseValue.
func (i *Iter) fullMerge(term output, hasTerm bool, baseValue []byte, hasBase bool, stripe int) {
	v, err := i.opts.Merger.FullMerge(i.ukey, baseValue, hasBase, i.oldestFirst())
	if err != nil {
		i.stats.MergeErrors++
		i.mergeFailed = true
		i.emitOperands(term, hasTerm)
		return
	}
	i.stats.FullMerges++
	i.stats.OperandsMerged += int64(len(i.opValues))
	i.emit(i.filtered(output{trailer: i.mergedTrailer(base.KindSet), value: v}, nil, 0, stripe))
}

func (i *Iter) partialMerge() {
	v, ok := i.opts.Merger.PartialMerge(i.ukey, i.oldestFirst())
	if !ok {
		i.stats.PartialMergesDeclined++
		i.emitOperands(output{}, false)
		return
	}
	i.stats.PartialMerges++
	i.stats.OperandsMerged += int64(len(i.opValues))
	i.emit(output{trailer: i.mergedTrailer(base.KindMerge), value: v})
}

// emitOperands emits the stripe's operands as they are, then its Set or
// Delete if it has one.
func (i *Iter) emitOperands(term output, hasTerm bool) {
	for j, t := range i.opTrailers {
		i.emit(output{trailer: t, value: i.opValues[j]})
	}
	if hasTerm {
		i.emit(term)
	}
}

// emit appends an entry to the output, holding tombstones back: a
// tombstone is written only once something older than it survives for the
// same key (finishKey decides otherwise). When a held tombstone is followed
// directly by an older one, the older one gives every reader the same
// answer, so the newer is dropped.
func (i *Iter) emit(o output) {
	if o.virtual {
		return
	}
	if o.kind() == base.KindDelete {
		if i.hasPending {
			i.stats.DroppedTombstones++
		}
		i.pendingBuf = append(i.pendingBuf[:0], o.value...)
		i.pending = output{trailer: o.trailer, value: i.pendingBuf}
		i.hasPending = true
		return
	}
	i.flushPending()
	i.out = append(i.out, o)
}

func (i *Iter) flushPending() {
	if i.hasPending {
		i.hasPending = false
		i.out = append(i.out, output{trailer: i.pending.trailer, value: i.save(i.pending.value)})
	}
}

// finishKey ends ukey after its oldest stripe: a tombstone still held back
// hides nothing in the output, so it goes only if something below the
// output level may hold the key.
func (i *Iter) finishKey() {
	i.keyOpen = false
	if !i.hasPending {
		return
	}
	if i.elideKey() {
		i.hasPending = false
		i.stats.DroppedTombstones++
		return
	}
	i.flushPending()
}
