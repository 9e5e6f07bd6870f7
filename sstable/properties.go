package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/sievedb/sieve/internal/base"
)

// Properties describe a table; they are stored in its properties block (see
// FORMAT.md "Properties").
type Properties struct {
	FormatVersion TableFormat

	NumEntries   uint64
	NumDeletions uint64
	NumSets      uint64
	NumMerges    uint64

	// SmallestKey and LargestKey are the table's key range; zero in an
	// empty table.
	SmallestKey, LargestKey base.InternalKey
	SmallestSeq, LargestSeq uint64

	RawKeySize   uint64 // sum of encoded internal key lengths
	RawValueSize uint64 // sum of value lengths

	NumDataBlocks uint64
	DataSize      uint64 // data blocks on disk, trailers included
	RawDataSize   uint64 // data block contents before compression
	IndexSize     uint64 // index block contents as stored
	FilterSize    uint64 // filter block contents; 0 without a filter
	// FilterPartitions and IndexPartitions count the partitions of a
	// partitioned filter or index (TableFormatV3); 0 when written whole.
	// FilterSize is then the partitions' total, IndexSize that of the
	// partitions and the top-level index as stored.
	FilterPartitions, IndexPartitions uint64

	FilterPolicy     string  // Policy.Name(); "" without a filter
	FilterKeys       uint64  // distinct user keys added to the filter
	FilterBitsPerKey float64 // 8*FilterSize/(FilterKeys+FilterPrefixes)
	// FilterPrefixes counts the key prefixes added to the filter beside
	// the keys; PrefixExtractor names the function that cut them ("":
	// the filter holds no prefixes and never rules a prefix out).
	FilterPrefixes  uint64
	PrefixExtractor string
	// ExternalID is the unique ID of an external table (written for
	// ingestion); "" for a database's own tables.
	ExternalID string
	// ColumnFamily is the decimal ID of the column family a database
	// wrote the table for ("" in tables written before it was recorded,
	// and in external tables); sieve.Repair reads it.
	ColumnFamily string

	// Writer options the table was built with.
	BlockSize            uint64
	BlockRestartInterval uint64
	Compression          string
}

type propKind uint8

const (
	propUvarint propKind = iota
	propF64
	propString
	propIKey
)

// propField binds a property name to a Properties field. The table is the
// single source of names: encode, decode and Describe all walk it.
type propField struct {
	name string
	kind propKind
	u64  func(*Properties) *uint64
	f64  func(*Properties) *float64
	str  func(*Properties) *string
	ikey func(*Properties) *base.InternalKey
	// omitZero leaves the property out of the block (and of String)
	// when it is zero or empty: properties added later, so that a table
	// without them is byte-for-byte what earlier builds wrote.
	omitZero bool
}

var propFields = func() []propField {
	u := func(name string, f func(*Properties) *uint64) propField {
		return propField{name: name, kind: propUvarint, u64: f}
	}
	omit := func(f propField) propField { f.omitZero = true; return f }
	fs := []propField{
		u("sieve.block.restart.interval", func(p *Properties) *uint64 { return &p.BlockRestartInterval }),
		u("sieve.block.size", func(p *Properties) *uint64 { return &p.BlockSize }),
		{name: "sieve.compression", kind: propString, str: func(p *Properties) *string { return &p.Compression }},
		u("sieve.data.blocks", func(p *Properties) *uint64 { return &p.NumDataBlocks }),
		u("sieve.data.size", func(p *Properties) *uint64 { return &p.DataSize }),
		u("sieve.data.size.raw", func(p *Properties) *uint64 { return &p.RawDataSize }),
		{name: "sieve.column.family", kind: propString, str: func(p *Properties) *string { return &p.ColumnFamily }, omitZero: true},
		{name: "sieve.external.id", kind: propString, str: func(p *Properties) *string { return &p.ExternalID }, omitZero: true},
		{name: "sieve.filter.bits.per.key", kind: propF64, f64: func(p *Properties) *float64 { return &p.FilterBitsPerKey }},
		u("sieve.filter.keys", func(p *Properties) *uint64 { return &p.FilterKeys }),
		{name: "sieve.filter.prefixes", kind: propUvarint, u64: func(p *Properties) *uint64 { return &p.FilterPrefixes }, omitZero: true},
		{name: "sieve.filter.policy", kind: propString, str: func(p *Properties) *string { return &p.FilterPolicy }},
		omit(u("sieve.filter.partitions", func(p *Properties) *uint64 { return &p.FilterPartitions })),
		u("sieve.filter.size", func(p *Properties) *uint64 { return &p.FilterSize }),
		{name: "sieve.format.version", kind: propUvarint},
		omit(u("sieve.index.partitions", func(p *Properties) *uint64 { return &p.IndexPartitions })),
		u("sieve.index.size", func(p *Properties) *uint64 { return &p.IndexSize }),
		{name: "sieve.key.largest", kind: propIKey, ikey: func(p *Properties) *base.InternalKey { return &p.LargestKey }},
		{name: "sieve.key.smallest", kind: propIKey, ikey: func(p *Properties) *base.InternalKey { return &p.SmallestKey }},
		u("sieve.num.deletions", func(p *Properties) *uint64 { return &p.NumDeletions }),
		u("sieve.num.entries", func(p *Properties) *uint64 { return &p.NumEntries }),
		u("sieve.num.merges", func(p *Properties) *uint64 { return &p.NumMerges }),
		u("sieve.num.sets", func(p *Properties) *uint64 { return &p.NumSets }),
		{name: "sieve.prefix.extractor", kind: propString, str: func(p *Properties) *string { return &p.PrefixExtractor }, omitZero: true},
		u("sieve.raw.key.size", func(p *Properties) *uint64 { return &p.RawKeySize }),
		u("sieve.raw.value.size", func(p *Properties) *uint64 { return &p.RawValueSize }),
		u("sieve.seqnum.largest", func(p *Properties) *uint64 { return &p.LargestSeq }),
		u("sieve.seqnum.smallest", func(p *Properties) *uint64 { return &p.SmallestSeq }),
	}
	sort.Slice(fs, func(a, b int) bool { return fs[a].name < fs[b].name })
	return fs
}()

func findPropField(name []byte) *propField {
	i := sort.Search(len(propFields), func(i int) bool { return propFields[i].name >= string(name) })
	if i < len(propFields) && propFields[i].name == string(name) {
		return &propFields[i]
	}
	return nil
}

// encodeValue appends the stored value of f for p; ok is false when the
// property is omitted (the key range of an empty table).
func (f *propField) encodeValue(dst []byte, p *Properties) ([]byte, bool) {
	if f.omitZero && f.isZero(p) {
		return dst, false
	}
	switch {
	case f.name == "sieve.format.version":
		return binary.AppendUvarint(dst, uint64(p.FormatVersion)), true
	case f.kind == propUvarint && f.omitZero && *f.u64(p) == 0:
		return dst, false
	case f.kind == propUvarint:
		return binary.AppendUvarint(dst, *f.u64(p)), true
	case f.kind == propF64:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(*f.f64(p))), true
	case f.kind == propString:
		return append(dst, *f.str(p)...), true
	default:
		k := *f.ikey(p)
		if p.NumEntries == 0 {
			return dst, false
		}
		return k.AppendEncoded(dst), true
	}
}

// isZero reports whether f's value in p is zero or empty (only uvarint
// and string properties are ever omitZero).
func (f *propField) isZero(p *Properties) bool {
	switch f.kind {
	case propUvarint:
		return f.u64 != nil && *f.u64(p) == 0
	case propString:
		return *f.str(p) == ""
	}
	return false
}

func (f *propField) decodeValue(v []byte, p *Properties) error {
	switch f.kind {
	case propUvarint:
		x, n := binary.Uvarint(v)
		if n <= 0 || n != len(v) {
			return fmt.Errorf("property %s: bad varint %x", f.name, v)
		}
		if f.u64 == nil {
			if x > math.MaxUint32 {
				return fmt.Errorf("property %s: %d out of range", f.name, x)
			}
			p.FormatVersion = TableFormat(x)
		} else {
			*f.u64(p) = x
		}
	case propF64:
		if len(v) != 8 {
			return fmt.Errorf("property %s: %d bytes, want 8", f.name, len(v))
		}
		*f.f64(p) = math.Float64frombits(binary.LittleEndian.Uint64(v))
	case propString:
		*f.str(p) = string(v)
	case propIKey:
		k, ok := base.DecodeInternalKey(v)
		if !ok {
			return fmt.Errorf("property %s: malformed internal key %x", f.name, v)
		}
		*f.ikey(p) = k.Clone()
	}
	return nil
}

// encodeProperties returns the contents of a properties block.
func encodeProperties(p *Properties) []byte {
	bw := blockWriter{restartInterval: 16} // names share the "sieve." prefix
	var val []byte
	for i := range propFields {
		f := &propFields[i]
		var ok bool
		if val, ok = f.encodeValue(val[:0], p); ok {
			bw.add([]byte(f.name), val)
		}
	}
	return bw.finish()
}

// decodeProperties decodes the contents of a properties block. Names must
// be strictly increasing; unknown names are ignored. Errors are not yet
// marked as corruption; the caller adds file context.
func decodeProperties(data []byte) (*Properties, error) {
	p := &Properties{}
	err := forEachRawEntry(data, func(key, val []byte) error {
		if f := findPropField(key); f != nil {
			return f.decodeValue(val, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.NumEntries != p.NumDeletions+p.NumSets+p.NumMerges {
		return nil, fmt.Errorf("properties: %d entries but %d deletions + %d sets + %d merges",
			p.NumEntries, p.NumDeletions, p.NumSets, p.NumMerges)
	}
	return p, nil
}

// forEachRawEntry walks a block whose keys are plain byte strings that must
// be strictly increasing (metaindex and properties blocks).
func forEachRawEntry(data []byte, fn func(key, val []byte) error) error {
	blk, err := parseBlock(data)
	if err != nil {
		return err
	}
	var it blockIter
	it.init(blk, false, errCtx{})
	var prev []byte
	for ok := it.first(); ok; ok = it.next() {
		if prev != nil && bytes.Compare(prev, it.key) >= 0 {
			return fmt.Errorf("key %q does not follow %q", it.key, prev)
		}
		prev = append(prev[:0], it.key...)
		if prev == nil {
			prev = []byte{}
		}
		if err := fn(it.key, it.val); err != nil {
			return err
		}
	}
	return it.err
}

// String formats the properties one per line, in name order.
func (p *Properties) String() string {
	var buf bytes.Buffer
	p.describe(&buf, "")
	return buf.String()
}

func (p *Properties) describe(w io.Writer, indent string) {
	for i := range propFields {
		f := &propFields[i]
		if f.omitZero && f.isZero(p) {
			continue
		}
		fmt.Fprintf(w, "%s%s: ", indent, f.name)
		switch {
		case f.name == "sieve.format.version":
			fmt.Fprintf(w, "%d", uint32(p.FormatVersion))
		case f.kind == propUvarint:
			fmt.Fprintf(w, "%d", *f.u64(p))
		case f.kind == propF64:
			fmt.Fprintf(w, "%.3f", *f.f64(p))
		case f.kind == propString:
			fmt.Fprintf(w, "%q", *f.str(p))
		default:
			if p.NumEntries == 0 {
				fmt.Fprint(w, "-")
			} else {
				fmt.Fprint(w, f.ikey(p).String())
			}
		}
		fmt.Fprintln(w)
	}
}

// count adds entry (k, val), the next in the table's order, to the
// properties computed from the entries: the counts by kind, the smallest
// key, the sequence-number range and the raw sizes. The writer counts what
// it writes, Verify what it reads back.
func (p *Properties) count(k base.InternalKey, val []byte) {
	if p.NumEntries == 0 {
		p.SmallestKey = k.Clone()
		p.SmallestSeq, p.LargestSeq = k.SeqNum(), k.SeqNum()
	}
	p.NumEntries++
	switch k.Kind() {
	case base.KindDelete:
		p.NumDeletions++
	case base.KindSet, base.KindSetExpiring:
		p.NumSets++
	case base.KindMerge:
		p.NumMerges++
	}
	p.SmallestSeq = min(p.SmallestSeq, k.SeqNum())
	p.LargestSeq = max(p.LargestSeq, k.SeqNum())
	p.RawKeySize += uint64(k.Size())
	p.RawValueSize += uint64(len(val))
}
