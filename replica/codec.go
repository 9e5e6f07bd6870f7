package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// errMalformed marks a command or snapshot that does not decode.
var errMalformed = errors.New("replica: malformed encoding")

// decoder reads the uvarint-framed encodings of this package; the first
// failure sticks in err.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errMalformed, what)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("short")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// bytes returns the next length-prefixed field (nil when empty), aliasing
// the input.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("field longer than the input")
		return nil
	}
	if n == 0 {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// OpKind is the kind of one operation of a Command.
type OpKind uint8

const (
	// OpPut sets Key to Value (with Expiry, if not zero: PutWithExpiry).
	OpPut OpKind = iota + 1
	// OpDelete removes Key.
	OpDelete
	// OpDeleteRange removes every key in [Key, End).
	OpDeleteRange
	// OpMerge adds Value as a merge operand of Key (the family needs a
	// Merger in Config.Families). Not idempotent: a Command holding one
	// is deduplicated (see Command).
	OpMerge
	// OpGet reads Key as it is at this point of the command (after the
	// command's earlier operations) and returns it in the Result: a reply
	// computed in the state machine, as INCR's would be (a merge then a
	// get).
	OpGet
)

// Op is one operation of a Command, on the column family named Family
// ("" is the default family).
type Op struct {
	Kind   OpKind
	Family string
	Key    []byte
	Value  []byte
	End    []byte    // OpDeleteRange's exclusive end
	Expiry time.Time // OpPut: zero for none
}

// Command is a set of operations applied atomically, in order, on every
// replica: all of them or, if one is invalid, none (Result.Err says why).
//
// ClientID and Seq identify a command for deduplication: a command with
// ClientID != 0 is applied at most once per (ClientID, Seq), and a repeat
// gets the first application's results. Replica.Apply fills them in (the
// replica's own client ID and its next sequence number) for a command
// holding an OpMerge when ClientID is 0; a caller that gets
// ErrUnknownOutcome retries by passing the same *Command again.
type Command struct {
	Ops      []Op
	ClientID uint64
	Seq      uint64
	// Acked tells the state machine that the client knows the outcome of
	// every sequence number below it, so that their deduplication entries
	// can go (Replica.Apply sets it).
	Acked uint64
	// Term, if not 0, makes the command conditional on its log entry's
	// term: the state machine refuses it (Result.Err, nothing applied, on
	// every node alike) unless the entry was appended in this term. A
	// leader that computed the command from its own state (sieve-server's
	// cluster mode runs a command on the leader and replicates the
	// resulting writes) passes the term it knows that state is complete
	// for (Replica.LeaderTerm): an entry that lands in a later term, after
	// a leadership change the proposer missed, is refused instead of
	// applied over writes its computation did not see.
	Term uint64
}

// commandVersion is the first byte of an encoded command; a command
// with a Term is encoded as commandVersionTerm, the term after the
// version byte.
const (
	commandVersion     = 1
	commandVersionTerm = 2
)

func encodeCommand(c *Command) []byte {
	b := []byte{commandVersion}
	if c.Term != 0 {
		b = binary.AppendUvarint([]byte{commandVersionTerm}, c.Term)
	}
	b = binary.AppendUvarint(b, c.ClientID)
	b = binary.AppendUvarint(b, c.Seq)
	b = binary.AppendUvarint(b, c.Acked)
	b = binary.AppendUvarint(b, uint64(len(c.Ops)))
	for _, op := range c.Ops {
		b = append(b, byte(op.Kind))
		b = appendBytes(b, []byte(op.Family))
		b = appendBytes(b, op.Key)
		b = appendBytes(b, op.Value)
		b = appendBytes(b, op.End)
		var exp int64
		if !op.Expiry.IsZero() {
			exp = op.Expiry.UnixNano()
		}
		b = binary.AppendVarint(b, exp)
	}
	return b
}

func decodeCommand(data []byte) (*Command, error) {
	d := decoder{b: data}
	var term uint64
	switch d.byte() {
	case commandVersion:
	case commandVersionTerm:
		term = d.uvarint()
	default:
		return nil, fmt.Errorf("%w: command version", errMalformed)
	}
	c := &Command{ClientID: d.uvarint(), Seq: d.uvarint(), Acked: d.uvarint(), Term: term}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("op count")
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		op := Op{Kind: OpKind(d.byte()), Family: string(d.bytes())}
		op.Key, op.Value, op.End = d.bytes(), d.bytes(), d.bytes()
		if exp := d.varint(); exp != 0 {
			op.Expiry = time.Unix(0, exp)
		}
		c.Ops = append(c.Ops, op)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return c, d.err
}

// Result is the outcome of one applied Command: Err is nil when it was
// applied, else the reason none of it was; Values holds, per operation,
// what an OpGet read (nil for the other kinds, and for a missing key,
// with Found false).
type Result struct {
	Err    error
	Values [][]byte
	Found  []bool
	// Duplicate is set when the command had been applied before (same
	// ClientID and Seq): nothing was applied again and Values are the
	// first application's.
	Duplicate bool
}

// encodeResult encodes a result for the deduplication table.
func encodeResult(r *Result) []byte {
	var b []byte
	msg := ""
	if r.Err != nil {
		msg = r.Err.Error()
	}
	b = appendBytes(b, []byte(msg))
	b = binary.AppendUvarint(b, uint64(len(r.Values)))
	for i, v := range r.Values {
		f := byte(0)
		if r.Found[i] {
			f = 1
		}
		b = append(b, f)
		b = appendBytes(b, v)
	}
	return b
}

func decodeResult(data []byte) (*Result, error) {
	d := decoder{b: data}
	r := &Result{Duplicate: true}
	if msg := d.bytes(); len(msg) > 0 {
		r.Err = &CommandError{Msg: string(msg)}
	}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("value count")
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		r.Found = append(r.Found, d.byte() == 1)
		r.Values = append(r.Values, d.bytes())
	}
	return r, d.err
}
