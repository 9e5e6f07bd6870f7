package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sievedb/sieve"
)

// metaFamily is the state machine's reserved column family: the applied
// index and the deduplication table, written in the same batch as the
// entries they describe.
const metaFamily = "_replica"

var (
	keyApplied = []byte("applied")
	prefixDup  = byte('d') // 'd' | client ID (8 BE) | seq (8 BE) -> encoded Result
)

// keyLimit bounds every user key: keys must be below it, so that a
// snapshot restore can replace a family's whole key range ["", keyLimit)
// with IngestAndExcise. 64 bytes of 0xff: only keys starting with 64 0xff
// bytes are refused.
var keyLimit = bytes.Repeat([]byte{0xff}, 64)

// maxApplyBatch is where ApplyBatch commits a sieve batch early and starts
// another, keeping it far below sieve.MaxBatchSize.
const maxApplyBatch = 64 << 20

// dedupGCEvery: a deduplicated command whose Seq is a multiple of it
// deletes its client's entries below Acked.
const dedupGCEvery = 64

// fsm is the replicated state machine: a sieve DB written only by
// ApplyBatch and Restore.
type fsm struct {
	db       *sieve.DB
	dir      string
	opts     *sieve.Options
	families map[string]*sieve.ColumnFamilyOptions

	mu   sync.RWMutex // guards cfs
	cfs  map[string]*sieve.ColumnFamily
	meta *sieve.ColumnFamily

	applied  atomic.Uint64
	restores atomic.Int64 // snapshots restored since open
	failed   atomic.Pointer[error]
	onFail   func(error) // called once, on the first engine failure
	// onApply and onRestore are Config.OnApply and Config.OnRestore.
	onApply   func([]*Command)
	onRestore func()
	snaps     raft.SnapshotStore
}

var _ raft.BatchingFSM = (*fsm)(nil)

func openFSM(dir string, opts *sieve.Options, families map[string]*sieve.ColumnFamilyOptions) (*fsm, error) {
	o := sieve.Options{}
	if opts != nil {
		o = *opts
	}
	db, err := sieve.Open(filepath.Join(dir, "data"), &o)
	if err != nil {
		return nil, err
	}
	f := &fsm{db: db, dir: dir, opts: &o, families: families, cfs: map[string]*sieve.ColumnFamily{}}
	if f.meta, err = db.OpenColumnFamily(metaFamily, nil); err != nil {
		db.Close()
		return nil, err
	}
	if err := f.loadApplied(); err != nil {
		db.Close()
		return nil, err
	}
	return f, nil
}

func (f *fsm) loadApplied() error {
	v, err := f.meta.Get(keyApplied)
	switch {
	case errors.Is(err, sieve.ErrNotFound):
		f.applied.Store(0)
	case err != nil:
		return err
	case len(v) != 8:
		return fmt.Errorf("replica: applied index of %d bytes", len(v))
	default:
		f.applied.Store(binary.BigEndian.Uint64(v))
	}
	return nil
}

// familyName maps "" to "default".
func familyName(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

// family returns the handle of the family name, opening (and so
// creating) it when create is set; nil, nil for a family that does not
// exist when create is not.
func (f *fsm) family(name string, create bool) (*sieve.ColumnFamily, error) {
	name = familyName(name)
	f.mu.RLock()
	cf := f.cfs[name]
	f.mu.RUnlock()
	if cf != nil {
		return cf, nil
	}
	if !create && !hasName(f.db.ColumnFamilies(), name) {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cf := f.cfs[name]; cf != nil {
		return cf, nil
	}
	cf, err := f.db.OpenColumnFamily(name, f.families[name])
	if err != nil {
		return nil, err
	}
	f.cfs[name] = cf
	return cf, nil
}

func hasName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func (f *fsm) hasMerger(name string) bool {
	name = familyName(name)
	if o := f.families[name]; o != nil && o.Merger != nil {
		return true
	}
	return name == "default" && f.opts.Merger != nil
}

// fail records the first engine failure and reports it (the node stops).
func (f *fsm) fail(err error) error {
	err = fmt.Errorf("%w: %w", ErrStopped, err)
	if f.failed.CompareAndSwap(nil, &err) && f.onFail != nil {
		go f.onFail(err)
	}
	return *f.failed.Load()
}

// failure returns the recorded engine failure, if any.
func (f *fsm) failure() error {
	if p := f.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Apply applies one entry (raft calls ApplyBatch; this is for the FSM
// interface).
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies the entries in one synced sieve batch that also
// records the last entry's index as the applied index; entries at or
// below the recorded index (a replay after a restart) are skipped. Each
// response is a *Result, or an error when the node has stopped: an
// engine error stops the node (onFail shuts raft down) rather than let a
// replica skip an entry the others applied; its durable applied index
// stays before the failed batch, so a restart replays it.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	resps := make([]any, len(logs))
	if err := f.failure(); err != nil {
		for i := range resps {
			resps[i] = err
		}
		return resps
	}
	b := f.db.NewIndexedBatch()
	applied := f.applied.Load()
	last := applied
	var done []*Command // applied into b, for onApply
	for i, l := range logs {
		if l.Index <= applied {
			resps[i] = &Result{Duplicate: true}
			continue
		}
		if b.Size() > maxApplyBatch {
			if err := f.commit(b, last, done); err != nil {
				return fillErr(resps, err)
			}
			b, done = f.db.NewIndexedBatch(), nil
		}
		last = l.Index
		if l.Type != raft.LogCommand {
			continue
		}
		res, cmd, err := f.applyEntry(b, l)
		if err != nil {
			return fillErr(resps, f.fail(err))
		}
		resps[i] = res
		if cmd != nil && f.onApply != nil {
			done = append(done, cmd)
		}
	}
	if last > applied {
		if err := f.commit(b, last, done); err != nil {
			return fillErr(resps, err)
		}
	}
	return resps
}

func fillErr(resps []any, err error) []any {
	for i := range resps {
		resps[i] = err
	}
	return resps
}

// commit applies b with the applied index set to last, synced, then
// shows onApply the commands applied in it.
func (f *fsm) commit(b *sieve.Batch, last uint64, done []*Command) error {
	if err := b.PutCF(f.meta, keyApplied, binary.BigEndian.AppendUint64(nil, last)); err != nil {
		return f.fail(err)
	}
	if err := f.db.Apply(b, sieve.Sync); err != nil {
		return f.fail(err)
	}
	f.applied.Store(last)
	if len(done) > 0 {
		f.onApply(done)
	}
	return nil
}

func dedupKey(client, seq uint64) []byte {
	k := []byte{prefixDup}
	k = binary.BigEndian.AppendUint64(k, client)
	return binary.BigEndian.AppendUint64(k, seq)
}

// applyEntry adds one command to b and returns its result, and the
// command when it was applied (not refused, not a duplicate). An error is
// an engine error (the node stops); a refused command is a Result.
func (f *fsm) applyEntry(b *sieve.Batch, l *raft.Log) (*Result, *Command, error) {
	cmd, err := decodeCommand(l.Data)
	if err != nil {
		return &Result{Err: refuse("%v", err)}, nil, nil
	}
	if cmd.Term != 0 && cmd.Term != l.Term {
		return &Result{Err: refuse("proposed for term %d, appended in term %d", cmd.Term, l.Term)}, nil, nil
	}
	var dk []byte
	if cmd.ClientID != 0 {
		dk = dedupKey(cmd.ClientID, cmd.Seq)
		v, err := b.GetCF(f.meta, dk)
		if err == nil {
			res, err := decodeResult(v)
			return res, nil, err
		}
		if !errors.Is(err, sieve.ErrNotFound) {
			return nil, nil, err
		}
	}
	res, err := f.applyOps(b, cmd.Ops)
	if err != nil {
		return nil, nil, err
	}
	applied := cmd
	if res.Err != nil {
		applied = nil
	}
	if dk == nil {
		return res, applied, nil
	}
	if err := b.PutCF(f.meta, dk, encodeResult(res)); err != nil {
		return nil, nil, err
	}
	if cmd.Seq%dedupGCEvery == 0 && cmd.Acked > 0 {
		err = b.DeleteRangeCF(f.meta, dedupKey(cmd.ClientID, 0), dedupKey(cmd.ClientID, cmd.Acked))
	}
	return res, applied, err
}

// applyOps validates every operation, then adds them to b in order.
func (f *fsm) applyOps(b *sieve.Batch, ops []Op) (*Result, error) {
	for i := range ops {
		if cerr := f.validate(&ops[i]); cerr != nil {
			return &Result{Err: cerr}, nil
		}
	}
	res := &Result{Values: make([][]byte, len(ops)), Found: make([]bool, len(ops))}
	for i, op := range ops {
		cf, err := f.family(op.Family, op.Kind != OpGet)
		if err != nil {
			return nil, err
		}
		switch op.Kind {
		case OpPut:
			if op.Expiry.IsZero() {
				err = b.PutCF(cf, op.Key, op.Value)
			} else {
				err = b.PutCFWithExpiry(cf, op.Key, op.Value, op.Expiry)
			}
		case OpDelete:
			err = b.DeleteCF(cf, op.Key)
		case OpDeleteRange:
			err = b.DeleteRangeCF(cf, op.Key, op.End)
		case OpMerge:
			err = b.MergeCF(cf, op.Key, op.Value)
		case OpGet:
			if cf == nil {
				continue
			}
			res.Values[i], err = b.GetCF(cf, op.Key)
			res.Found[i] = err == nil
			if errors.Is(err, sieve.ErrNotFound) {
				err = nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// validate checks op the way sieve's batch would, so that a bad command is
// refused alone instead of failing the whole batch.
func (f *fsm) validate(op *Op) *CommandError {
	switch {
	case op.Kind < OpPut || op.Kind > OpGet:
		return refuse("unknown operation %d", op.Kind)
	case familyName(op.Family) == metaFamily:
		return refuse("column family %q is reserved", metaFamily)
	case len(op.Family) > 255:
		return refuse("column family name of %d bytes", len(op.Family))
	case len(op.Key) > sieve.MaxKeySize || len(op.Value) > sieve.MaxValueSize || len(op.End) > sieve.MaxKeySize:
		return refuse("key or value too large")
	case bytes.Compare(op.Key, keyLimit) >= 0:
		return refuse("keys starting with 64 0xff bytes are reserved")
	case op.Kind == OpDeleteRange && bytes.Compare(op.Key, op.End) > 0:
		return refuse("delete range start %q > end %q", op.Key, op.End)
	case op.Kind == OpMerge && !f.hasMerger(op.Family):
		return refuse("column family %q has no merger", familyName(op.Family))
	}
	return nil
}

// get reads key from family on this node's state machine.
func (f *fsm) get(family string, key []byte) ([]byte, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	cf, err := f.family(family, false)
	if err != nil {
		return nil, err
	}
	if cf == nil {
		return nil, sieve.ErrNotFound
	}
	return cf.Get(key)
}

// Snapshot pins the state with a checkpoint (hard links, no copy); Persist
// streams it.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	dir := filepath.Join(f.dir, "checkpoints", fmt.Sprintf("%020d-%d", f.applied.Load(), time.Now().UnixNano()))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	if err := f.db.Checkpoint(dir); err != nil {
		return nil, err
	}
	return &fsmSnapshot{dir: dir, opts: f.opts, families: f.families}, nil
}

// Restore replaces the state with the snapshot's (see restore).
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	err := f.restore(rc)
	if err != nil {
		return f.fail(err)
	}
	if f.onRestore != nil {
		f.onRestore()
	}
	return nil
}

func (f *fsm) close() error { return f.db.Close() }
