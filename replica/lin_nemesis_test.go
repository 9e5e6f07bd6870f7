package replica

import (
	"math/rand/v2"
	"sync"
	"time"
)

// The nemesis's faults.
const (
	faultKillLeader    = "kill-leader"      // crash the leader, restart it from its disk
	faultKillFollower  = "kill-follower"    // the same for a follower
	faultPause         = "pause"            // a node frozen: links cut both ways, clients wait
	faultPartition     = "partition-leader" // the leader alone in a minority, clients still reach it
	faultPartitionLink = "partition-link"   // only the link leader <-> one follower cut
	faultSnapshot      = "snapshot-install" // a follower kept away until the log is truncated
	faultRestoreCrash  = "restore-crash"    // the same, its restore failing part way; then crashed, restarted
)

var allFaults = []string{faultKillLeader, faultKillFollower, faultPause, faultPartition, faultPartitionLink, faultSnapshot, faultRestoreCrash}

type nemesis struct {
	c   *linCluster
	rng *rand.Rand
	mu  sync.Mutex
	n   map[string]int // faults injected, by kind
}

func (n *nemesis) sleep(minMS, maxMS int) {
	time.Sleep(time.Duration(minMS+n.rng.IntN(maxMS-minMS+1)) * time.Millisecond)
}

// run injects faults until deadline: kinds in order, then (long form)
// random kinds; a pause of 100-300 ms between faults.
func (n *nemesis) run(deadline time.Time, kinds []string, random bool) {
	for i := 0; time.Now().Before(deadline); i++ {
		n.sleep(100, 300)
		var kind string
		switch {
		case i < len(kinds):
			kind = kinds[i]
		case random:
			kind = allFaults[n.rng.IntN(len(allFaults))]
		default:
			return
		}
		if n.inject(kind) {
			n.mu.Lock()
			n.n[kind]++
			n.mu.Unlock()
		}
	}
}

// inject applies one fault and heals it; false when it could not start
// (no leader to target).
func (n *nemesis) inject(kind string) bool {
	c := n.c
	l := c.waitLeader(3 * time.Second)
	if l < 0 {
		return false
	}
	f := (l + 1 + n.rng.IntN(2)) % len(c.peers)
	switch kind {
	case faultKillLeader, faultKillFollower:
		victim := l
		if kind == faultKillFollower {
			victim = f
		}
		c.crash(victim)
		n.sleep(200, 600)
		if err := c.start(victim); err != nil {
			c.t.Errorf("nemesis: restart: %v", err)
		}
	case faultPause:
		victim := []int{l, f}[n.rng.IntN(2)]
		c.pause(victim)
		n.sleep(300, 800)
		c.resume(victim)
	case faultPartition:
		c.isolate(l, true)
		n.sleep(400, 1000)
		c.isolate(l, false)
	case faultPartitionLink:
		c.setLinks(l, f, true)
		n.sleep(300, 800)
		c.setLinks(l, f, false)
	case faultSnapshot, faultRestoreCrash:
		n.snapshotInstall(f, kind == faultRestoreCrash)
	}
	return true
}

// snapshotInstall keeps follower f away while the others move on and
// snapshot (truncating their logs past f's), then lets it back: it must
// install a snapshot. With crash set, f's restore fails part way (its
// state half replaced, the RESTORING marker left); f is then crashed and
// restarted, and Open must redo the restore.
func (n *nemesis) snapshotInstall(f int, crash bool) {
	c := n.c
	c.isolate(f, true)
	r, _ := c.node(f)
	if r == nil {
		c.isolate(f, false)
		return
	}
	from := r.AppliedIndex()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if l := c.leader(); l >= 0 && l != f {
			if lr, _ := c.node(l); lr != nil && lr.AppliedIndex() > from+60 {
				break
			}
		}
	}
	for i := range c.peers {
		if o, _ := c.node(i); o != nil && i != f {
			o.Snapshot() // "nothing new to snapshot" is fine
		}
	}
	before := r.fsm.restores.Load()
	c.arm[f].Store(crash)
	c.isolate(f, false)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if r.fsm.failure() != nil || r.fsm.restores.Load() > before {
			break
		}
	}
	c.arm[f].Store(false)
	if r.fsm.failure() != nil {
		c.restoreCrashes.Add(1)
		c.crash(f)
		n.sleep(50, 200)
		if err := c.start(f); err != nil {
			c.t.Errorf("nemesis: restart after a failed restore: %v", err)
		}
	}
}
