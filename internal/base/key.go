package base

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Kind is the kind of an internal key: what the write did to the user key.
// The numeric values are part of the on-disk formats (WAL batches and
// SSTables); never renumber them.
type Kind uint8

const (
	// KindDelete is a tombstone.
	KindDelete Kind = 0
	// KindSet is a full value.
	KindSet Kind = 1
	// KindMerge is a merge operand, resolved by the column family's merger.
	KindMerge Kind = 2

	// KindMax is the largest valid kind. Seeking to (ukey, seq, KindMax)
	// positions before every version of ukey visible at seq, because for
	// equal user keys and sequence numbers larger trailers sort first.
	KindMax = KindSetExpiring

	// KindRangeDelete is a range tombstone in a batch (key = start, value
	// = end, deleting [start, end)). It is not a point kind: memtables and
	// tables keep range tombstones apart from their point entries (package
	// rangedel), so Valid is false for it.
	KindRangeDelete Kind = 3

	// KindSetExpiring is a full value with a deadline: its stored value is
	// the deadline (unix nanoseconds, 8 bytes little-endian) followed by
	// the value. From its deadline on it reads as a Delete (expiry.go in
	// the root package).
	KindSetExpiring Kind = 4
)

var kindNames = [...]string{KindDelete: "DEL", KindSet: "SET", KindMerge: "MERGE", KindRangeDelete: "RANGEDEL", KindSetExpiring: "SETEXP"}

// String returns the kind's name: SET, DEL, MERGE, RANGEDEL or SETEXP.
func (k Kind) String() string { return EnumName(k, kindNames[:], "KIND") }

// Valid reports whether k is a kind this version of sieve understands.
func (k Kind) Valid() bool { return k <= KindMax && k != KindRangeDelete }

// IsSet reports whether k is a full value (Set or SetExpiring).
func (k Kind) IsSet() bool { return k == KindSet || k == KindSetExpiring }

// ExpiryLen is the length of the deadline that starts a SetExpiring value.
const ExpiryLen = 8

// SplitExpiring returns the deadline (unix nanoseconds) and the value of
// a SetExpiring entry's stored value; ok is false if it is too short.
func SplitExpiring(v []byte) (deadline int64, value []byte, ok bool) {
	if len(v) < ExpiryLen {
		return 0, nil, false
	}
	return int64(binary.LittleEndian.Uint64(v)), v[ExpiryLen:], true
}

// AppendExpiring appends a SetExpiring entry's stored value to dst.
func AppendExpiring(dst []byte, deadline int64, value []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(deadline))
	return append(dst, value...)
}

// SeqNumMax is the largest sequence number; sequence numbers take the top
// 56 bits of a trailer.
const SeqNumMax = uint64(1)<<56 - 1

// TrailerLen is the length of the trailer that follows the user key in an
// encoded internal key.
const TrailerLen = 8

// MakeTrailer packs a sequence number and kind into a trailer.
func MakeTrailer(seq uint64, kind Kind) uint64 { return seq<<8 | uint64(kind) }

// InternalKey is a user key with the sequence number and kind of one write.
//
// Encoded form: the user key bytes followed by the trailer (seq<<8 | kind)
// as 8 little-endian bytes.
type InternalKey struct {
	UserKey []byte
	Trailer uint64
}

// MakeInternalKey builds an InternalKey.
func MakeInternalKey(ukey []byte, seq uint64, kind Kind) InternalKey {
	return InternalKey{UserKey: ukey, Trailer: MakeTrailer(seq, kind)}
}

// SeqNum returns the key's sequence number.
func (k InternalKey) SeqNum() uint64 { return k.Trailer >> 8 }

// Kind returns the key's kind.
func (k InternalKey) Kind() Kind { return Kind(k.Trailer & 0xff) }

// Size returns the length of the encoded key.
func (k InternalKey) Size() int { return len(k.UserKey) + TrailerLen }

// Encode writes the encoded key into buf, which must hold k.Size() bytes.
func (k InternalKey) Encode(buf []byte) {
	n := copy(buf, k.UserKey)
	binary.LittleEndian.PutUint64(buf[n:], k.Trailer)
}

// AppendEncoded appends the encoded key to dst.
func (k InternalKey) AppendEncoded(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.Trailer)
}

// Clone returns a copy of k that does not share memory with it.
func (k InternalKey) Clone() InternalKey {
	return InternalKey{UserKey: append([]byte(nil), k.UserKey...), Trailer: k.Trailer}
}

// String formats k as "user key"#seqnum,KIND.
func (k InternalKey) String() string {
	return fmt.Sprintf("%q#%d,%s", k.UserKey, k.SeqNum(), k.Kind())
}

// DecodeInternalKey splits an encoded internal key. ok is false when the
// encoding is too short to hold a trailer or names an unknown kind; the
// caller reports that as corruption with its own context. The returned user
// key aliases encoded.
func DecodeInternalKey(encoded []byte) (k InternalKey, ok bool) {
	n := len(encoded) - TrailerLen
	if n < 0 {
		return InternalKey{}, false
	}
	k = InternalKey{UserKey: encoded[:n:n], Trailer: binary.LittleEndian.Uint64(encoded[n:])}
	return k, k.Kind().Valid()
}

// CompareInternal orders internal keys: by user key ascending, then by
// trailer descending, so the newest version of a user key comes first.
func CompareInternal(a, b InternalKey) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}

// CompareEncoded orders two encoded internal keys as CompareInternal does.
// Both must be at least TrailerLen long.
func CompareEncoded(a, b []byte) int {
	na, nb := len(a)-TrailerLen, len(b)-TrailerLen
	if c := bytes.Compare(a[:na], b[:nb]); c != 0 {
		return c
	}
	ta, tb := binary.LittleEndian.Uint64(a[na:]), binary.LittleEndian.Uint64(b[nb:])
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

// SharedPrefixLen returns the length of the longest common prefix of a and
// b.
func SharedPrefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// EnumName is the String method of a small enumeration: names[v], or
// typ(v) for a value without a name.
func EnumName[T ~uint8](v T, names []string, typ string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}
