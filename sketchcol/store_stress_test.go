package sketchcol

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestStoreStress runs every kind of Store command concurrently on one DB
// whose memtables are tiny (64 KiB, the smallest sieve allows), whose
// tables are small and whose L0 compacts at two files, with
// MaxSuccessiveMerges 3, so that memtable rotations, flushes, compactions
// and memtable collapses run all the time underneath the commands. A
// maintenance goroutine adds Flush, Compact of random ranges of the sketch
// column family and of the default one, snapshot reads (read twice around
// a flush: the bytes must not change) and extra Stores opened on the DB;
// filler goroutines write the default and another column family all the
// while, and each round's sketchcol.Open runs under their load (the first
// creates the column family). Every round ends with Close and reopen. HLL
// and cuckoo keys live through all the rounds; each round has new Bloom
// keys. Values a read returned are overwritten afterwards (they are the
// caller's copies: were one DB memory, later reads would show it).
//
// An oracle checks every reply and every read:
//
//   - HLL: each key has a lower bound (registers of the elements whose
//     add was acknowledged, and of PFMERGE sources as acknowledged before
//     the merge started) and an upper bound (of every element whose add
//     started, a destination's including its sources'). A value read is a
//     canonical encoding with a correct cache, register-wise between the
//     lower bound taken before the read and the upper bound taken after.
//     A PFADD whose elements' registers the lower bound already holds
//     (an element acknowledged earlier) must reply 0. At the end of a
//     round, after a final PFMERGE of each destination from all its
//     sources, Dump equals the bytes of a model HLL built in memory from
//     the same elements, and PFCOUNT (one key, and the union) its count.
//   - Bloom: no false negative for an item acknowledged before the read
//     started; BF.ADD of such an item replies "not added"; of the
//     concurrent BF.ADDs (and BF.MADDs) of one new "contested" item by
//     every goroutine exactly one reports it added (the Store's serial
//     guarantee), or none if it was a false positive before its first
//     add (a few are: see stressBloomErrorRate). BF.CARD is at most the
//     items written and at least those less the false positives.
//   - Cuckoo: each goroutine owns its items, and the item pools have no
//     two items sharing a fingerprint and a bucket (distinctFingerprints),
//     so a count is exact where CF.COUNT's documented bound is only "at
//     least the adds not deleted": the owner's CF.COUNT equals its adds
//     minus its deletes, CF.EXISTS is count > 0, CF.ADDNX adds iff the count
//     is 0, CF.DEL succeeds iff it is positive. Other goroutines (and
//     snapshots) read an owner's item while it changes: the count must be
//     one the item had while the read ran (each item's state is one atomic
//     word: change count, count, pending change). At the end of a round
//     CF.INFO's items inserted and deleted are exact and nothing dropped.
//   - Around Close and reopen: every value read through Dump, and the
//     iterator over the column family, is byte for byte what it was before
//     the Close, the keys are exactly the expected ones, and the other
//     column families hold what the fillers and batches last wrote.
//
// Replay: SIEVE_SEED=<seed> (logged) fixes every goroutine's random
// choices (commands, fillers, maintenance), not the interleaving of the
// goroutines: the ops a goroutine picks are replayed, but which
// acknowledged items its samples find depends on what the others had done
// by then, and how many ops a round gets on the machine's speed, so a
// failure seen once may need several runs (-count) to come back. SIEVE_LONG=1 runs the long
// version (more goroutines than cores, minutes); SIEVE_STRESS_ROUNDS and
// SIEVE_STRESS_SECONDS (per round) override the shape.
func TestStoreStress(t *testing.T) {
	cfg := stressConfig()
	seed := testutil.Seed(t)
	s := newStress(t, cfg, seed)
	t.Cleanup(s.cleanup)
	for s.round = 1; s.round <= cfg.rounds; s.round++ {
		s.openDB() // after the first, a reopen: checked against the oracle
		s.startRound()
		s.runRound()
		s.endRound()
	}
	s.openDB() // the reopen after the last round is checked too
	s.stopFillers()
	require.NoError(t, s.db.Close())
	s.db = nil
	s.report()
}

// TestStoreStressOpenUnderLoad opens the sketch Store — creating its
// column family — on fresh DBs while two goroutines write the default and
// another column family as fast as they can over 64 KiB memtables, so
// that memtable rotations (new WALs) run during the Open. Open must
// return; a hang is reported with every goroutine's stack.
func TestStoreStressOpenUnderLoad(t *testing.T) {
	cfg := stressConfig()
	seed := testutil.Seed(t)
	var opened, writesDuringOpen int64
	for a := range cfg.openAttempts {
		fs := vfs.NewMem()
		db, err := sieve.Open("/db", &sieve.Options{FS: fs, MemTableSize: 64 << 10, L0CompactionTrigger: 2})
		require.NoError(t, err)
		other, err := db.OpenColumnFamily("other", nil)
		require.NoError(t, err)
		stop := make(chan struct{})
		var writes atomic.Int64
		var wg sync.WaitGroup
		for f := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(a<<8|f)))
				val := bytes.Repeat([]byte{'v'}, 4096)
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Appendf(nil, "w%d:%d", f, rng.IntN(512))
					var err error
					if f == 0 {
						err = db.Put(key, val[:512+rng.IntN(3584)], sieve.NoSync)
					} else {
						err = other.Put(key, val[:512+rng.IntN(3584)], sieve.NoSync)
					}
					if err != nil {
						t.Errorf("attempt %d: filler write: %v", a, err)
						return
					}
					writes.Add(1)
				}
			}()
		}
		for writes.Load() < 32 {
			time.Sleep(100 * time.Microsecond)
		}
		before := writes.Load()
		st := openStoreWithin(t, db, openWatchdog, fmt.Sprintf("attempt %d of TestStoreStressOpenUnderLoad (seed %d)", a, seed))
		writesDuringOpen += writes.Load() - before
		opened++
		close(stop)
		wg.Wait()
		_, err = st.PFAdd(k("h"), k("x"))
		require.NoError(t, err)
		n, err := st.PFCount(k("h"))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.NoError(t, db.Close())
	}
	t.Logf("%d sketch Stores opened (column family created) under write load; %d writes acknowledged while Open ran", opened, writesDuringOpen)
}

// openWatchdog bounds a Store Open under load: a deadlock never returns,
// while a slow Open (the race detector on a loaded 2-core machine, with
// the fillers' flushes and compactions) may take seconds.
const openWatchdog = time.Minute

// openStoreWithin opens the Store on db, failing the test with every
// goroutine's stack (in a file, named in the failure) when Open does not
// return within d: the symptom of a deadlock in OpenColumnFamily.
func openStoreWithin(t *testing.T, db *sieve.DB, d time.Duration, what string) *Store {
	t.Helper()
	type result struct {
		st  *Store
		err error
	}
	ch := make(chan result, 1)
	go func() {
		st, err := Open(db)
		ch <- result{st, err}
	}()
	select {
	case r := <-ch:
		require.NoError(t, r.err, what)
		return r.st
	case <-time.After(d):
		t.Fatalf("sketchcol.Open did not return within %v while other column families were written (%s): a deadlock? %s",
			d, what, dumpStacks(t, "open"))
		return nil
	}
}

// dumpStacks writes every goroutine's stack to a file and returns where.
func dumpStacks(t *testing.T, what string) string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	path := filepath.Join(os.TempDir(), fmt.Sprintf("sieve-stress-%s-%d.stacks", what, time.Now().UnixNano()))
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Logf("writing the goroutine stacks: %v", err)
		head := buf[:min(len(buf), 16<<10)]
		return "goroutine stacks (truncated):\n" + string(head)
	}
	return "goroutine stacks in " + path
}

// stressBloomErrorRate is the Bloom keys' error rate. The rate measured is
// higher, about 1e-5 (TestBloomLowErrorRateFPR: a floor of about
// 2/(m·k·ln 2) per sub-filter), so a few contested items may be false
// positives, which legitimately gives them no "added" at all; the lower
// the rate asked for, the lower that floor.
const stressBloomErrorRate = 1e-9

// stressCfg is the shape of a TestStoreStress run.
type stressCfg struct {
	name         string
	goroutines   int           // command goroutines
	fillers      int           // goroutines writing the other column families
	rounds       int           // each ends with Close and reopen
	roundDur     time.Duration // a round's commands stop at this
	maxOps       int           // ... or after this many per goroutine
	cuckooPool   int           // items each goroutine owns per cuckoo key
	contested    int           // contested items per Bloom key per round
	openAttempts int           // TestStoreStressOpenUnderLoad's fresh DBs
	watchdog     time.Duration // beyond roundDur: a round not done by then hangs
}

func stressConfig() stressCfg {
	c := stressCfg{name: "default", goroutines: 8, fillers: 1, rounds: 3, roundDur: 2500 * time.Millisecond, maxOps: 5000,
		cuckooPool: 16, contested: 48, openAttempts: 100, watchdog: 2 * time.Minute}
	switch {
	case os.Getenv("SIEVE_LONG") != "":
		c = stressCfg{name: "long", goroutines: max(16, 4*runtime.GOMAXPROCS(0)), fillers: 2, rounds: 12, roundDur: 20 * time.Second,
			maxOps: math.MaxInt, cuckooPool: 16, contested: 128, openAttempts: 1000, watchdog: 3 * time.Minute}
	case testing.Short() || raceEnabled:
		c = stressCfg{name: "short", goroutines: 6, fillers: 1, rounds: 2, roundDur: 2 * time.Second, maxOps: 1500,
			cuckooPool: 12, contested: 32, openAttempts: 30, watchdog: 2 * time.Minute}
	}
	if v := stressEnvInt("SIEVE_STRESS_ROUNDS"); v > 0 {
		c.rounds = v
	}
	if v := stressEnvInt("SIEVE_STRESS_SECONDS"); v > 0 {
		c.roundDur, c.maxOps = time.Duration(v)*time.Second, math.MaxInt
	}
	return c
}

func stressEnvInt(name string) int {
	v, _ := strconv.Atoi(os.Getenv(name))
	return v
}

// stressOptions: everything small, so that the engine's background work
// never stops.
func stressOptions(fs vfs.FS) *sieve.Options {
	return &sieve.Options{
		FS:                       fs,
		MemTableSize:             64 << 10, // the minimum
		MaxImmutableMemTables:    2,
		BlockSize:                1 << 10,
		BlockCacheSize:           256 << 10,
		TargetFileSize:           16 << 10,
		LBaseMaxBytes:            128 << 10,
		L0CompactionTrigger:      2,
		L0StopWritesTrigger:      8,
		MaxConcurrentCompactions: 2,
		MaxSubcompactions:        2,
		MaxSuccessiveMerges:      3,
	}
}

// stress is one TestStoreStress run.
type stress struct {
	t    *testing.T
	cfg  stressCfg
	seed int64
	opts *sieve.Options

	round int
	db    *sieve.DB
	st    *Store
	other *sieve.ColumnFamily

	hll        []*hllModel
	hllSrc     []*hllModel
	hllDst     []*hllModel
	bloom      []*bloomModel // every round's
	roundBloom []*bloomModel // this round's: the ones written
	cuckoo     []*cuckooModel
	ct         *cmsTopKStress // Count-Min and Top-K (cms_topk_stress_test.go)
	allKeys    [][]byte       // every key the commands write, for Compact ranges
	workers    []*stressWorker
	fills      []*fillModel
	dumps      map[string][]byte // Dump of every key before the last Close

	fillStop chan struct{}
	fillWG   sync.WaitGroup
	fillRate atomic.Bool // throttle the fillers (off while a Store opens)
	fillN    atomic.Int64

	ops, reads, unchecked    atomic.Int64
	bloomFalsePositives      atomic.Int64
	contestedNone            atomic.Int64
	nViolations              atomic.Int64
	flushes, compactions     int64
	moves, stalls            int64
	manualFlushes, manCompac atomic.Int64
	snapshots, extraStores   atomic.Int64
	reopens, storeOpens      int
	writesDuringOpen         int64
}

// violation records a failed check (the first few fail the test with
// their message, all are counted).
func (s *stress) violation(format string, args ...any) {
	if n := s.nViolations.Add(1); n <= 25 {
		s.t.Errorf("round %d: violation: %s", s.round, fmt.Sprintf(format, args...))
	}
}

func newStress(t *testing.T, cfg stressCfg, seed int64) *stress {
	s := &stress{t: t, cfg: cfg, seed: seed, opts: stressOptions(vfs.NewMem())}
	t.Logf("stress %s: %d goroutines, %d fillers, %d rounds of %v (or %d ops per goroutine), GOMAXPROCS %d",
		cfg.name, cfg.goroutines, cfg.fillers, cfg.rounds, cfg.roundDur, cfg.maxOps, runtime.GOMAXPROCS(0))
	// HLL: four sources; two destinations, each PFMERGEd from some of
	// them, and PFADDed to directly.
	for i := range 4 {
		s.hllSrc = append(s.hllSrc, &hllModel{key: fmt.Appendf(nil, "hll:src:%d", i)})
	}
	// ... and one that stays sparse: at most 400 elements.
	s.hllSrc = append(s.hllSrc, &hllModel{key: []byte("hll:sparse"), limit: 400})
	dstSrcs := [][]int{{0, 1}, {1, 2, 3}}
	for i, srcs := range dstSrcs {
		d := &hllModel{key: fmt.Appendf(nil, "hll:dst:%d", i)}
		for _, j := range srcs {
			d.srcs = append(d.srcs, s.hllSrc[j])
			s.hllSrc[j].dsts = append(s.hllSrc[j].dsts, d)
		}
		s.hllDst = append(s.hllDst, d)
	}
	s.hll = append(append([]*hllModel(nil), s.hllSrc...), s.hllDst...)
	// Cuckoo: three keys; each goroutine owns cuckooPool items of each,
	// drawn from a pool without fingerprint clashes.
	capacity := int64(512)
	for capacity < 4*int64(cfg.goroutines*cfg.cuckooPool) {
		capacity *= 2
	}
	for j := range 3 {
		m := &cuckooModel{key: fmt.Appendf(nil, "cf:%d", j), capacity: capacity}
		var cand [][]byte
		owner := map[string]int{}
		for g := range cfg.goroutines {
			for i := range cfg.cuckooPool + cfg.cuckooPool/4 + 2 {
				it := fmt.Appendf(nil, "cf%d:g%d:%d", j, g, i)
				cand = append(cand, it)
				owner[string(it)] = g
			}
		}
		m.items = make([][][]byte, cfg.goroutines)
		for _, it := range distinctFingerprints(cand, capacity, DefaultCuckooSpec().BucketSize) {
			if g := owner[string(it)]; len(m.items[g]) < cfg.cuckooPool {
				m.items[g] = append(m.items[g], it)
			}
		}
		m.state = make([][]atomic.Uint64, cfg.goroutines)
		for g := range m.state {
			require.NotEmpty(t, m.items[g])
			m.state[g] = make([]atomic.Uint64, len(m.items[g]))
		}
		s.cuckoo = append(s.cuckoo, m)
	}
	s.ct = newCMSTopKStress(cfg.goroutines)
	for g := range cfg.goroutines {
		s.workers = append(s.workers, &stressWorker{s: s, g: g, puts: map[string][]byte{}})
	}
	for range cfg.fillers {
		s.fills = append(s.fills, &fillModel{def: map[string][]byte{}, other: map[string][]byte{}})
	}
	return s
}

// cleanup stops the fillers and closes the DB if a failure left them: not
// waiting long, as a deadlocked DB never closes.
func (s *stress) cleanup() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.stopFillers()
		if s.db != nil {
			_ = s.db.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// openDB opens (or reopens) the DB, checks what the other column families
// hold, starts the fillers, opens the Store under their load and, after a
// reopen, checks the Store's values against the oracle and the bytes
// before the Close.
func (s *stress) openDB() {
	t := s.t
	db, err := sieve.Open("/db", s.opts)
	require.NoError(t, err)
	s.db = db
	s.other, err = db.OpenColumnFamily("other", nil)
	require.NoError(t, err)
	if s.dumps != nil {
		s.reopens++
		s.verifyFills()
	}
	s.startFillers()
	for n := s.fillN.Load(); s.fillN.Load() < n+32; {
		time.Sleep(100 * time.Microsecond)
	}
	before := s.fillN.Load()
	s.st = openStoreWithin(t, db, openWatchdog, fmt.Sprintf("round %d of TestStoreStress (seed %d)", s.round, s.seed))
	s.writesDuringOpen += s.fillN.Load() - before
	s.storeOpens++
	s.fillRate.Store(true)
	if s.dumps != nil {
		s.verify(fmt.Sprintf("after reopen %d", s.reopens))
		s.compareDumps()
	}
}

// startRound reserves the round's Bloom keys (and, first, the cuckoo keys).
func (s *stress) startRound() {
	t := s.t
	if s.round == 1 {
		for _, m := range s.cuckoo {
			require.NoError(t, s.st.CFReserve(m.key, m.capacity, nil))
		}
		s.ct.reserve(s)
	}
	s.roundBloom = nil
	for j := range 2 {
		m := &bloomModel{key: fmt.Appendf(nil, "bf:r%d:%d", s.round, j), round: s.round}
		m.contested = items(fmt.Sprintf("contested:r%d:%d", s.round, j), s.cfg.contested)
		m.calls = make([]atomic.Int32, len(m.contested))
		m.trues = make([]atomic.Int32, len(m.contested))
		m.ackedFlag = make([]atomic.Bool, len(m.contested))
		capacity := int64(200 + s.cfg.contested + 100*j)
		require.NoError(t, s.st.BFReserve(m.key, stressBloomErrorRate, capacity, nil))
		s.roundBloom = append(s.roundBloom, m)
		s.bloom = append(s.bloom, m)
	}
	s.allKeys = nil
	for _, m := range s.hll {
		s.allKeys = append(s.allKeys, m.key)
	}
	for _, m := range s.bloom {
		s.allKeys = append(s.allKeys, m.key)
	}
	for _, m := range s.cuckoo {
		s.allKeys = append(s.allKeys, m.key)
	}
	s.allKeys = append(s.allKeys, s.ct.keys()...)
}

// runRound runs the command goroutines and the maintenance goroutine.
func (s *stress) runRound() {
	deadline := time.Now().Add(s.cfg.roundDur)
	var wg sync.WaitGroup
	for _, w := range s.workers {
		w.rng = rand.New(rand.NewPCG(uint64(s.seed), uint64(s.round)<<16|uint64(w.g)))
		w.contestNext = make([]int, len(s.roundBloom))
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(deadline)
		}()
	}
	stop := make(chan struct{})
	var mwg sync.WaitGroup
	mwg.Add(1)
	go func() {
		defer mwg.Done()
		s.maintain(stop, rand.New(rand.NewPCG(uint64(s.seed), uint64(s.round)<<16|0xffff)))
	}()
	s.waitOrHang(&wg, "the command goroutines")
	close(stop)
	s.waitOrHang(&mwg, "the maintenance goroutine")
}

// waitOrHang waits for wg, failing with every goroutine's stack if it
// takes longer than the round plus the watchdog.
func (s *stress) waitOrHang(wg *sync.WaitGroup, what string) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(s.cfg.roundDur + s.cfg.watchdog):
		s.t.Fatalf("round %d: %s did not finish %v after the round's end: a hang? (seed %d) %s",
			s.round, what, s.cfg.watchdog, s.seed, dumpStacks(s.t, "round"))
	}
}

// endRound completes the PFMERGEs, checks everything against the oracle
// while nothing runs, records every value, and closes the DB.
func (s *stress) endRound() {
	t := s.t
	for _, d := range s.hllDst {
		lo := unionLower(d.srcs)
		require.NoError(t, s.st.PFMerge(d.key, keysOf(d.srcs)...))
		d.mergeAcked(lo)
	}
	s.stopFillers()
	s.verify(fmt.Sprintf("end of round %d", s.round))
	s.verifyFills()
	require.NoError(t, s.db.CheckInvariants(true))
	s.dumps = map[string][]byte{}
	for _, key := range s.allKeys {
		v, err := s.st.Dump(key)
		if errors.Is(err, sieve.ErrNotFound) {
			continue
		}
		require.NoError(t, err)
		s.dumps[string(key)] = v
	}
	s.checkIterator("before Close")
	t.Logf("round %d: %s", s.round, s.shapes())
	require.NoError(t, s.db.Close())
	m := s.db.Metrics()
	s.flushes += m.Flush.Count
	s.compactions += m.Compaction.Count
	s.moves += m.Compaction.Moves
	s.stalls += m.Stall.Count
	t.Logf("round %d: %d ops so far; this DB: %d flushes, %d compactions (%d moves), %d stalls",
		s.round, s.ops.Load(), m.Flush.Count, m.Compaction.Count, m.Compaction.Moves, m.Stall.Count)
	s.db = nil
}

// shapes describes the values, to show what the round exercised.
func (s *stress) shapes() string {
	dense := 0
	for _, m := range s.hll {
		if v := s.dumps[string(m.key)]; len(v) > 4 && v[4] == 0 {
			dense++
		}
	}
	out := fmt.Sprintf("HLL %d of %d dense; Bloom sub-filters", dense, len(s.hll))
	for _, m := range s.roundBloom {
		info, err := s.st.BFInfo(m.key)
		if err == nil {
			out += fmt.Sprintf(" %d (%d items, %d bytes)", info.Filters, info.ItemsInserted, info.Size)
		}
	}
	out += "; cuckoo sub-filters"
	for _, m := range s.cuckoo {
		info, err := s.st.CFInfo(m.key)
		if err == nil {
			out += fmt.Sprintf(" %d (%d items)", info.NumFilters, info.NumItemsInserted)
		}
	}
	return out
}

func (s *stress) report() {
	t := s.t
	t.Logf("stress %s: %d goroutines (+%d fillers, 1 maintenance), %d rounds, %d ops, %d reads checked (%d cross-goroutine counts unchecked: window too wide), "+
		"%d flushes, %d compactions (+%d moves), %d stalls, %d manual flushes, %d manual compactions, %d snapshots, %d extra Stores, "+
		"%d reopens, %d Store opens under load (%d writes during them), %d Bloom false positives on new items, %d contested items added by none, %d violations",
		s.cfg.name, s.cfg.goroutines, s.cfg.fillers, s.cfg.rounds, s.ops.Load(), s.reads.Load(), s.unchecked.Load(),
		s.flushes, s.compactions, s.moves, s.stalls, s.manualFlushes.Load(), s.manCompac.Load(), s.snapshots.Load(), s.extraStores.Load(),
		s.reopens, s.storeOpens, s.writesDuringOpen, s.bloomFalsePositives.Load(), s.contestedNone.Load(), s.nViolations.Load())
	require.Positive(t, s.flushes, "no flush ran")
	require.Positive(t, s.compactions, "no compaction ran")
	if n := s.nViolations.Load(); n > 0 {
		t.Errorf("%d violations; replay the goroutines' choices with SIEVE_SEED=%d go test -run '^%s$' ./sketchcol/ (the interleaving is not replayed)",
			n, s.seed, t.Name())
	}
}

// --- fillers: the load on the other column families ---

// fillModel is what one filler last wrote to each of its keys.
type fillModel struct {
	def, other map[string][]byte
}

func (s *stress) startFillers() {
	s.fillStop = make(chan struct{})
	s.fillRate.Store(false)
	for f, m := range s.fills {
		s.fillWG.Add(1)
		go func() {
			defer s.fillWG.Done()
			s.filler(f, m, s.fillStop)
		}()
	}
}

func (s *stress) stopFillers() {
	if s.fillStop != nil {
		close(s.fillStop)
		s.fillWG.Wait()
		s.fillStop = nil
	}
}

func (s *stress) filler(f int, m *fillModel, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(s.seed), uint64(1<<32|s.round<<8|f)))
	db, other := s.db, s.other
	pad := bytes.Repeat([]byte{'f'}, 2048)
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("fill:%d:%03d", f, rng.IntN(256))
		val := fmt.Appendf(nil, "r%d:n%d:", s.round, n)
		val = append(val, pad[:rng.IntN(len(pad))]...)
		toOther := rng.IntN(2) == 0
		var err error
		if toOther {
			err = other.Put([]byte(key), val, sieve.NoSync)
		} else {
			err = db.Put([]byte(key), val, sieve.NoSync)
		}
		if err != nil {
			s.violation("filler %d: Put: %v", f, err)
			return
		}
		if toOther {
			m.other[key] = val
		} else {
			m.def[key] = val
		}
		s.fillN.Add(1)
		if s.fillRate.Load() {
			time.Sleep(time.Millisecond)
		}
	}
}

// verifyFills checks the other column families hold the fillers' and the
// batches' last writes. REQUIRES: the fillers stopped.
func (s *stress) verifyFills() {
	check := func(get func([]byte) ([]byte, error), key string, want []byte) {
		got, err := get([]byte(key))
		if err != nil || !bytes.Equal(got, want) {
			s.violation("other column families: key %q: got %.40q, %v; want %.40q", key, got, err, want)
		}
	}
	for _, m := range s.fills {
		for key, v := range m.def {
			check(s.db.Get, key, v)
		}
		for key, v := range m.other {
			check(s.other.Get, key, v)
		}
	}
	for _, w := range s.workers {
		for key, v := range w.puts {
			check(s.other.Get, key, v)
		}
	}
}

// --- HLL oracle ---

// hllModel bounds one HLL key.
type hllModel struct {
	key      []byte
	srcs     []*hllModel // a destination's: the keys PFMERGE reads into it
	dsts     []*hllModel // a source's: the destinations it may be merged into
	mu       sync.Mutex
	acked    HLL      // lower bound
	started  HLL      // upper bound
	own      [][]byte // every element a command added to this key itself
	ackedOwn [][]byte // those acknowledged, for re-adds
	limit    int      // if > 0, at most this many elements (own), to stay sparse
}

// room returns how many new elements m may take, at most n.
func (m *hllModel) room(n int) int {
	if m.limit == 0 {
		return n
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(0, min(n, m.limit-len(m.own)))
}

// start records elements about to be written to m (and so maybe, through
// a PFMERGE, to its destinations).
func (m *hllModel) start(elems [][]byte) {
	m.mu.Lock()
	for _, e := range elems {
		m.started.Add(e)
	}
	m.own = append(m.own, elems...)
	m.mu.Unlock()
	for _, d := range m.dsts {
		d.mu.Lock()
		for _, e := range elems {
			d.started.Add(e)
		}
		d.mu.Unlock()
	}
}

func (m *hllModel) ack(elems [][]byte) {
	m.mu.Lock()
	for _, e := range elems {
		m.acked.Add(e)
	}
	m.ackedOwn = append(m.ackedOwn, elems...)
	m.mu.Unlock()
}

func (m *hllModel) mergeAcked(h *HLL) {
	m.mu.Lock()
	m.acked.Merge(h)
	m.mu.Unlock()
}

func (m *hllModel) lower() *HLL {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acked.Clone()
}

func (m *hllModel) upper() *HLL {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started.Clone()
}

func (m *hllModel) sampleAcked(rng *rand.Rand, n int) [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ackedOwn) == 0 {
		return nil
	}
	out := make([][]byte, 0, n)
	for range n {
		out = append(out, m.ackedOwn[rng.IntN(len(m.ackedOwn))])
	}
	return out
}

// model is the HLL of every element added to m, directly or (for a
// destination) to its sources: what m holds once every add is done and a
// PFMERGE from all its sources followed.
func (m *hllModel) model() *HLL {
	h := NewHLL()
	for _, mm := range append([]*hllModel{m}, m.srcs...) {
		mm.mu.Lock()
		for _, e := range mm.own {
			h.Add(e)
		}
		mm.mu.Unlock()
	}
	return h
}

func unionLower(ms []*hllModel) *HLL {
	h := NewHLL()
	for _, m := range ms {
		h.Merge(m.lower())
	}
	return h
}

func keysOf(ms []*hllModel) [][]byte {
	out := make([][]byte, len(ms))
	for i, m := range ms {
		out[i] = m.key
	}
	return out
}

// dominated reports whether lo's registers already hold every element's
// rank: a PFADD of them cannot change a register.
func dominated(elems [][]byte, lo *HLL) bool {
	for _, e := range elems {
		if i, r := hllPosition(e); lo.reg[i] < r {
			return false
		}
	}
	return len(elems) > 0
}

// checkHLL checks a value read of m's key (nil: missing) against the lower
// bound taken before the read and the upper bound taken after.
func (s *stress) checkHLL(what string, m *hllModel, v []byte, lo, hi *HLL) {
	s.reads.Add(1)
	if v == nil {
		for i := range hllRegisters {
			if lo.reg[i] > 0 {
				s.violation("%s: HLL %q missing, but register %d was acknowledged at %d", what, m.key, i, lo.reg[i])
				return
			}
		}
		return
	}
	h, err := ParseHLL(v)
	if err != nil {
		s.violation("%s: HLL %q: %v", what, m.key, err)
		return
	}
	canon := &HLL{reg: h.reg}
	if c := canon.Bytes(); !bytes.Equal(c, v) {
		s.violation("%s: HLL %q: value of %d bytes is not the canonical encoding of its registers with a valid cache (%d bytes)", what, m.key, len(v), len(c))
	}
	for i := range hllRegisters {
		switch {
		case h.reg[i] < lo.reg[i]:
			s.violation("%s: HLL %q: register %d is %d, below the acknowledged %d (a lost add)", what, m.key, i, h.reg[i], lo.reg[i])
			return
		case h.reg[i] > hi.reg[i]:
			s.violation("%s: HLL %q: register %d is %d, above any add started (%d)", what, m.key, i, h.reg[i], hi.reg[i])
			return
		}
	}
}

// --- Bloom oracle ---

// bloomModel is one Bloom key: the items acknowledged, and the contested
// items every goroutine BF.ADDs.
type bloomModel struct {
	key       []byte
	round     int
	mu        sync.Mutex
	acked     [][]byte
	written   atomic.Int64 // distinct fresh items sent (contested ones apart)
	fp        atomic.Int64 // BF.ADDs of fresh items answered "present"
	contested [][]byte
	calls     []atomic.Int32 // BF.ADDs of each contested item returned
	trues     []atomic.Int32 // ... answering "added"
	ackedFlag []atomic.Bool
}

func (m *bloomModel) ack(items ...[]byte) {
	m.mu.Lock()
	m.acked = append(m.acked, items...)
	m.mu.Unlock()
}

func (m *bloomModel) ackContested(i int) {
	if m.ackedFlag[i].CompareAndSwap(false, true) {
		m.ack(m.contested[i])
	}
}

func (m *bloomModel) sampleAcked(rng *rand.Rand, n int) [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.acked) == 0 {
		return nil
	}
	out := make([][]byte, 0, n)
	for range n {
		out = append(out, m.acked[rng.IntN(len(m.acked))])
	}
	return out
}

func (m *bloomModel) allAcked() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.acked...)
}

// checkBloom checks answers to BF.EXISTS of items acknowledged before the
// read: all present.
func (s *stress) checkBloom(what string, m *bloomModel, items [][]byte, got []bool) {
	s.reads.Add(1)
	if len(got) != len(items) {
		s.violation("%s: Bloom %q: %d answers for %d items", what, m.key, len(got), len(items))
		return
	}
	for i, ok := range got {
		if !ok {
			s.violation("%s: Bloom %q: false negative for %q, acknowledged before the read", what, m.key, items[i])
			return
		}
	}
}

// --- cuckoo oracle ---

// cuckooModel is one cuckoo key. Item i of owner g has the state
// state[g][i]: one word of (changes completed, count, pending change),
// written by the owner only.
type cuckooModel struct {
	key      []byte
	capacity int64
	items    [][][]byte
	state    [][]atomic.Uint64
	deleted  atomic.Int64 // successful CF.DELs
}

func cpack(seq uint32, count, pending int) uint64 {
	return uint64(seq)<<32 | uint64(uint16(count))<<8 | uint64(uint8(int8(pending)))
}

func cunpack(x uint64) (seq uint32, count, pending int) {
	return uint32(x >> 32), int(uint16(x >> 8)), int(int8(uint8(x)))
}

// cprobe is a read of another goroutine's item: its state before the read.
type cprobe struct {
	item   []byte
	state  *atomic.Uint64
	before uint64
}

func (m *cuckooModel) probes(rng *rand.Rand, n int) []cprobe {
	out := make([]cprobe, n)
	for j := range out {
		g := rng.IntN(len(m.items))
		i := rng.IntN(len(m.items[g]))
		out[j] = cprobe{item: m.items[g][i], state: &m.state[g][i]}
		out[j].before = out[j].state.Load()
	}
	return out
}

// allowed returns the counts an item may show to a read that ran between
// states b and a, or ok false when more than one change completed between
// them (the read is then not checked).
func allowed(b, a uint64) (counts [4]int, ok bool) {
	bs, bc, bp := cunpack(b)
	as, ac, ap := cunpack(a)
	if as-bs > 1 {
		return counts, false
	}
	return [4]int{bc, bc + bp, ac, ac + ap}, true
}

// checkCount checks a count read of probe p, whose state after the read
// is after. exists: the read was CF.EXISTS (got is 0 or 1).
func (s *stress) checkCount(what string, m *cuckooModel, p cprobe, after uint64, got int64, exists bool) {
	counts, ok := allowed(p.before, after)
	if !ok {
		s.unchecked.Add(1)
		return
	}
	s.reads.Add(1)
	for _, c := range counts {
		if (exists && (got > 0) == (c > 0)) || (!exists && got == int64(c)) {
			return
		}
	}
	cmd := "CF.COUNT"
	if exists {
		cmd = "CF.EXISTS"
	}
	s.violation("%s: cuckoo %q item %q: %s %d, but its count was one of %v while the read ran (states %x, %x)",
		what, m.key, p.item, cmd, got, counts, p.before, after)
}

// --- the command goroutines ---

type stressWorker struct {
	s           *stress
	g           int
	rng         *rand.Rand
	fresh       int
	contestNext []int             // next contested item per Bloom key of the round
	puts        map[string][]byte // what its batches last wrote to the other column family
}

func (w *stressWorker) run(deadline time.Time) {
	for n := 0; n < w.s.cfg.maxOps && time.Now().Before(deadline); n++ {
		switch r := w.rng.IntN(100); {
		case r < 30:
			w.hllOp()
		case r < 60:
			w.bloomOp()
		case r < 82:
			w.cuckooOp()
		case r < 90:
			w.cmsTopKOp()
		default:
			w.batchOp()
		}
		w.s.ops.Add(1)
	}
}

func (w *stressWorker) freshItems(kind string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		w.fresh++
		out[i] = fmt.Appendf(nil, "%s:g%d:r%d:%d", kind, w.g, w.s.round, w.fresh)
	}
	return out
}

func (w *stressWorker) where(cmd string) string {
	return fmt.Sprintf("goroutine %d %s", w.g, cmd)
}

func (w *stressWorker) hllOp() {
	s, rng := w.s, w.rng
	m := s.hll[rng.IntN(len(s.hll))]
	switch r := rng.IntN(100); {
	case r < 30:
		w.pfAddNew(m)
	case r < 45:
		w.pfAddAcked(m)
	case r < 60:
		w.pfAddBlind(m)
	case r < 75:
		w.hllDump(m)
	case r < 88:
		w.pfCount(m)
	default:
		w.pfMerge()
	}
}

// pfAddNew: PFADD of new elements, some with acknowledged ones.
func (w *stressWorker) pfAddNew(m *hllModel) {
	s, rng := w.s, w.rng
	elems := w.freshItems("h", m.room(1+rng.IntN(3)))
	all := append(m.sampleAcked(rng, rng.IntN(2)), elems...)
	lo := m.lower()
	m.start(elems)
	ok, err := s.st.PFAdd(m.key, all...)
	if err != nil {
		s.violation("%s: %v", w.where("PFADD"), err)
		return
	}
	if ok && dominated(all, lo) {
		s.violation("%s %q: replied 1, but every element's register already held its rank before the call", w.where("PFADD"), m.key)
	}
	m.ack(elems)
}

// pfAddAcked: PFADD of acknowledged elements: no register can change.
func (w *stressWorker) pfAddAcked(m *hllModel) {
	s, rng := w.s, w.rng
	old := m.sampleAcked(rng, 1+rng.IntN(3))
	if old == nil {
		return
	}
	lo := m.lower()
	if !dominated(old, lo) {
		s.violation("oracle: acknowledged elements of %q above the lower bound", m.key)
	}
	ok, err := s.st.PFAdd(m.key, old...)
	s.reads.Add(1)
	if err != nil || ok {
		s.violation("%s %q of %d acknowledged elements: replied %v, %v; want 0", w.where("PFADD"), m.key, len(old), ok, err)
	}
}

// pfAddBlind: PFAddBlind of new elements, sometimes many.
func (w *stressWorker) pfAddBlind(m *hllModel) {
	s, rng := w.s, w.rng
	n := 1 + rng.IntN(8)
	if rng.IntN(8) == 0 {
		n = 64 + rng.IntN(256) // push keys towards the dense encoding
	}
	elems := w.freshItems("h", m.room(n))
	if len(elems) == 0 {
		return
	}
	m.start(elems)
	if err := s.st.PFAddBlind(m.key, elems...); err != nil {
		s.violation("%s: %v", w.where("PFAddBlind"), err)
		return
	}
	m.ack(elems)
}

// hllDump: Dump, checked against the bounds.
func (w *stressWorker) hllDump(m *hllModel) {
	s := w.s
	lo := m.lower()
	v, err := s.st.Dump(m.key)
	hi := m.upper()
	if errors.Is(err, sieve.ErrNotFound) {
		v, err = nil, nil
	}
	if err != nil {
		s.violation("%s: %v", w.where("Dump"), err)
		return
	}
	s.checkHLL(w.where("Dump"), m, v, lo, hi)
	scribble(v)
}

// pfCount: PFCOUNT of one to three keys, the first m's.
func (w *stressWorker) pfCount(m *hllModel) {
	s, rng := w.s, w.rng
	keys := [][]byte{m.key}
	for range rng.IntN(3) {
		keys = append(keys, s.hll[rng.IntN(len(s.hll))].key)
	}
	n, err := s.st.PFCount(keys...)
	if err != nil || n < 0 {
		s.violation("%s: %d, %v", w.where("PFCOUNT"), n, err)
	}
}

// pfMerge: PFMERGE into a destination from some of its sources.
func (w *stressWorker) pfMerge() {
	s, rng := w.s, w.rng
	d := s.hllDst[rng.IntN(len(s.hllDst))]
	var srcs []*hllModel
	for _, src := range d.srcs {
		if rng.IntN(2) == 0 {
			srcs = append(srcs, src)
		}
	}
	if srcs == nil {
		srcs = d.srcs[:1]
	}
	lo := unionLower(srcs)
	if err := s.st.PFMerge(d.key, keysOf(srcs)...); err != nil {
		s.violation("%s: %v", w.where("PFMERGE"), err)
		return
	}
	d.mergeAcked(lo)
}

// contested returns the goroutine's next contested item of Bloom key j
// (all goroutines take them in the same order, so that they collide).
func (w *stressWorker) contested(j int) (int, bool) {
	m := w.s.roundBloom[j]
	i := w.contestNext[j]
	if i >= len(m.contested) {
		return 0, false
	}
	w.contestNext[j]++
	return i, true
}

func (w *stressWorker) bloomOp() {
	s, rng := w.s, w.rng
	j := rng.IntN(len(s.roundBloom))
	m := s.roundBloom[j]
	switch r := rng.IntN(100); {
	case r < 18:
		w.bloomAddNew(m)
	case r < 30:
		w.bloomAddAcked(m)
	case r < 46:
		w.bloomAddContested(j, m)
	case r < 56:
		w.bloomMAdd(j, m)
	case r < 66:
		w.bloomExists(m)
	case r < 76:
		w.bloomMExists(m)
	case r < 90:
		w.bloomAddBlind(m)
	default:
		w.bloomDump(m)
	}
}

// bloomAddNew: BF.ADD of a new item.
func (w *stressWorker) bloomAddNew(m *bloomModel) {
	s := w.s
	item := w.freshItems("b", 1)[0]
	m.written.Add(1)
	ok, err := s.st.BFAdd(m.key, item)
	if err != nil {
		s.violation("%s: %v", w.where("BF.ADD"), err)
		return
	}
	if !ok {
		m.fp.Add(1)
		s.bloomFalsePositives.Add(1)
	}
	m.ack(item)
}

// bloomAddAcked: BF.ADD of an acknowledged item: "not added".
func (w *stressWorker) bloomAddAcked(m *bloomModel) {
	s := w.s
	old := m.sampleAcked(w.rng, 1)
	if old == nil {
		return
	}
	ok, err := s.st.BFAdd(m.key, old[0])
	s.reads.Add(1)
	if err != nil || ok {
		s.violation("%s %q of %q, acknowledged before: replied %v, %v; want false", w.where("BF.ADD"), m.key, old[0], ok, err)
	}
}

// bloomAddContested: BF.ADD of a contested item of Bloom key j.
func (w *stressWorker) bloomAddContested(j int, m *bloomModel) {
	s := w.s
	i, ok := w.contested(j)
	if !ok {
		return
	}
	added, err := s.st.BFAdd(m.key, m.contested[i])
	if err != nil {
		s.violation("%s: %v", w.where("BF.ADD"), err)
		return
	}
	m.calls[i].Add(1)
	if added {
		m.trues[i].Add(1)
	}
	m.ackContested(i)
}

// bloomMAdd: BF.MADD mixing new, acknowledged and contested items of Bloom
// key j.
func (w *stressWorker) bloomMAdd(j int, m *bloomModel) {
	s, rng := w.s, w.rng
	fresh := w.freshItems("b", rng.IntN(3))
	old := m.sampleAcked(rng, rng.IntN(3))
	ci, hasC := -1, false
	if rng.IntN(2) == 0 {
		ci, hasC = w.contested(j)
	}
	all := madds(fresh, old, m, ci, hasC)
	if len(all) == 0 {
		return
	}
	rng.Shuffle(len(all), func(a, b int) { all[a], all[b] = all[b], all[a] })
	m.written.Add(int64(len(fresh)))
	res, err := s.st.BFMAdd(m.key, all...)
	if err != nil || len(res) != len(all) {
		s.violation("%s: %d answers for %d items, %v", w.where("BF.MADD"), len(res), len(all), err)
		return
	}
	w.checkMAdd(m, all, res, old, ci, hasC)
	if hasC {
		m.ackContested(ci)
	}
	m.ack(fresh...)
}

// madds are the items of one BF.MADD, each once: fresh, then old, then
// contested item ci if hasC.
func madds(fresh, old [][]byte, m *bloomModel, ci int, hasC bool) [][]byte {
	var all [][]byte
	seen := map[string]bool{}
	for _, it := range append(append([][]byte(nil), fresh...), old...) {
		if !seen[string(it)] {
			seen[string(it)] = true
			all = append(all, it)
		}
	}
	if hasC && !seen[string(m.contested[ci])] {
		all = append(all, m.contested[ci])
	}
	return all
}

// checkMAdd checks BF.MADD's replies res to items all: an acknowledged
// (old) item is never added; the contested item's and the new items'
// replies are counted.
func (w *stressWorker) checkMAdd(m *bloomModel, all [][]byte, res []bool, old [][]byte, ci int, hasC bool) {
	s := w.s
	oldSet := map[string]bool{}
	for _, it := range old {
		oldSet[string(it)] = true
	}
	for x, it := range all {
		switch {
		case hasC && bytes.Equal(it, m.contested[ci]):
			m.calls[ci].Add(1)
			if res[x] {
				m.trues[ci].Add(1)
			}
		case oldSet[string(it)]:
			s.reads.Add(1)
			if res[x] {
				s.violation("%s %q: %q, acknowledged before, reported added", w.where("BF.MADD"), m.key, it)
			}
		case !res[x]:
			m.fp.Add(1)
			s.bloomFalsePositives.Add(1)
		}
	}
}

// bloomExists: BF.EXISTS of an acknowledged item.
func (w *stressWorker) bloomExists(m *bloomModel) {
	s := w.s
	old := m.sampleAcked(w.rng, 1)
	if old == nil {
		return
	}
	ok, err := s.st.BFExists(m.key, old[0])
	if err != nil {
		s.violation("%s: %v", w.where("BF.EXISTS"), err)
		return
	}
	s.checkBloom(w.where("BF.EXISTS"), m, old, []bool{ok})
}

// bloomMExists: BF.MEXISTS of acknowledged items.
func (w *stressWorker) bloomMExists(m *bloomModel) {
	s := w.s
	old := m.sampleAcked(w.rng, 16)
	if old == nil {
		return
	}
	res, err := s.st.BFMExists(m.key, old...)
	if err != nil {
		s.violation("%s: %v", w.where("BF.MEXISTS"), err)
		return
	}
	s.checkBloom(w.where("BF.MEXISTS"), m, old, res)
}

// bloomAddBlind: BFAddBlind of new items.
func (w *stressWorker) bloomAddBlind(m *bloomModel) {
	s := w.s
	fresh := w.freshItems("b", 1+w.rng.IntN(4))
	m.written.Add(int64(len(fresh)))
	if err := s.st.BFAddBlind(m.key, fresh...); err != nil {
		s.violation("%s: %v", w.where("BFAddBlind"), err)
		return
	}
	m.ack(fresh...)
}

// bloomDump: Dump, probed for acknowledged items.
func (w *stressWorker) bloomDump(m *bloomModel) {
	s := w.s
	old := m.sampleAcked(w.rng, 16)
	if old == nil {
		return
	}
	v, err := s.st.Dump(m.key)
	if err != nil {
		s.violation("%s: %v", w.where("Dump"), err)
		return
	}
	res, err := BFExistsReply(v, old...)
	if err != nil {
		s.violation("%s %q: %v", w.where("Dump"), m.key, err)
		return
	}
	s.checkBloom(w.where("Dump"), m, old, res)
	scribble(v)
}

// mutate runs a command changing one of the goroutine's cuckoo items:
// delta is the count change a true reply means, want the expected reply.
// The item's state shows the pending change while the command runs.
func (w *stressWorker) mutate(m *cuckooModel, i int, cmd string, delta int, want bool, do func() (bool, error)) {
	st := &m.state[w.g][i]
	seq, c, _ := cunpack(st.Load())
	pending := 0
	if want {
		pending = delta
	}
	st.Store(cpack(seq, c, pending))
	got, err := do()
	if err != nil {
		s := w.s
		s.violation("%s %q %q: %v", w.where(cmd), m.key, m.items[w.g][i], err)
		got = false
	}
	if got != want {
		w.s.violation("%s %q %q with count %d: replied %v, want %v", w.where(cmd), m.key, m.items[w.g][i], c, got, want)
	}
	if got {
		c += delta
		if cmd == "CF.DEL" {
			m.deleted.Add(1)
		}
	}
	st.Store(cpack(seq+1, c, 0))
}

func (w *stressWorker) cuckooOp() {
	s, rng := w.s, w.rng
	m := s.cuckoo[rng.IntN(len(s.cuckoo))]
	i := rng.IntN(len(m.items[w.g]))
	item := m.items[w.g][i]
	_, c, _ := cunpack(m.state[w.g][i].Load())
	switch r := rng.IntN(100); {
	case r < 20 && c < 2: // CF.ADD (at most two copies: both buckets of one sub-filter)
		w.mutate(m, i, "CF.ADD", 1, true, func() (bool, error) { return s.st.CFAdd(m.key, item) })
	case r < 30:
		w.mutate(m, i, "CF.ADDNX", 1, c == 0, func() (bool, error) { return s.st.CFAddNX(m.key, item) })
	case r < 45:
		w.mutate(m, i, "CF.DEL", -1, c > 0, func() (bool, error) { return s.st.CFDel(m.key, item) })
	case r < 55: // CF.EXISTS of an own item
		ok, err := s.st.CFExists(m.key, item)
		s.reads.Add(1)
		if err != nil || ok != (c > 0) {
			s.violation("%s %q %q with count %d: %v, %v", w.where("CF.EXISTS"), m.key, item, c, ok, err)
		}
	case r < 65: // CF.COUNT of an own item
		n, err := s.st.CFCount(m.key, item)
		s.reads.Add(1)
		if err != nil || n != int64(c) {
			s.violation("%s %q %q: %d, %v; want %d (adds minus deletes)", w.where("CF.COUNT"), m.key, item, n, err, c)
		}
	case r < 75 && c < 2: // CFAddBlind of an own item
		w.mutate(m, i, "CFAddBlind", 1, true, func() (bool, error) { return true, s.st.CFAddBlind(m.key, item) })
	case r < 88: // CF.COUNT or CF.EXISTS of anyone's item, as it changes
		p := m.probes(rng, 1)[0]
		exists := rng.IntN(2) == 0
		var n int64
		var err error
		if exists {
			var ok bool
			ok, err = s.st.CFExists(m.key, p.item)
			if ok {
				n = 1
			}
		} else {
			n, err = s.st.CFCount(m.key, p.item)
		}
		after := p.state.Load()
		if err != nil {
			s.violation("%s: %v", w.where("CF.COUNT/EXISTS"), err)
			return
		}
		s.checkCount(w.where("cross-goroutine read"), m, p, after, n, exists)
	default: // Dump, counted for anyone's items
		ps := m.probes(rng, 8)
		v, err := s.st.Dump(m.key)
		if err != nil {
			s.violation("%s: %v", w.where("Dump"), err)
			return
		}
		s.checkCuckooValue(w.where("Dump"), m, v, ps)
		scribble(v)
	}
}

// scribble overwrites a value a read returned, which is the caller's copy
// (sieve's Get returns a copy; Dump passes it on): were it memory the DB
// still reads (a memtable's, a cached block's), later reads would show it.
func scribble(v []byte) {
	for i := range v {
		v[i] = 0xa5
	}
}

// checkCuckooValue checks the counts of probes in value v.
func (s *stress) checkCuckooValue(what string, m *cuckooModel, v []byte, ps []cprobe) {
	for _, p := range ps {
		after := p.state.Load()
		n, err := CFCountReply(v, p.item)
		if err != nil {
			s.violation("%s %q: %v", what, m.key, err)
			return
		}
		s.checkCount(what, m, p, after, n, false)
	}
}

// batchOp commits a Batch of blind writes to every kind, and a Put to the
// other column family, then acknowledges them all.
func (w *stressWorker) batchOp() {
	s, rng := w.s, w.rng
	var b *Batch
	if rng.IntN(2) == 0 {
		b = s.st.NewBatch()
	} else {
		b = s.st.WrapBatch(s.db.NewBatch())
	}
	var acks []func()
	fail := func(err error) { s.violation("%s: %v", w.where("Batch"), err) }
	ownAdded := map[*atomic.Uint64]bool{}
	for range 1 + rng.IntN(4) {
		switch rng.IntN(4) {
		case 0:
			m := s.hll[rng.IntN(len(s.hll))]
			elems := w.freshItems("h", m.room(1+rng.IntN(8)))
			if len(elems) == 0 {
				continue
			}
			m.start(elems)
			if err := b.PFAdd(m.key, elems...); err != nil {
				fail(err)
				return
			}
			acks = append(acks, func() { m.ack(elems) })
		case 1:
			m := s.roundBloom[rng.IntN(len(s.roundBloom))]
			fresh := w.freshItems("b", 1+rng.IntN(4))
			m.written.Add(int64(len(fresh)))
			if err := b.BFAdd(m.key, fresh...); err != nil {
				fail(err)
				return
			}
			acks = append(acks, func() { m.ack(fresh...) })
		case 2:
			m := s.cuckoo[rng.IntN(len(s.cuckoo))]
			i := rng.IntN(len(m.items[w.g]))
			st := &m.state[w.g][i]
			seq, c, _ := cunpack(st.Load())
			if c >= 2 || ownAdded[st] {
				continue
			}
			ownAdded[st] = true
			st.Store(cpack(seq, c, 1))
			if err := b.CFAdd(m.key, m.items[w.g][i]); err != nil {
				fail(err)
				return
			}
			acks = append(acks, func() { st.Store(cpack(seq+1, c+1, 0)) })
		default:
			key := fmt.Sprintf("batch:g%d:%02d", w.g, rng.IntN(64))
			val := fmt.Appendf(nil, "r%d:%d", s.round, rng.Uint64())
			if err := b.Sieve().PutCF(s.other, []byte(key), val); err != nil {
				fail(err)
				return
			}
			acks = append(acks, func() { w.puts[key] = val })
		}
	}
	if b.Len() == 0 {
		return
	}
	if err := b.Commit(nil); err != nil {
		fail(err)
		return
	}
	for _, a := range acks {
		a()
	}
}

// --- the maintenance goroutine ---

func (s *stress) maintain(stop <-chan struct{}, rng *rand.Rand) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		switch r := rng.IntN(100); {
		case r < 25:
			if err := s.db.Flush(); err != nil {
				s.violation("Flush: %v", err)
			}
			s.manualFlushes.Add(1)
		case r < 45: // Compact a random range of the sketch column family
			var lo, hi []byte
			if rng.IntN(4) != 0 {
				lo, hi = s.allKeys[rng.IntN(len(s.allKeys))], s.allKeys[rng.IntN(len(s.allKeys))]
				if bytes.Compare(lo, hi) > 0 {
					lo, hi = hi, lo
				}
			}
			if err := s.st.ColumnFamily().Compact(lo, hi); err != nil {
				s.violation("Compact(%q, %q): %v", lo, hi, err)
			}
			s.manCompac.Add(1)
		case r < 50:
			if err := s.db.Compact(nil, nil); err != nil {
				s.violation("Compact of the default column family: %v", err)
			}
			s.manCompac.Add(1)
		case r < 85:
			s.snapshotCheck(rng)
		default: // another Store on the DB (binding the merger again), for reads
			st, err := Open(s.db)
			if err != nil {
				s.violation("second sketchcol.Open: %v", err)
				break
			}
			s.extraStores.Add(1)
			m := s.hll[rng.IntN(len(s.hll))]
			lo := m.lower()
			v, err := st.Dump(m.key)
			hi := m.upper()
			if errors.Is(err, sieve.ErrNotFound) {
				v, err = nil, nil
			}
			if err != nil {
				s.violation("second Store's Dump: %v", err)
				break
			}
			s.checkHLL("second Store's Dump", m, v, lo, hi)
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
	}
}

// snapshotCheck reads a key through a snapshot, checks it against the
// oracle as of the snapshot, and reads it again (after a flush, sometimes
// a compaction): the bytes must be the same.
func (s *stress) snapshotCheck(rng *rand.Rand) {
	s.snapshots.Add(1)
	var key []byte
	var checker func() func(v []byte)
	switch rng.IntN(3) {
	case 0:
		key, checker = s.hllSnapshotCheck(rng)
	case 1:
		key, checker = s.bloomSnapshotCheck(rng)
	default:
		key, checker = s.cuckooSnapshotCheck(rng)
	}
	snap := s.db.NewSnapshot()
	defer snap.Close()
	check := checker()
	v1, ok := s.snapshotRead(snap, key)
	if !ok {
		return
	}
	check(v1)
	first := bytes.Clone(v1)
	scribble(v1)
	if rng.IntN(3) == 0 {
		if err := s.db.Flush(); err != nil {
			s.violation("Flush: %v", err)
		}
		s.manualFlushes.Add(1)
	} else {
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
	}
	v2, ok := s.snapshotRead(snap, key)
	if ok && !bytes.Equal(first, v2) {
		s.violation("snapshot read of %q changed: %d bytes, then %d bytes", key, len(first), len(v2))
	}
}

// snapshotRead reads key through snap: nil if not found; false after a
// violation.
func (s *stress) snapshotRead(snap *sieve.Snapshot, key []byte) ([]byte, bool) {
	v, err := snap.GetCF(s.st.ColumnFamily(), key)
	if errors.Is(err, sieve.ErrNotFound) {
		return nil, true
	}
	if err != nil {
		s.violation("snapshot GetCF(%q): %v", key, err)
		return nil, false
	}
	return v, true
}

// hllSnapshotCheck picks an HLL key for snapshotCheck, with its lower bound
// as of before the snapshot; the checker, called once the snapshot is
// taken, takes the upper bound.
func (s *stress) hllSnapshotCheck(rng *rand.Rand) ([]byte, func() func(v []byte)) {
	m := s.hll[rng.IntN(len(s.hll))]
	lo := m.lower()
	return m.key, func() func(v []byte) {
		hi := m.upper()
		return func(v []byte) { s.checkHLL("snapshot read", m, v, lo, hi) }
	}
}

// bloomSnapshotCheck picks a Bloom key for snapshotCheck and acknowledged
// items to probe it for.
func (s *stress) bloomSnapshotCheck(rng *rand.Rand) ([]byte, func() func(v []byte)) {
	m := s.bloom[rng.IntN(len(s.bloom))]
	items := m.sampleAcked(rng, 16)
	return m.key, func() func(v []byte) {
		return func(v []byte) {
			if items == nil {
				return
			}
			if len(v) > 0 && v[0] == kindPagedBloom {
				// A paged filter's key holds its header; its pages are
				// read through the Store (and its Dump), not a snapshot.
				b, err := parsePagedBloom(v)
				if err != nil || b.card() == 0 {
					s.violation("snapshot read of paged Bloom %q (items acknowledged before it): %+v, %v", m.key, b, err)
				}
				return
			}
			res, err := BFExistsReply(v, items...)
			if err != nil {
				s.violation("snapshot read of Bloom %q: %v", m.key, err)
				return
			}
			s.checkBloom("snapshot read", m, items, res)
		}
	}
}

// cuckooSnapshotCheck picks a cuckoo key for snapshotCheck and items to
// probe it for; the checker, called once the snapshot is taken, takes
// their states as of then.
func (s *stress) cuckooSnapshotCheck(rng *rand.Rand) ([]byte, func() func(v []byte)) {
	m := s.cuckoo[rng.IntN(len(s.cuckoo))]
	ps := m.probes(rng, 8)
	return m.key, func() func(v []byte) {
		after := make([]uint64, len(ps))
		for i, p := range ps {
			after[i] = p.state.Load()
		}
		return func(v []byte) {
			if len(v) > 0 && v[0] == kindPagedCuckoo {
				// A paged filter's key holds its header; its pages are
				// read through the Store (and its Dump), not a snapshot.
				if _, err := parsePagedCuckoo(v); err != nil {
					s.violation("snapshot read of paged cuckoo %q: %v", m.key, err)
				}
				return
			}
			for i, p := range ps {
				n, err := CFCountReply(v, p.item)
				if err != nil {
					s.violation("snapshot read of cuckoo %q: %v", m.key, err)
					return
				}
				s.checkCount("snapshot read", m, p, after[i], n, false)
			}
		}
	}
}

// --- quiescent checks ---

// verify checks every key against the oracle exactly. REQUIRES: no
// command running.
func (s *stress) verify(stage string) {
	s.verifyHLL(stage)
	s.verifyBloom(stage)
	s.verifyCuckoo(stage)
	s.ct.verify(s, stage)
}

// verifyHLL: the bytes of a model built from the elements, and its count;
// the count of the sources' union.
func (s *stress) verifyHLL(stage string) {
	union := NewHLL()
	for _, m := range s.hll {
		want := m.model()
		lo, hi := m.lower(), m.upper()
		if !want.Equal(lo) || (m.srcs == nil && !want.Equal(hi)) {
			s.violation("%s: oracle of %q: model and bounds disagree", stage, m.key)
		}
		if m.srcs == nil {
			union.Merge(want)
		}
		s.verifyHLLKey(stage, m, want)
	}
	if n, err := s.st.PFCount(keysOf(s.hllSrc)...); err != nil || n != union.Count() {
		s.violation("%s: PFCOUNT of the sources = %d, %v; the model's union is %d", stage, n, err, union.Count())
	}
}

// verifyHLLKey checks m's Dump and PFCOUNT against want, its model.
func (s *stress) verifyHLLKey(stage string, m *hllModel, want *HLL) {
	got, err := s.st.Dump(m.key)
	if want.Equal(NewHLL()) && errors.Is(err, sieve.ErrNotFound) {
		return
	}
	s.reads.Add(1)
	if err != nil {
		s.violation("%s: Dump(%q): %v", stage, m.key, err)
		return
	}
	if w := want.Bytes(); !bytes.Equal(got, w) {
		diff := -1
		if h, err := ParseHLL(got); err == nil {
			for i := range hllRegisters {
				if h.reg[i] != want.reg[i] {
					diff = i
					break
				}
			}
		}
		s.violation("%s: HLL %q: Dump is %d bytes, the model's %d (first register differing: %d)", stage, m.key, len(got), len(w), diff)
	}
	n, err := s.st.PFCount(m.key)
	if err != nil || n != want.Count() {
		s.violation("%s: PFCOUNT %q = %d, %v; the model's is %d", stage, m.key, n, err, want.Count())
	}
}

// verifyBloom: no false negatives; contested items added exactly once; the
// cardinality.
func (s *stress) verifyBloom(stage string) {
	for _, m := range s.bloom {
		acked := m.allAcked()
		res, err := s.st.BFMExists(m.key, acked...)
		if err != nil {
			s.violation("%s: BF.MEXISTS %q: %v", stage, m.key, err)
			continue
		}
		s.checkBloom(stage, m, acked, res)
		called, none := s.verifyContested(stage, m)
		if none > 2+called/200 {
			s.violation("%s: Bloom %q: %d of %d contested items reported added by none of their BF.ADDs; false positives explain a few",
				stage, m.key, none, called)
		}
		s.contestedNone.Add(none)
		card, err := s.st.BFCard(m.key)
		// Blind adds of false positives go unseen: a slack of 1e-3.
		written := m.written.Load() + called
		if err != nil || card > written || card < written-m.fp.Load()-2-written/1000 {
			s.violation("%s: BF.CARD %q = %d, %v; %d items written, %d found present when new", stage, m.key, card, err, written, m.fp.Load())
		}
	}
}

// verifyContested checks m's contested items that were added: by exactly
// one of this round's concurrent BF.ADDs, and not added again now. It
// returns how many were called and how many no BF.ADD reported added.
func (s *stress) verifyContested(stage string, m *bloomModel) (called, none int64) {
	for i, it := range m.contested {
		if m.calls[i].Load() == 0 {
			continue
		}
		called++
		if m.round == s.round {
			switch n := m.trues[i].Load(); {
			case n == 0:
				none++ // a false positive before its first add
			case n > 1:
				s.violation("%s: Bloom %q: contested item %q reported added by %d of %d concurrent BF.ADDs; want exactly 1",
					stage, m.key, it, n, m.calls[i].Load())
			}
		}
		ok, err := s.st.BFAdd(m.key, it)
		s.reads.Add(1)
		if err != nil || ok {
			s.violation("%s: BF.ADD %q of contested %q again: %v, %v; want false", stage, m.key, it, ok, err)
		}
	}
	return called, none
}

// verifyCuckoo: exact counts, and CF.INFO's totals.
func (s *stress) verifyCuckoo(stage string) {
	for _, m := range s.cuckoo {
		var sum int64
		for g, its := range m.items {
			sum += s.verifyCuckooItems(stage, m, g, its)
		}
		info, err := s.st.CFInfo(m.key)
		if err != nil || info.NumItemsInserted != sum || info.NumItemsDeleted != m.deleted.Load() || info.ItemsDropped != 0 {
			s.violation("%s: CF.INFO %q = %+v, %v; want %d items inserted, %d deleted, none dropped",
				stage, m.key, info, err, sum, m.deleted.Load())
		}
	}
}

// verifyCuckooItems checks goroutine g's items its of m: CF.MEXISTS and
// CF.COUNT as the oracle has them. It returns the sum of their counts.
func (s *stress) verifyCuckooItems(stage string, m *cuckooModel, g int, its [][]byte) (sum int64) {
	res, err := s.st.CFMExists(m.key, its...)
	if err != nil || len(res) != len(its) {
		s.violation("%s: CF.MEXISTS %q: %d answers, %v", stage, m.key, len(res), err)
		return 0
	}
	for i, it := range its {
		seq, c, p := cunpack(m.state[g][i].Load())
		if p != 0 {
			s.violation("%s: oracle: %q %q pending %d (seq %d)", stage, m.key, it, p, seq)
		}
		sum += int64(c)
		n, err := s.st.CFCount(m.key, it)
		s.reads.Add(2)
		if err != nil || n != int64(c) {
			s.violation("%s: CF.COUNT %q %q = %d, %v; want %d", stage, m.key, it, n, err, c)
		}
		if res[i] != (c > 0) {
			s.violation("%s: CF.MEXISTS %q %q = %v with count %d", stage, m.key, it, res[i], c)
		}
	}
	return sum
}

// compareDumps checks every value is what it was before the Close.
func (s *stress) compareDumps() {
	for _, key := range s.allKeys {
		want, had := s.dumps[string(key)]
		got, err := s.st.Dump(key)
		switch {
		case !had && errors.Is(err, sieve.ErrNotFound):
		case err != nil:
			s.violation("after reopen: Dump(%q): %v", key, err)
		case !bytes.Equal(got, want):
			s.violation("after reopen: Dump(%q) is %d bytes, %d before Close, and differs", key, len(got), len(want))
		}
	}
	s.checkIterator("after reopen")
}

// checkIterator scans the sketch column family: exactly the keys recorded,
// each with its recorded value.
func (s *stress) checkIterator(stage string) {
	it := s.st.ColumnFamily().NewIter(nil)
	seen := 0
	for ok := it.First(); ok; ok = it.Next() {
		want, had := s.dumps[string(it.Key())]
		if !had {
			s.violation("%s: iterator: unexpected key %q", stage, it.Key())
			continue
		}
		seen++
		if d, err := dumpOf(want); d != nil && err == nil {
			want = d.raw // a paged filter's key holds the dump's header
		}
		if d, ok, err := countersRestore(want); ok && err == nil {
			want = d.raw // so does a paged Count-Min or Top-K sketch's
		}
		if d, err := parseCuckooDump(want); err == nil {
			want = d.raw
		}
		if !bytes.Equal(it.Value(), want) {
			s.violation("%s: iterator: %q is %d bytes, Dump gave %d", stage, it.Key(), len(it.Value()), len(want))
		}
	}
	if err := it.Close(); err != nil {
		s.violation("%s: iterator: %v", stage, err)
	}
	if seen != len(s.dumps) {
		s.violation("%s: iterator saw %d keys, want %d", stage, seen, len(s.dumps))
	}
}
