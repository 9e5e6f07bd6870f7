package sketchcol

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestStoreCrashBlindIngestion crashes blind bulk ingestion at every
// durability event of the file system (sampled: see takeClone), with
// every kind of loss of unsynced data, and checks each crash state after
// recovery:
//
//   - the sketches are exactly those of a prefix of the acknowledged
//     batches, the same prefix for every key (HLL registers, Bloom and
//     cuckoo bits and counts — compared as canonical bytes), never a hole
//     or half a batch, and the prefix includes every batch acknowledged
//     with Sync (and every one before it);
//   - stated directly: every item of a Sync-acknowledged Bloom add
//     exists (no false negative), and every HLL register is at least what
//     the Sync-acknowledged adds put there.
//
// Batches carry PFAdd, BFAdd and CFAdd operands over small memtables, so
// flushes and compactions (folding and collapsing operands) are crashed
// too.
func TestStoreCrashBlindIngestion(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	nOps := 300
	if raceEnabled || testing.Short() {
		nOps = 150
	}
	hllKeys, bloomKeys, cuckooKeys := []string{"h0", "h1"}, []string{"b0", "b1"}, []string{"c0"}
	allKeys := append(append(append([]string(nil), hllKeys...), bloomKeys...), cuckooKeys...)
	allKeys = append(allKeys, crashCMSTopKKeys...)
	in := newBlindIngestion(seed, allKeys)

	in.fs.SetDurabilityHook(in.hook)
	dbOpts := &sieve.Options{FS: in.fs, MemTableSize: 64 << 10, L0CompactionTrigger: 2}
	db, err := sieve.Open("/db", dbOpts)
	require.NoError(t, err)
	s, err := Open(db)
	require.NoError(t, err)
	for i := range nOps {
		in.batch(t, s, rng, i)
	}
	in.fs.SetDurabilityHook(nil)
	require.NoError(t, db.Close())
	t.Logf("%d batches, %d durability events, %d crash states", len(in.ops), in.events, len(in.points))

	for _, pt := range in.points {
		in.checkPoint(t, pt)
	}
}

// blindBatch is one batch of TestStoreCrashBlindIngestion: the Bloom items
// and HLL elements it added, by key.
type blindBatch struct {
	bloomItems map[string][][]byte
	hllElems   map[string][][]byte
	sync       bool
}

// blindIngestion is TestStoreCrashBlindIngestion's workload, its model and
// its crash points.
type blindIngestion struct {
	seed    int64
	allKeys []string
	modes   []vfs.UnsyncedMode
	fs      *vfs.MemFS

	// The model: the state after each prefix of the batches, as one hash
	// of each key's canonical bytes (0: missing).
	model  storeModel
	prefix []map[string]uint64

	// mu guards what the durability hook shares with the workload.
	mu                          sync.Mutex
	ops                         []blindBatch
	ackedSync, inFlight, events int
	points                      []crashPoint
}

func newBlindIngestion(seed int64, allKeys []string) *blindIngestion {
	in := &blindIngestion{
		seed:    seed,
		allKeys: allKeys,
		modes:   []vfs.UnsyncedMode{vfs.DropUnsynced, vfs.KeepUnsyncedPrefix, vfs.KeepUnsyncedSectors, vfs.ZeroUnsynced, vfs.GarbageUnsynced},
		fs:      vfs.NewMem(),
		model:   storeModel{},
	}
	in.prefix = []map[string]uint64{in.model.hashes(allKeys)}
	return in
}

// hook is the durability hook: a crash clone at the sampled events, with
// what had been acknowledged and submitted by then.
func (in *blindIngestion) hook(op vfs.Op, name string) {
	in.mu.Lock()
	in.events++
	ev, acked := in.events, in.ackedSync
	in.mu.Unlock()
	if !takeClone(op, ev) {
		return
	}
	mode := in.modes[ev%len(in.modes)]
	clone := in.fs.CrashClone(vfs.CrashOptions{Unsynced: mode, KeepUnsyncedFraction: 0.5, Seed: uint64(in.seed) + uint64(ev)})
	in.mu.Lock()
	in.points = append(in.points, crashPoint{fs: clone, event: fmt.Sprintf("%s %s (%s)", op, name, mode), ackedSync: acked, inFlight: in.inFlight})
	in.mu.Unlock()
}

// batch commits the i-th batch: blind PFAdd, BFAdd and CFAdd operands on
// one to four random keys, sometimes with Sync, applied to the model too.
func (in *blindIngestion) batch(t *testing.T, s *Store, rng *rand.Rand, i int) {
	t.Helper()
	op := blindBatch{bloomItems: map[string][][]byte{}, hllElems: map[string][][]byte{}, sync: rng.IntN(6) == 0}
	b := s.NewBatch()
	if i == 0 {
		in.reserveCMSTopK(t, b)
	}
	for range 1 + rng.IntN(4) {
		key := in.allKeys[rng.IntN(len(in.allKeys))]
		var its [][]byte
		for range 1 + rng.IntN(20) {
			its = append(its, fmt.Appendf(nil, "op%d-%d", i, rng.IntN(1<<20)))
		}
		switch key[0] {
		case 'h':
			require.NoError(t, b.PFAdd(k(key), its...))
			op.hllElems[key] = append(op.hllElems[key], its...)
		case 'b':
			require.NoError(t, b.BFAdd(k(key), its...))
			op.bloomItems[key] = append(op.bloomItems[key], its...)
		case 'm', 't':
			addCMSTopK(t, b, key, its)
		default:
			its = its[:min(len(its), 3)] // the cuckoo filter stays below its capacity
			require.NoError(t, b.CFAdd(k(key), its...))
		}
		in.model.applyBlind(t, key, its)
	}
	in.mu.Lock()
	in.ops = append(in.ops, op)
	in.inFlight = len(in.ops)
	in.mu.Unlock()
	wo := sieve.NoSync
	if op.sync {
		wo = sieve.Sync
	}
	require.NoError(t, b.Commit(wo))
	in.prefix = append(in.prefix, in.model.hashes(in.allKeys))
	if op.sync {
		in.mu.Lock()
		in.ackedSync = len(in.ops)
		in.mu.Unlock()
	}
}

// checkPoint recovers crash point pt and checks it: the sketches of a
// prefix of the batches, and what Sync acknowledged, stated directly.
func (in *blindIngestion) checkPoint(t *testing.T, pt crashPoint) {
	t.Helper()
	db, err := sieve.Open("/db", &sieve.Options{FS: pt.fs})
	require.NoError(t, err, "recovering the crash at %s", pt.event)
	s, err := Open(db)
	require.NoError(t, err)
	got := in.recoveredHashes(t, s, pt)
	p := -1
	for q := pt.inFlight; q >= pt.ackedSync; q-- {
		if mapsEqual(got, in.prefix[q]) {
			p = q
			break
		}
	}
	require.GreaterOrEqual(t, p, 0, "crash at %s: the recovered sketches are no prefix of batches %d..%d (%d acknowledged with Sync)",
		pt.event, pt.ackedSync, pt.inFlight, pt.ackedSync)
	in.checkSyncAcked(t, s, pt)
	require.NoError(t, db.Close())
}

// recoveredHashes is a hash of each key's canonical bytes as recovered (0:
// missing).
func (in *blindIngestion) recoveredHashes(t *testing.T, s *Store, pt crashPoint) map[string]uint64 {
	t.Helper()
	got := map[string]uint64{}
	for _, key := range in.allKeys {
		d, err := s.Dump(k(key))
		if err == nil {
			got[key] = xxhash.Sum64(d)
		} else {
			require.ErrorIs(t, err, sieve.ErrNotFound, "crash at %s: key %s", pt.event, key)
			got[key] = 0
		}
	}
	return got
}

// checkSyncAcked checks what the batches acknowledged with Sync put in
// directly: every Bloom item exists, every HLL register is at least theirs.
func (in *blindIngestion) checkSyncAcked(t *testing.T, s *Store, pt crashPoint) {
	t.Helper()
	want := map[string]*HLL{}
	for _, op := range in.ops[:pt.ackedSync] {
		for key, its := range op.bloomItems {
			ok, err := s.BFMExists(k(key), its...)
			require.NoError(t, err)
			require.NotContains(t, ok, false, "crash at %s: an acknowledged Bloom item is missing", pt.event)
		}
		for key, elems := range op.hllElems {
			if want[key] == nil {
				want[key] = NewHLL()
			}
			for _, e := range elems {
				want[key].Add(e)
			}
		}
	}
	for key, h := range want {
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		have, err := ParseHLL(d)
		require.NoError(t, err)
		for i := range hllRegisters {
			require.GreaterOrEqual(t, have.Register(i), h.Register(i), "crash at %s: key %s register %d", pt.event, key, i)
		}
	}
}

// crashPoint is a crash clone and what had been written when it was taken:
// batches [0, ackedSync) were acknowledged with Sync (or before one),
// batches from inFlight on had not been submitted.
type crashPoint struct {
	fs                  *vfs.MemFS
	event               string
	ackedSync, inFlight int
}

// takeClone samples the durability events to crash at: every sync,
// directory sync, rename, remove and create, and one write in four (WAL
// and table writes are most of the events, and similar).
func takeClone(op vfs.Op, ev int) bool {
	return op != vfs.OpWrite || ev%4 == 0
}

// applyBlind applies blind adds of its to key in the model, as their
// operands do when merged.
func (m storeModel) applyBlind(t *testing.T, key string, its [][]byte) {
	var err error
	switch key[0] {
	case 'h':
		h, _ := m[key].(*HLL)
		if h == nil {
			h = NewHLL()
			m[key] = h
		}
		for _, e := range its {
			h.Add(e)
		}
	case 'b':
		b, _ := m[key].(*PagedBloom)
		if b == nil {
			b, err = NewPagedBloom(DefaultBloomSpec())
			require.NoError(t, err)
			m[key] = b
		}
		for _, it := range its {
			_, _ = b.add(it, true)
		}
	case 'm', 't':
		m.applyBlindCMSTopK(key, its)
	default:
		c, _ := m[key].(*CuckooFilter)
		if c == nil {
			c, err = NewCuckooFilter(DefaultCuckooSpec())
			require.NoError(t, err)
			m[key] = c
		}
		for _, it := range its {
			applyCuckooRecord(c, cuckooRecord{op: cuckooAdd, hash: itemHash(it)})
		}
	}
}

// hashes returns a hash of each key's canonical bytes (0: missing).
func (m storeModel) hashes(keys []string) map[string]uint64 {
	out := map[string]uint64{}
	for _, key := range keys {
		if b := m.bytes(key); b != nil {
			out[key] = xxhash.Sum64(b)
		} else {
			out[key] = 0
		}
	}
	return out
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
