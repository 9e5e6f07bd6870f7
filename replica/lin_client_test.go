package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// linReadMode is how a client reads.
type linReadMode int

const (
	readLinearizable linReadMode = iota // Replica.Get: the leader check
	// readMutant skips the leader check: StaleGet on whichever node the
	// client believes leads (a follower, or a deposed leader in a minority
	// partition). The checker must catch it.
	readMutant
)

// linClient issues random operations through the node it believes leads,
// following NotLeaderError. Writes carry the client's own ID and sequence
// numbers and are retried (the same command) after an unknown outcome, so
// the state machine applies each at most once.
type linClient struct {
	id       int
	cid      uint64
	seq      uint64
	node     int
	rng      *rand.Rand
	c        *linCluster
	h        *linHistory
	mode     linReadMode
	vals     int
	resolved int
	// noLeader counts answers in a row from cl.node that it knows no
	// leader
	noLeader int
	// pending are increments whose outcome is unknown, resolved after
	// healing
	pending []pendingWrite
}

type pendingWrite struct {
	in   linInput
	cmd  *Command
	call int64
}

// resolve settles the client's increments of unknown outcome after
// healing by applying the same commands again: the deduplication table
// answers with the stored result of one that was applied, and one that
// was not is applied now. Either way it took effect once, between its
// call and now, with the output returned. One that still fails stays
// unknown (etcd's rule). Without this, porcupine would carry each
// unknown increment (it changes the counter whatever its output) to the
// end of the history, and its search grows with 2^(unknown increments).
func (cl *linClient) resolve() {
	for _, p := range cl.pending {
		out := linOutput{Unknown: true}
		for range 50 {
			r, _ := cl.c.node(max(cl.c.leader(), 0))
			if r == nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			res, err := r.Apply(ctx, p.cmd)
			cancel()
			if err == nil && res.Err == nil {
				out = linOutput{Value: string(res.Values[1]), Found: true}
				cl.resolved++
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cl.h.add(cl.id, p.in, out, p.call, cl.h.now())
	}
	cl.pending = nil
}

var (
	linRegisters = []string{"r0", "r1", "r2", "r3"}
	linCounters  = []string{"c0", "c1"}
)

func (cl *linClient) run(deadline time.Time) {
	for time.Now().Before(deadline) {
		switch p := cl.rng.IntN(100); {
		case p < 35:
			cl.vals++
			key := linRegisters[cl.rng.IntN(len(linRegisters))]
			cl.write(linInput{Kind: linPut, Key: key, Value: fmt.Sprintf("v%d.%d", cl.id, cl.vals)})
		case p < 60:
			key := linCounters[cl.rng.IntN(len(linCounters))]
			cl.write(linInput{Kind: linIncr, Family: "counters", Key: key, Value: strconv.Itoa(1 + cl.rng.IntN(5))})
		case p < 80:
			cl.read(linInput{Kind: linGet, Key: linRegisters[cl.rng.IntN(len(linRegisters))]})
		default:
			cl.read(linInput{Kind: linGet, Family: "counters", Key: linCounters[cl.rng.IntN(len(linCounters))]})
		}
	}
}

// target returns the node to talk to, waiting while it is paused (as a
// request to a stopped process would); nil when it is down or the wait
// outlasted ctx.
func (cl *linClient) target(ctx context.Context) *Replica {
	r, paused := cl.c.node(cl.node)
	if paused != nil {
		select {
		case <-paused:
		case <-ctx.Done():
			return nil
		}
		r, _ = cl.c.node(cl.node)
	}
	return r
}

// redirect follows a NotLeaderError naming a leader. Otherwise (no
// leader known, an unknown outcome, a timeout) a patient client (even ID)
// waits and asks the same node again, up to 40 times in a row (about a second), as a client
// keeping its connection would, and an impatient one tries another node;
// both move on when the node is down (err nil) or closed.
func (cl *linClient) redirect(err error) {
	var nl *NotLeaderError
	if errors.As(err, &nl) && nl.LeaderID != "" {
		cl.noLeader = 0
		for i, p := range cl.c.peers {
			if p.ID == nl.LeaderID && i != cl.node {
				cl.node = i
				return
			}
		}
	}
	down := err == nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrStopped)
	if !down && cl.id%2 == 0 && cl.noLeader < 40 {
		cl.noLeader++
		time.Sleep(time.Duration(10+cl.rng.IntN(30)) * time.Millisecond)
		return
	}
	cl.noLeader = 0
	cl.node = (cl.node + 1 + cl.rng.IntN(2)) % len(cl.c.peers)
	time.Sleep(time.Duration(5+cl.rng.IntN(20)) * time.Millisecond)
}

func (cl *linClient) command(in linInput) *Command {
	cl.seq++
	op := Op{Kind: OpPut, Family: in.Family, Key: []byte(in.Key), Value: []byte(in.Value)}
	cmd := &Command{ClientID: cl.cid, Seq: cl.seq, Ops: []Op{op}}
	if in.Kind == linIncr {
		cmd.Ops[0].Kind = OpMerge
		cmd.Ops = append(cmd.Ops, Op{Kind: OpGet, Family: in.Family, Key: []byte(in.Key)})
	}
	return cmd
}

// write applies one put or increment, in up to 4 attempts within 2 s
// (then the client moves on to its next operation); recorded
// with its output when acknowledged, as unknown when some attempt may have
// been proposed, dropped when none was.
func (cl *linClient) write(in linInput) {
	cmd := cl.command(in)
	call := cl.h.now()
	maybe := false
	for try, end := 0, time.Now().Add(2*time.Second); try < 4 && time.Now().Before(end); try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		r := cl.target(ctx)
		if r == nil {
			cancel()
			cl.redirect(nil)
			continue
		}
		res, err := r.Apply(ctx, cmd)
		cancel()
		if err == nil {
			if res.Err != nil {
				cl.c.t.Errorf("client %d: %v refused: %v", cl.id, in, res.Err)
				return
			}
			out := linOutput{}
			if in.Kind == linIncr {
				out.Value, out.Found = string(res.Values[1]), true
			}
			cl.h.add(cl.id, in, out, call, cl.h.now())
			cl.noLeader = 0
			return
		}
		var nl *NotLeaderError
		if !errors.As(err, &nl) {
			maybe = true // proposed, or cannot tell: may have happened
		}
		cl.redirect(err)
	}
	switch {
	case maybe && in.Kind == linIncr:
		cl.pending = append(cl.pending, pendingWrite{in, cmd, call})
	case maybe:
		cl.h.add(cl.id, in, linOutput{Unknown: true}, call, 0)
	default:
		cl.h.drop()
	}
}

// read is one get; a failed one is dropped (after moving to another node
// when told to).
func (cl *linClient) read(in linInput) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	r := cl.target(ctx)
	if r == nil {
		cl.h.drop()
		cl.redirect(nil)
		return
	}
	call := cl.h.now()
	var v []byte
	var err error
	if cl.mode == readMutant {
		v, err = r.StaleGet(in.Family, []byte(in.Key))
	} else {
		v, err = r.Get(ctx, in.Family, []byte(in.Key))
	}
	ret := cl.h.now()
	switch {
	case err == nil:
		cl.noLeader = 0
		cl.h.add(cl.id, in, linOutput{Value: string(v), Found: true}, call, ret)
	case errors.Is(err, ErrNotFound):
		cl.h.add(cl.id, in, linOutput{}, call, ret)
	default:
		cl.h.drop()
		cl.redirect(err)
	}
}
