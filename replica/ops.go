package replica

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sievedb/sieve"
)

// Apply proposes cmd and waits until this node (the leader) has applied
// it, returning its Result. Errors: *NotLeaderError on a follower (not
// proposed); ErrUnknownOutcome when ctx ends or leadership is lost after
// the proposal (retry the same *Command: a deduplicated one applies
// once); ErrStopped after a state machine failure. A command the state
// machine refused is a Result with Err set and a nil error.
func (r *Replica) Apply(ctx context.Context, cmd *Command) (*Result, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if r.raft.State() != raft.Leader {
		return nil, r.notLeader()
	}
	fut, seq := r.proposeCmd(ctx, cmd)
	err := wait(ctx, fut)
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		r.settle(seq)
		return nil, r.notLeader() // refused before it was appended
	case errors.Is(err, raft.ErrEnqueueTimeout):
		r.settle(seq)
		return nil, context.DeadlineExceeded // never proposed
	case err != nil:
		return nil, errors.Join(ErrUnknownOutcome, err)
	}
	r.settle(seq)
	switch v := fut.Response().(type) {
	case *Result:
		return v, nil
	case error:
		return nil, v
	}
	return nil, errors.New("replica: no result")
}

// needsDedup reports whether cmd holds a non-idempotent operation.
func needsDedup(cmd *Command) bool {
	for _, op := range cmd.Ops {
		if op.Kind == OpMerge {
			return true
		}
	}
	return false
}

// proposeCmd numbers cmd (if it needs it and has no client ID yet) and
// hands it to raft, both under one lock so that this node's sequence
// numbers reach the log in order. It returns the sequence number to
// settle (0: none).
func (r *Replica) proposeCmd(ctx context.Context, cmd *Command) (raft.ApplyFuture, uint64) {
	r.propose.Lock()
	defer r.propose.Unlock()
	var seq uint64
	if cmd.ClientID == 0 && needsDedup(cmd) {
		r.seq++
		cmd.ClientID, cmd.Seq = r.clientID, r.seq
	}
	if cmd.ClientID == r.clientID {
		seq = cmd.Seq
		r.inflight[seq] = true
		cmd.Acked = seq
		for s := range r.inflight {
			cmd.Acked = min(cmd.Acked, s)
		}
	}
	return r.raft.Apply(encodeCommand(cmd), timeout(ctx)), seq
}

// settle forgets seq once its outcome is known.
func (r *Replica) settle(seq uint64) {
	if seq == 0 {
		return
	}
	r.propose.Lock()
	delete(r.inflight, seq)
	r.propose.Unlock()
}

// applyOne applies a command of one operation and returns its error.
func (r *Replica) applyOne(ctx context.Context, op Op) error {
	res, err := r.Apply(ctx, &Command{Ops: []Op{op}})
	if err != nil {
		return err
	}
	return res.Err
}

// Put sets key to value in family ("" is the default family).
func (r *Replica) Put(ctx context.Context, family string, key, value []byte) error {
	return r.applyOne(ctx, Op{Kind: OpPut, Family: family, Key: key, Value: value})
}

// PutWithExpiry sets key to value until expiry (sieve's PutWithExpiry;
// each replica's clock decides when the value is gone).
func (r *Replica) PutWithExpiry(ctx context.Context, family string, key, value []byte, expiry time.Time) error {
	return r.applyOne(ctx, Op{Kind: OpPut, Family: family, Key: key, Value: value, Expiry: expiry})
}

// Delete removes key from family.
func (r *Replica) Delete(ctx context.Context, family string, key []byte) error {
	return r.applyOne(ctx, Op{Kind: OpDelete, Family: family, Key: key})
}

// DeleteRange removes the keys of family in [start, end).
func (r *Replica) DeleteRange(ctx context.Context, family string, start, end []byte) error {
	return r.applyOne(ctx, Op{Kind: OpDeleteRange, Family: family, Key: start, End: end})
}

// Merge adds operand to key in family (which needs a merger in
// Config.Families) and returns key's value after the merge, computed in
// the state machine. The command is deduplicated; to retry one that
// ended in ErrUnknownOutcome without applying it twice, build the Command
// and pass the same *Command to Apply again.
func (r *Replica) Merge(ctx context.Context, family string, key, operand []byte) ([]byte, error) {
	cmd := &Command{Ops: []Op{
		{Kind: OpMerge, Family: family, Key: key, Value: operand},
		{Kind: OpGet, Family: family, Key: key},
	}}
	res, err := r.Apply(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Values[1], nil
}

// Get reads key from family, linearizably: on the leader only (else
// *NotLeaderError), after a raft barrier once per term (so that every
// entry committed by earlier leaders is applied here) and a check that
// this node is still the leader (raft's VerifyLeader: a heartbeat round
// to a quorum), then from the local state machine. A missing key is
// sieve.ErrNotFound.
func (r *Replica) Get(ctx context.Context, family string, key []byte) ([]byte, error) {
	if err := r.consistentRead(ctx); err != nil {
		return nil, err
	}
	return r.fsm.get(family, key)
}

// StaleGet reads key from this node's state machine, on any node, without
// contacting the others: it may miss recent writes (a follower lags, a
// deposed leader may not know it yet), but it reflects a prefix of the
// log, never a write that was not committed.
func (r *Replica) StaleGet(family string, key []byte) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	return r.fsm.get(family, key)
}

// consistentRead is Consul's consistentRead: barrier once per term,
// VerifyLeader per read.
func (r *Replica) consistentRead(ctx context.Context) error {
	if err := r.check(); err != nil {
		return err
	}
	if r.raft.State() != raft.Leader {
		return r.notLeader()
	}
	term := r.raft.CurrentTerm()
	if r.barrierTerm.Load() != term {
		if err := r.leaderErr(wait(ctx, r.raft.Barrier(timeout(ctx)))); err != nil {
			return err
		}
		r.barrierTerm.Store(term)
	}
	return r.leaderErr(wait(ctx, r.raft.VerifyLeader()))
}

// ConsistentRead makes a read of the local state machine (DB) that
// follows it linearizable, as Get's: it fails with *NotLeaderError unless
// this node is the leader and a quorum still follows it, after every
// entry committed before this term is applied here.
func (r *Replica) ConsistentRead(ctx context.Context) error { return r.consistentRead(ctx) }

// LeaderTerm returns the current term once this node, the leader, has
// applied every entry committed before the term (a raft barrier, once
// per term): from then on, the local state lacks only the entries this
// leader itself proposed and has not applied yet. A caller that computes
// a command from the local state passes the term as Command.Term, so
// that the command is refused if it lands in another term. It does not
// check that a quorum still follows this node (VerifyTerm does).
func (r *Replica) LeaderTerm(ctx context.Context) (uint64, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	if r.raft.State() != raft.Leader {
		return 0, r.notLeader()
	}
	term := r.raft.CurrentTerm()
	if r.barrierTerm.Load() != term {
		if err := r.leaderErr(wait(ctx, r.raft.Barrier(timeout(ctx)))); err != nil {
			return 0, err
		}
		r.barrierTerm.Store(term)
	}
	return term, nil
}

// VerifyTerm checks that this node is still the leader, in term, with a
// quorum following it (raft's VerifyLeader): a reply computed from the
// local state in term without writing anything is then linearizable.
func (r *Replica) VerifyTerm(ctx context.Context, term uint64) error {
	if err := r.leaderErr(wait(ctx, r.raft.VerifyLeader())); err != nil {
		return err
	}
	if r.raft.CurrentTerm() != term {
		return r.notLeader()
	}
	return nil
}

func (r *Replica) leaderErr(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return r.notLeader()
	}
	return err
}

// ErrNotFound is sieve's: a read of a missing key.
var ErrNotFound = sieve.ErrNotFound
