// Package replica replicates a sieve database with hashicorp/raft: sieve
// is raft's log store and stable store (a DB of its own) and its state
// machine (another DB). See README.md for the design and the guarantees.
package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/sievedb/sieve"
)

// Peer is one member of the initial cluster: its raft server ID and raft
// address (host:port).
type Peer struct {
	ID   string
	Addr string
}

// Config configures a node.
type Config struct {
	// ID is the node's raft server ID, unique in the cluster.
	ID string
	// Dir holds the node's state: raft-log/ (the log and stable store),
	// data/ (the state machine), snapshots/, and checkpoints/ and
	// restore-tmp/ while a snapshot is taken or restored.
	Dir string
	// Bind is the raft TCP address to listen on and advertise. Ignored
	// when Transport is set.
	Bind string
	// Peers is the initial cluster, this node included. A node with no
	// raft state bootstraps it; every node may be started with the same
	// list. Empty: join later through a leader's AddVoter.
	Peers []Peer
	// Options are the state machine DB's options (nil: defaults). They
	// must be the same on every node, as must Families.
	Options *sieve.Options
	// Families gives the options of column families by name (a merger
	// for OpMerge). A family not listed is created with default options
	// on its first write.
	Families map[string]*sieve.ColumnFamilyOptions
	// Raft overrides hashicorp/raft's configuration (timings, snapshot
	// threshold...); nil: raft.DefaultConfig(). LocalID, Logger and
	// NoSnapshotRestoreOnStart are set by Open.
	Raft *raft.Config
	// Transport, if set, is used instead of a TCP transport on Bind (tests
	// use raft.InmemTransport). Close does not close it.
	Transport raft.Transport
	// SnapshotRetain is how many snapshots to keep; default 2.
	SnapshotRetain int
	// Logger receives raft's logs; nil: discarded.
	Logger hclog.Logger
	// OnApply, if set, is called on raft's state machine goroutine after
	// each batch of log entries is durably applied, before their writers
	// are answered, with the commands applied in it (refused ones and
	// duplicates left out), in log order: for a caller that keeps
	// in-memory state derived from the data (caches, tables) to update it
	// for the keys the commands wrote. The commands must not be kept. It
	// must not call the Replica's methods that wait for raft.
	OnApply func(cmds []*Command)
	// OnRestore, if set, is called after raft restored a snapshot (the
	// whole state replaced), before any later entry is applied. A restore
	// redone at Open, before raft starts, does not call it.
	OnRestore func()
}

// Replica is one node of a replicated sieve database. Its methods are
// safe for concurrent use.
type Replica struct {
	cfg   Config
	raft  *raft.Raft
	fsm   *fsm
	logs  *LogStore
	snaps *raft.FileSnapshotStore
	trans raft.Transport
	own   io.Closer // the TCP transport Open made

	clientID    uint64
	propose     sync.Mutex // orders sequence numbers with raft.Apply
	seq         uint64
	inflight    map[uint64]bool
	barrierTerm atomic.Uint64
	closed      atomic.Bool
}

// Open starts a node: it opens the stores under cfg.Dir, finishes a
// snapshot restore a crash interrupted, bootstraps the cluster from
// cfg.Peers if the node has no raft state, and starts raft.
func Open(cfg Config) (*Replica, error) {
	if cfg.ID == "" || cfg.Dir == "" {
		return nil, errors.New("replica: Config.ID and Config.Dir are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.SnapshotRetain == 0 {
		cfg.SnapshotRetain = 2
	}
	r := &Replica{cfg: cfg, clientID: rand.Uint64() | 1, inflight: map[uint64]bool{}}
	if err := r.openStores(); err != nil {
		r.closeStores()
		return nil, err
	}
	if err := r.startRaft(); err != nil {
		r.closeStores()
		return nil, err
	}
	return r, nil
}

func (r *Replica) openStores() error {
	if err := os.MkdirAll(r.cfg.Dir, 0o755); err != nil {
		return err
	}
	var err error
	if r.logs, err = OpenLogStore(filepath.Join(r.cfg.Dir, "raft-log"), nil); err != nil {
		return err
	}
	if r.fsm, err = openFSM(r.cfg.Dir, r.cfg.Options, r.cfg.Families); err != nil {
		return err
	}
	r.fsm.onApply, r.fsm.onRestore = r.cfg.OnApply, r.cfg.OnRestore
	if r.snaps, err = raft.NewFileSnapshotStoreWithLogger(r.cfg.Dir, r.cfg.SnapshotRetain, r.cfg.Logger); err != nil {
		return err
	}
	os.RemoveAll(filepath.Join(r.cfg.Dir, "checkpoints")) // left by a crash
	return r.fsm.redoRestore(r.snaps)
}

func (r *Replica) startRaft() error {
	r.trans = r.cfg.Transport
	if r.trans == nil {
		t, err := raft.NewTCPTransportWithLogger(r.cfg.Bind, nil, 3, 10*time.Second, r.cfg.Logger)
		if err != nil {
			return err
		}
		r.trans, r.own = t, t
	}
	conf := raft.DefaultConfig()
	if r.cfg.Raft != nil {
		c := *r.cfg.Raft
		conf = &c
	}
	conf.LocalID = raft.ServerID(r.cfg.ID)
	conf.Logger = r.cfg.Logger
	conf.NoSnapshotRestoreOnStart = true // the state machine is on disk
	if len(r.cfg.Peers) > 0 {
		has, err := raft.HasExistingState(r.logs, r.logs, r.snaps)
		if err != nil {
			return err
		}
		if !has {
			var c raft.Configuration
			for _, p := range r.cfg.Peers {
				c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
			}
			if err := raft.BootstrapCluster(conf, r.logs, r.logs, r.snaps, r.trans, c); err != nil {
				return err
			}
		}
	}
	ra, err := raft.NewRaft(conf, r.fsm, r.logs, r.logs, r.snaps, r.trans)
	if err != nil {
		return err
	}
	r.raft = ra
	r.fsm.onFail = func(err error) {
		r.cfg.Logger.Error("replica: state machine failed; stopping raft", "error", err)
		ra.Shutdown()
	}
	return nil
}

func (r *Replica) closeStores() {
	if r.own != nil {
		r.own.Close()
	}
	if r.fsm != nil {
		r.fsm.close()
	}
	if r.logs != nil {
		r.logs.Close()
	}
}

// Close stops raft and closes the stores.
func (r *Replica) Close() error {
	if r.closed.Swap(true) {
		return ErrClosed
	}
	err := r.raft.Shutdown().Error()
	if r.own != nil {
		r.own.Close()
	}
	if e := r.fsm.close(); err == nil {
		err = e
	}
	if e := r.logs.Close(); err == nil {
		err = e
	}
	return err
}

// Raft returns the underlying raft node (for stats and observers; writes
// must go through the Replica's methods).
func (r *Replica) Raft() *raft.Raft { return r.raft }

// Leader returns the leader's ID and raft address as this node knows
// them; empty when it knows none.
func (r *Replica) Leader() (id, addr string) {
	a, i := r.raft.LeaderWithID()
	return string(i), string(a)
}

// IsLeader reports whether this node is the leader.
func (r *Replica) IsLeader() bool { return r.raft.State() == raft.Leader }

// DB returns the state machine's database, for reads (and the column
// family handles a reader needs). Writing it other than through the
// Replica makes this node diverge from the others.
func (r *Replica) DB() *sieve.DB { return r.fsm.db }

// AppliedIndex returns the last raft index the state machine applied.
func (r *Replica) AppliedIndex() uint64 { return r.fsm.applied.Load() }

func (r *Replica) notLeader() error {
	id, addr := r.Leader()
	return &NotLeaderError{LeaderID: id, LeaderAddr: addr}
}

func (r *Replica) check() error {
	if r.closed.Load() {
		return ErrClosed
	}
	return r.fsm.failure()
}

// wait waits for fut or for ctx.
func wait(ctx context.Context, fut raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// timeout is ctx's time left, 0 (no limit) without a deadline.
func timeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 0
}

// AddVoter adds (or updates) a voting member; on the leader only.
func (r *Replica) AddVoter(ctx context.Context, id, addr string) error {
	if err := r.check(); err != nil {
		return err
	}
	return r.membership(ctx, r.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout(ctx)))
}

// RemoveServer removes a member; on the leader only.
func (r *Replica) RemoveServer(ctx context.Context, id string) error {
	if err := r.check(); err != nil {
		return err
	}
	return r.membership(ctx, r.raft.RemoveServer(raft.ServerID(id), 0, timeout(ctx)))
}

func (r *Replica) membership(ctx context.Context, fut raft.Future) error {
	err := wait(ctx, fut)
	if errors.Is(err, raft.ErrNotLeader) {
		return r.notLeader()
	}
	return err
}

// Snapshot takes a snapshot now (raft then truncates the log, keeping
// raft.Config.TrailingLogs entries).
func (r *Replica) Snapshot() error {
	if err := r.check(); err != nil {
		return err
	}
	return r.raft.Snapshot().Error()
}

// Servers returns the current cluster configuration.
func (r *Replica) Servers() ([]Peer, error) {
	fut := r.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, err
	}
	var ps []Peer
	for _, s := range fut.Configuration().Servers {
		ps = append(ps, Peer{ID: string(s.ID), Addr: string(s.Address)})
	}
	return ps, nil
}

func (r *Replica) String() string { return fmt.Sprintf("replica %s", r.cfg.ID) }
