package base

import (
	"encoding/binary"
	"fmt"
)

// Decoder reads the uvarints and uvarint-length-prefixed byte strings that
// sieve's record formats (batches, version edits) are made of, from B. The
// first failure sticks in Err, an error wrapping ErrCorruption whose text
// starts with What (when set); every read after it returns zero values.
type Decoder struct {
	B    []byte
	What string
	Err  error
}

// Failf records a decoding failure unless one is already recorded.
func (d *Decoder) Failf(format string, args ...any) {
	if d.Err != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if d.What != "" {
		msg = d.What + ": " + msg
	}
	d.Err = CorruptionErrorf("%s", msg)
}

// Uvarint reads a uvarint.
func (d *Decoder) Uvarint() uint64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.Failf("bad varint")
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Bytes reads a uvarint length and that many bytes; the result aliases B,
// with its capacity capped at its length.
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
	if d.Err != nil {
		return nil
	}
	if n > uint64(len(d.B)) {
		d.Failf("length %d beyond the end (%d left)", n, len(d.B))
		return nil
	}
	out := d.B[:n:n]
	d.B = d.B[n:]
	return out
}
