package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sievedb/sieve"
)

func TestWritesThroughLeaderReadsEverywhere(t *testing.T) {
	c := newCluster(t, 3)
	li := c.leader()
	l := c.nodes[li]
	for i := range 20 {
		c.put(fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i))
	}
	if err := l.Delete(ctx(t), "", []byte("k03")); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteRange(ctx(t), "", []byte("k10"), []byte("k15")); err != nil {
		t.Fatal(err)
	}
	if err := l.Put(ctx(t), "other", []byte("x"), []byte("in another family")); err != nil {
		t.Fatal(err)
	}
	if err := l.PutWithExpiry(ctx(t), "", []byte("gone"), []byte("v"), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	// Linearizable read on the leader.
	if v, err := l.Get(ctx(t), "", []byte("k05")); err != nil || string(v) != "v5" {
		t.Fatalf("leader Get: %q %v", v, err)
	}
	c.converge()
	c.checkAll("", "k05", "v5")
	c.checkAll("", "k03", "")
	c.checkAll("", "k12", "")
	c.checkAll("", "k15", "v15")
	c.checkAll("", "gone", "")
	c.checkAll("other", "x", "in another family")
	// Followers refuse writes and linearizable reads, naming the leader.
	f := c.nodes[(li+1)%3]
	var nl *NotLeaderError
	if err := f.Put(ctx(t), "", []byte("k"), []byte("v")); !errors.As(err, &nl) || nl.LeaderID != c.peers[li].ID {
		t.Fatalf("follower Put: %v, want NotLeaderError naming %s", err, c.peers[li].ID)
	}
	if _, err := f.Get(ctx(t), "", []byte("k05")); !errors.As(err, &nl) {
		t.Fatalf("follower Get: %v, want NotLeaderError", err)
	}
	// A refused command applies nothing and says why, the same everywhere.
	res, err := l.Apply(ctx(t), &Command{Ops: []Op{
		{Kind: OpPut, Key: []byte("half"), Value: []byte("v")},
		{Kind: OpMerge, Family: "nomerger", Key: []byte("k"), Value: []byte("1")},
	}})
	var ce *CommandError
	if err != nil || !errors.As(res.Err, &ce) {
		t.Fatalf("bad command: %+v %v", res, err)
	}
	c.converge()
	c.checkAll("", "half", "")
}

func TestDuplicateProposalAppliedOnce(t *testing.T) {
	c := newCluster(t, 3)
	l := c.nodes[c.leader()]
	cmd := &Command{Ops: []Op{
		{Kind: OpMerge, Family: "counters", Key: []byte("hits"), Value: []byte("5")},
		{Kind: OpGet, Family: "counters", Key: []byte("hits")},
	}}
	for i := range 3 { // a client retrying the same command after an unknown outcome
		res, err := l.Apply(ctx(t), cmd)
		if err != nil || res.Err != nil {
			t.Fatalf("apply %d: %+v %v", i, res, err)
		}
		if string(res.Values[1]) != "5" || res.Duplicate != (i > 0) {
			t.Fatalf("apply %d: value %q duplicate %v", i, res.Values[1], res.Duplicate)
		}
	}
	if v, err := l.Merge(ctx(t), "counters", []byte("hits"), []byte("2")); err != nil || string(v) != "7" {
		t.Fatalf("Merge: %q %v, want 7", v, err)
	}
	c.converge()
	c.checkAll("counters", "hits", "7")
}

func TestLeaderFailureAndCatchUpByLog(t *testing.T) {
	c := newCluster(t, 3)
	for i := range 10 {
		c.put(fmt.Sprintf("a%d", i), "1")
	}
	old := c.leader()
	c.stop(old)
	nl := c.leader()
	if nl == old {
		t.Fatal("the stopped node is still the leader")
	}
	for i := range 10 {
		c.put(fmt.Sprintf("b%d", i), "2")
	}
	if v, err := c.nodes[nl].Get(ctx(t), "", []byte("a3")); err != nil || string(v) != "1" {
		t.Fatalf("new leader reads a3: %q %v", v, err)
	}
	c.start(old) // restarted from its disk: catches up from the log
	c.converge()
	c.checkAll("", "a9", "1")
	c.checkAll("", "b9", "2")
	if got := c.nodes[old].fsm.restores.Load(); got != 0 {
		t.Fatalf("log catch-up restored %d snapshots", got)
	}
}

func TestCatchUpBySnapshot(t *testing.T) {
	c := newCluster(t, 3)
	for i := range 20 {
		c.put(fmt.Sprintf("k%02d", i), "old")
	}
	c.converge()
	li := c.leader()
	away := (li + 1) % 3
	c.stop(away)
	// While it is away: overwrite, delete (the restore must remove these
	// keys from its disk), write with an expiry, merge, then snapshot and
	// truncate the log past what it has.
	for i := range 10 {
		c.put(fmt.Sprintf("k%02d", i), "new")
	}
	l := c.nodes[c.leader()]
	if err := l.DeleteRange(ctx(t), "", []byte("k10"), []byte("k15")); err != nil {
		t.Fatal(err)
	}
	if err := l.PutWithExpiry(ctx(t), "", []byte("ttl"), []byte("v"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Merge(ctx(t), "counters", []byte("n"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		c.put(fmt.Sprintf("z%02d", i), "z")
	}
	if err := l.Snapshot(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		c.put(fmt.Sprintf("after%d", i), "a")
	}
	c.start(away)
	c.converge()
	if got := c.nodes[away].fsm.restores.Load(); got != 1 {
		t.Fatalf("%d snapshot restores on the node that was away, want 1", got)
	}
	c.checkAll("", "k00", "new")
	c.checkAll("", "k12", "")
	c.checkAll("", "k19", "old")
	c.checkAll("", "z29", "z")
	c.checkAll("", "after4", "a")
	c.checkAll("counters", "n", "3")
	c.checkAll("", "ttl", "v")
	if _, exp, err := c.nodes[away].fsm.db.GetWithExpiry([]byte("ttl")); err != nil || exp.IsZero() {
		t.Fatalf("ttl after restore: expiry %v, %v", exp, err)
	}
	// The deduplication table came with the snapshot: a retry is still
	// recognized on the restored node once it leads.
	if _, err := os.Stat(filepath.Join(c.config(away).Dir, restoreMarker)); !os.IsNotExist(err) {
		t.Fatalf("restore marker left behind: %v", err)
	}
}

// A restore interrupted by a crash (the marker left, the data half
// replaced) is redone from the latest snapshot when the node opens.
func TestInterruptedRestoreRedoneOnOpen(t *testing.T) {
	c := newCluster(t, 1)
	for i := range 5 {
		c.put(fmt.Sprintf("k%d", i), "v")
	}
	r := c.nodes[0]
	if err := r.Snapshot(); err != nil {
		t.Fatal(err)
	}
	cfg := c.config(0)
	c.stop(0)
	// Simulate the crash: a key the snapshot lacks and a key missing, as if
	// only part of the state had been replaced, and the marker.
	db, err := sieve.Open(filepath.Join(cfg.Dir, "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(db.Put([]byte("stray"), []byte("x"), sieve.Sync), db.Delete([]byte("k2"), sieve.Sync), db.Close()); err != nil {
		t.Fatal(err)
	}
	if err := writeSynced(filepath.Join(cfg.Dir, restoreMarker), []byte("x")); err != nil {
		t.Fatal(err)
	}
	c.start(0)
	r = c.nodes[0]
	if r.fsm.restores.Load() != 1 {
		t.Fatalf("%d restores at open, want 1", r.fsm.restores.Load())
	}
	c.leader()
	c.converge()
	c.checkAll("", "stray", "")
	c.checkAll("", "k2", "v")
	if _, err := os.Stat(filepath.Join(cfg.Dir, restoreMarker)); !os.IsNotExist(err) {
		t.Fatalf("marker still there: %v", err)
	}
}
