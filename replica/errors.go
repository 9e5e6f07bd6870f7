package replica

import (
	"errors"
	"fmt"
)

// NotLeaderError is returned by writes and linearizable reads on a node
// that is not the leader. Leader is the leader's ID and raft address as
// this node knows them (empty when it knows none, during an election).
type NotLeaderError struct {
	LeaderID   string
	LeaderAddr string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "replica: not the leader (no leader known)"
	}
	return fmt.Sprintf("replica: not the leader; the leader is %s at %s", e.LeaderID, e.LeaderAddr)
}

// ErrUnknownOutcome is returned by a write that was proposed but whose
// outcome is not known (the context ended, the leader lost its office or
// shut down before the entry was applied): it may or may not be applied,
// now or later. Retrying the same *Command is safe for a deduplicated
// command (see Command).
var ErrUnknownOutcome = errors.New("replica: write proposed, outcome unknown")

// ErrStopped is returned after the state machine failed to apply a
// committed entry (an engine error): the node stops rather than diverge;
// errors.Is(err, ErrStopped) holds for the wrapped failure. Restarting the
// node replays the entries after its last applied index.
var ErrStopped = errors.New("replica: node stopped after a state machine failure")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("replica: closed")

// CommandError is the deterministic reason a command was refused by the
// state machine (the same on every replica): an unknown operation, a
// merge into a family without a merger, a key too large, a reserved
// family. Nothing of the command was applied.
type CommandError struct{ Msg string }

func (e *CommandError) Error() string { return "replica: command refused: " + e.Msg }

func refuse(format string, args ...any) *CommandError {
	return &CommandError{Msg: fmt.Sprintf(format, args...)}
}
