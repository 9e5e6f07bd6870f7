package sieve

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestMetamorphic runs one random sequence of operations — puts, deletes,
// merges, batches, gets, bounded iteration both ways with seeks,
// snapshots and reads through them, flushes, range compactions, close and
// reopen — under many option sets that must not change any answer:
// memtable sizes, L0 triggers, level sizes, block sizes and restart
// intervals, filter policies (blocked Bloom, classic Bloom, cuckoo, binary
// fuse, Ribbon, none; per-level policies; Monkey allocation),
// compression on and off, block cache off, merge collapsing, concurrent
// compactions, and the same operations in a non-default column family
// (while different writes go to the default one). The output of every read
// is compared with the first option set's; a difference fails with the
// operation, both outputs and the replay seed. Each run also ends with
// CheckInvariants(true).
//
// 4,000 operations (800 with -short or -race); SIEVE_LONG=1 runs 40,000
// (SIEVE_META_OPS overrides).
func TestMetamorphic(t *testing.T) {
	seed := testutil.Seed(t)
	n := 4000
	switch {
	case relLong():
		n = 40000
	case testing.Short() || relRaceEnabled:
		n = 800
	}
	n = envInt("SIEVE_META_OPS", n)
	ops := genMetaOps(rand.New(rand.NewSource(seed)), n)

	var ref []string
	var refName string
	for i, set := range metaOptionSets() {
		out, stats, err := runMeta(set, ops)
		require.NoError(t, err, "option set %q (replay: SIEVE_SEED=%d go test -run '^TestMetamorphic$')", set.name, seed)
		t.Logf("  %-52s %s", set.name, stats)
		if i == 0 {
			ref, refName = out, set.name
			continue
		}
		for j := 0; j < max(len(ref), len(out)); j++ {
			var a, b string
			if j < len(ref) {
				a = ref[j]
			}
			if j < len(out) {
				b = out[j]
			}
			if a != b {
				t.Fatalf("read %d differs between option sets %q and %q (replay: SIEVE_SEED=%d go test -run '^TestMetamorphic$'):\n  %s: %s\n  %s: %s",
					j, refName, set.name, seed, refName, trunc(a), set.name, trunc(b))
			}
		}
	}
	t.Logf("%d operations, %d reads compared across %d option sets", len(ops), len(ref), len(metaOptionSets()))
}

// metaOp is one operation of the metamorphic sequence.
type metaOp struct {
	kind    string
	key     string
	hi      string // upper bound for iter
	value   string
	entries []relEntry // batch (cf ignored: the target column family)
	snap    int        // snapshot slot
}

func genMetaOps(rng *rand.Rand, n int) []metaOp {
	key := func() string { return fmt.Sprintf("k%04d", rng.Intn(600)) }
	val := func(i int) string {
		return fmt.Sprintf("v%d.%s", i, strings.Repeat(string(rune('a'+rng.Intn(26))), rng.Intn(1200)))
	}
	var ops []metaOp
	for i := 0; i < n; i++ {
		var op metaOp
		switch r := rng.Intn(1000); {
		case r < 300:
			op = metaOp{kind: "put", key: key(), value: val(i)}
		case r < 380:
			op = metaOp{kind: "delete", key: key()}
		case r < 500:
			op = metaOp{kind: "merge", key: key(), value: fmt.Sprintf("m%d", i)}
		case r < 560:
			op.kind = "batch"
			for j := rng.Intn(6); j >= 0; j-- {
				switch rng.Intn(3) {
				case 0:
					op.entries = append(op.entries, set(0, key(), val(i)))
				case 1:
					op.entries = append(op.entries, del(0, key()))
				default:
					op.entries = append(op.entries, merge(0, key(), fmt.Sprintf("bm%d.%d", i, j)))
				}
			}
		case r < 760:
			op = metaOp{kind: "get", key: key()}
		case r < 800:
			lo, hi := key(), key()
			if lo > hi {
				lo, hi = hi, lo
			}
			if rng.Intn(5) == 0 {
				lo = ""
			}
			if rng.Intn(5) == 0 {
				hi = ""
			}
			op = metaOp{kind: "iter", key: lo, hi: hi, value: key()}
		case r < 830:
			op = metaOp{kind: "snapshot", snap: rng.Intn(3)}
		case r < 880:
			op = metaOp{kind: "snapget", snap: rng.Intn(3), key: key()}
		case r < 890:
			op = metaOp{kind: "snapiter", snap: rng.Intn(3), value: key()}
		case r < 900:
			op = metaOp{kind: "snapclose", snap: rng.Intn(3)}
		case r < 910:
			op = metaOp{kind: "flush"}
		case r < 915:
			lo, hi := key(), key()
			if lo > hi {
				lo, hi = hi, lo
			}
			if rng.Intn(4) == 0 {
				lo, hi = "", ""
			}
			op = metaOp{kind: "compact", key: lo, hi: hi}
		case r < 920:
			op = metaOp{kind: "reopen"}
		case r < 935:
			op = genMetaRangeDel(rng)
		default:
			op = metaOp{kind: "wait"} // let background work run
		}
		ops = append(ops, op)
	}
	return ops
}

// metaOptionSet is one configuration the sequence runs under.
type metaOptionSet struct {
	name string
	opts Options
	cf   *ColumnFamilyOptions // non-nil: operate on a non-default column family
}

func metaOptionSets() []metaOptionSet {
	small := func(o Options) Options {
		o.MemTableSize = 64 << 10
		o.L0CompactionTrigger, o.L0StopWritesTrigger = 2, 8
		o.LBaseMaxBytes, o.TargetFileSize = 128<<10, 32<<10
		return o
	}
	return []metaOptionSet{
		{name: "defaults", opts: Options{}},
		{name: "small memtables, eager compaction", opts: small(Options{})},
		{name: "L0 trigger 1, level multiplier 2, 4 KiB files", opts: Options{MemTableSize: 64 << 10, L0CompactionTrigger: 1, L0StopWritesTrigger: 4,
			LevelMultiplier: 2, LBaseMaxBytes: 64 << 10, TargetFileSize: 4 << 10}},
		{name: "256 B blocks, restart interval 1", opts: small(Options{BlockSize: 256, BlockRestartInterval: 1})},
		{name: "64 KiB blocks, restart interval 64", opts: small(Options{BlockSize: 64 << 10, BlockRestartInterval: 64})},
		{name: "no filter", opts: small(Options{FilterPolicy: filter.None})},
		{name: "cuckoo filter", opts: small(Options{FilterPolicy: filter.Cuckoo(12)})},
		{name: "classic Bloom filter", opts: small(Options{FilterPolicy: filter.StandardBloom(10)})},
		{name: "binary fuse 8", opts: small(Options{FilterPolicy: filter.BinaryFuse(8)})},
		{name: "Ribbon 7", opts: small(Options{FilterPolicy: filter.Ribbon(7)})},
		{name: "per-level policies (fuse16 L0, cuckoo, Ribbon bottom), Monkey", opts: small(Options{FilterAllocation: MonkeyFilters,
			LevelFilterPolicies: []filter.Policy{filter.BinaryFuse(16), nil, filter.Cuckoo(10), nil, nil, filter.StandardBloom(6), filter.Ribbon(5.5)}})},
		{name: "Monkey over Bloom 10", opts: small(Options{FilterAllocation: MonkeyFilters})},
		{name: "no compression", opts: small(Options{Compression: NoCompression})},
		{name: "no block cache, 16 open files", opts: small(Options{BlockCacheSize: -1, MaxOpenFiles: 16})},
		{name: "index and filter charged to a 64 KiB cache, L0 pinned, 16 open files", opts: small(Options{CacheIndexAndFilterBlocks: true,
			BlockCacheSize: 64 << 10, MaxOpenFiles: 16})},
		{name: "partitioned index and filter (256 B partitions), charged to a 64 KiB cache", opts: small(Options{CacheIndexAndFilterBlocks: true,
			PartitionIndexAndFilters: true, MetadataBlockSize: 256, BlockCacheSize: 64 << 10, BlockSize: 512})},
		{name: "partitioned index and filter (256 B partitions), resident", opts: small(Options{PartitionIndexAndFilters: true,
			MetadataBlockSize: 256, BlockSize: 512})},
		{name: "merges collapsed after 2", opts: small(Options{MaxSuccessiveMerges: 2})},
		{name: "merges never collapsed, 2 compactions at once", opts: small(Options{MaxSuccessiveMerges: -1, MaxConcurrentCompactions: 2})},
		{name: "column family", opts: small(Options{}), cf: &ColumnFamilyOptions{}},
		{name: "column family: cuckoo, no compression, tiny blocks", opts: small(Options{Compression: NoCompression, BlockSize: 256}),
			cf: &ColumnFamilyOptions{FilterPolicy: filter.Cuckoo(16)}},
		{name: "column family: per-level Ribbon and fuse", opts: small(Options{}),
			cf: &ColumnFamilyOptions{LevelFilterPolicies: []filter.Policy{filter.Ribbon(9.5), filter.BinaryFuse(8), filter.BinaryFuse(8)}}},
	}
}

// metaRun executes a sequence on one option set.
type metaRun struct {
	set   metaOptionSet
	fs    *vfs.MemFS
	db    *DB
	cf    *ColumnFamily
	snaps [3]*Snapshot
	out   []string
	noise int
	// Work done, summed over reopens.
	flushes, compactions, moves int64
	deepest                     int
}

// account adds the open DB's counters before it is closed.
func (r *metaRun) account() {
	m := r.db.Metrics()
	r.flushes += m.Flush.Count
	r.compactions += m.Compaction.Count
	r.moves += m.Compaction.Moves
	for l := range m.Levels {
		if m.Levels[l].NumFiles > 0 {
			r.deepest = max(r.deepest, l)
		}
	}
}

func runMeta(set metaOptionSet, ops []metaOp) (out []string, stats string, err error) {
	r := &metaRun{set: set, fs: vfs.NewMem()}
	if err := r.open(); err != nil {
		return nil, "", err
	}
	defer func() {
		if r.db != nil {
			r.closeSnaps()
			r.account()
			stats = fmt.Sprintf("%d flushes, %d compactions, %d moves, deepest level L%d", r.flushes, r.compactions, r.moves, r.deepest)
			if ierr := r.db.CheckInvariants(true); ierr != nil && err == nil {
				err = ierr
			}
			if cerr := r.db.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	for i, op := range ops {
		if err := r.do(op); err != nil {
			return r.out, "", fmt.Errorf("op %d %+v: %w", i, op, err)
		}
	}
	return r.out, "", nil
}

func (r *metaRun) open() error {
	o := r.set.opts
	o.FS = r.fs
	if r.set.cf == nil {
		o.Merger = appendMerger{}
	}
	db, err := Open("/db", &o)
	if err != nil {
		return err
	}
	r.db = db
	if r.set.cf != nil {
		co := *r.set.cf
		co.Merger = appendMerger{}
		if r.cf, err = db.OpenColumnFamily("meta", &co); err != nil {
			return err
		}
	}
	return nil
}

func (r *metaRun) closeSnaps() {
	for i, s := range r.snaps {
		if s != nil {
			s.Close()
			r.snaps[i] = nil
		}
	}
}

// readResult formats the answer of a read.
func readResult(v []byte, err error) string {
	switch {
	case err == nil:
		return string(v)
	case errors.Is(err, ErrNotFound):
		return "<not found>"
	}
	return "<error: " + err.Error() + ">"
}

// scan formats a forward scan, a backward scan and a few seeks.
func scanIter(it *Iterator, seek string) string {
	var b strings.Builder
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(&b, "%s=%s;", it.Key(), it.Value())
	}
	b.WriteString("|")
	for ok := it.Last(); ok; ok = it.Prev() {
		fmt.Fprintf(&b, "%s;", it.Key())
	}
	b.WriteString("|")
	if it.SeekGE([]byte(seek)) {
		fmt.Fprintf(&b, "ge %s=%s", it.Key(), it.Value())
		if it.Prev() {
			fmt.Fprintf(&b, " prev %s", it.Key())
		}
	}
	if it.SeekLT([]byte(seek)) {
		fmt.Fprintf(&b, " lt %s", it.Key())
		if it.Next() {
			fmt.Fprintf(&b, " next %s", it.Key())
		}
	}
	if err := it.Error(); err != nil {
		fmt.Fprintf(&b, " <error: %v>", err)
	}
	it.Close()
	return b.String()
}

func (r *metaRun) do(op metaOp) error {
	switch op.kind {
	case "put", "delete", "merge", "batch":
		return r.write(op)
	case "deleterange":
		return r.deleteRange(op)
	case "get", "iter":
		r.read(op)
	case "snapshot", "snapget", "snapiter", "snapclose":
		r.snapshotOp(op)
	default:
		return r.maintain(op)
	}
	return nil
}

// write applies a put, delete, merge or batch.
func (r *metaRun) write(op metaOp) error {
	db, cf := r.db, r.cf
	k, v := []byte(op.key), []byte(op.value)
	// In the column-family sets, the default family takes different
	// writes to the same keys: nothing may leak across.
	if cf != nil && (op.kind == "put" || op.kind == "delete" || op.kind == "merge") {
		r.noise++
		if err := db.Put(k, []byte(fmt.Sprintf("noise%d", r.noise)), nil); err != nil {
			return err
		}
	}
	switch op.kind {
	case "put":
		if cf != nil {
			return cf.Put(k, v, nil)
		}
		return db.Put(k, v, nil)
	case "delete":
		if cf != nil {
			return cf.Delete(k, nil)
		}
		return db.Delete(k, nil)
	case "merge":
		if cf != nil {
			return cf.Merge(k, v, nil)
		}
		return db.Merge(k, v, nil)
	case "batch":
		b := db.NewBatch()
		for _, e := range op.entries {
			ek, ev := []byte(e.key), []byte(e.value)
			switch {
			case cf == nil && e.kind == 1:
				b.Put(ek, ev)
			case cf == nil && e.kind == 0:
				b.Delete(ek)
			case cf == nil:
				b.Merge(ek, ev)
			case e.kind == 1:
				b.PutCF(cf, ek, ev)
			case e.kind == 0:
				b.DeleteCF(cf, ek)
			default:
				b.MergeCF(cf, ek, ev)
			}
		}
		return db.Apply(b, nil)
	}
	return nil
}

// read records a get or an iterator scan.
func (r *metaRun) read(op metaOp) {
	db, cf := r.db, r.cf
	k := []byte(op.key)
	switch op.kind {
	case "get":
		var got []byte
		var err error
		if cf != nil {
			got, err = cf.Get(k)
		} else {
			got, err = db.Get(k)
		}
		r.out = append(r.out, "get "+op.key+" = "+readResult(got, err))
	case "iter":
		o := &IterOptions{}
		if op.key != "" {
			o.LowerBound = []byte(op.key)
		}
		if op.hi != "" {
			o.UpperBound = []byte(op.hi)
		}
		var it *Iterator
		if cf != nil {
			it = cf.NewIter(o)
		} else {
			it = db.NewIter(o)
		}
		r.out = append(r.out, fmt.Sprintf("iter [%s,%s) %s", op.key, op.hi, scanIter(it, op.value)))
	}
}

// snapshotOp takes, reads through or closes a snapshot.
func (r *metaRun) snapshotOp(op metaOp) {
	db, cf := r.db, r.cf
	k := []byte(op.key)
	switch op.kind {
	case "snapshot":
		if s := r.snaps[op.snap]; s != nil {
			s.Close()
		}
		r.snaps[op.snap] = db.NewSnapshot()
	case "snapget":
		s := r.snaps[op.snap]
		if s == nil {
			return
		}
		var got []byte
		var err error
		if cf != nil {
			got, err = s.GetCF(cf, k)
		} else {
			got, err = s.Get(k)
		}
		r.out = append(r.out, fmt.Sprintf("snap%d get %s = %s", op.snap, op.key, readResult(got, err)))
	case "snapiter":
		s := r.snaps[op.snap]
		if s == nil {
			return
		}
		var it *Iterator
		if cf != nil {
			it = s.NewIterCF(cf, nil)
		} else {
			it = s.NewIter(nil)
		}
		r.out = append(r.out, fmt.Sprintf("snap%d iter %s", op.snap, scanIter(it, op.value)))
	case "snapclose":
		if s := r.snaps[op.snap]; s != nil {
			s.Close()
			r.snaps[op.snap] = nil
		}
	}
}

// maintain runs a flush, compaction, reopen or wait.
func (r *metaRun) maintain(op metaOp) error {
	db, cf := r.db, r.cf
	switch op.kind {
	case "flush":
		return db.Flush()
	case "compact":
		var lo, hi []byte
		if op.key != "" {
			lo, hi = []byte(op.key), []byte(op.hi)
		}
		if cf != nil {
			return cf.Compact(lo, hi)
		}
		return db.Compact(lo, hi)
	case "reopen":
		r.closeSnaps()
		if err := db.CheckInvariants(false); err != nil {
			return err
		}
		r.account()
		if err := db.Close(); err != nil {
			return err
		}
		r.db = nil
		return r.open()
	case "wait":
		db.mu.Lock()
		for db.compact.running > 0 || db.flush.running {
			db.mu.cond.Wait()
		}
		db.mu.Unlock()
	}
	return nil
}
