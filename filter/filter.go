// Package filter provides the table filters that sieve embeds in every
// SSTable — a cache-line-blocked Bloom filter (the default), a classic Bloom
// filter, a cuckoo filter, a binary fuse filter and a Ribbon filter — behind the Policy/Builder/Reader contract,
// plus standalone mutable Bloom and cuckoo filters.
//
// # Names
//
// A name means one layout throughout the package. Bare "Bloom" is the
// cache-line-blocked Bloom filter (Bloom, BloomProbes, FormatBlockedBloom);
// "StandardBloom" is the classic one, k probes anywhere in one bit array
// (StandardBloom, FormatStandardBloom, and the standalone
// StandardBloomFilter, which sets the same bits). "Cuckoo" is one table of
// 4-slot buckets of f-bit fingerprints (Cuckoo, FormatCuckoo, and the
// standalone CuckooTableFilter, which adds deletion). CuckooTableFilter is
// not sketchcol.CuckooFilter: that one is RedisBloom's CF.* value, a stack
// of growing sub-filters of 8-bit fingerprints; this one is a single
// fixed-size table. BlockInfo describes a filter block (what Inspect
// reads); the location of a block in an SSTable is sstable.BlockLocation.
//
// The package imports nothing of the engine and can be used on its own.
//
// # Choosing a filter
//
//   - Bloom(bitsPerKey): one 64-byte cache line per key, so a probe costs one
//     cache miss. At 10 bits/key it measures about 0.83% false positives,
//     within 1% of a classic Bloom filter (0.82%), because each line picks the
//     best of four probe patterns for the keys that fall in it (FORMAT.md).
//   - StandardBloom(bitsPerKey): the textbook filter, k probes anywhere in
//     the array (k cache lines per lookup; they are loaded in parallel). Its
//     rate follows (1 − e^(−kn/m))^k closely; use it to compare against the
//     math, or for filters that stay in cache.
//   - Cuckoo(fingerprintBits): 4-slot buckets holding f-bit fingerprints. At
//     f = 12 it gives about 0.19% at about 12.6 bits/key; lower rates than a
//     Bloom filter at the same space once f ≥ 10 or so.
//   - BinaryFuse(8 or 16): a static 3-wise binary fuse filter (Graf and
//     Lemire), 2^-f false positives for about 1.13·f bits/key (0.39% at
//     9.0 bits/key for f = 8), three random reads per probe.
//   - Ribbon(bitsPerKey): a Standard Ribbon filter (Dillinger and Walzer),
//     fractional bits/key, about 1% at 7 bits/key where Bloom needs 10;
//     slower to build than Bloom.
//   - None: tables carry no filter; every lookup reads the table.
//
// The rates above are the expected ones (ExpectedFPR). To measure rates,
// probe and build times on 1M keys on your machine:
//
//	go test -run '^$' -bench 'Probe|Build' ./filter
//
// A filter answers "maybe" or "certainly not". It must never decide
// permissions or billing: a false positive is a legal answer.
//
// # Concurrency
//
// Policies are immutable and may be shared by any number of goroutines.
// A Builder belongs to one goroutine. Readers are immutable views of their
// block and answer MayContain from any number of goroutines; MayContain does
// not allocate. The standalone StandardBloomFilter and CuckooTableFilter
// are not safe for concurrent mutation: guard them with a lock, or use Test
// only.
//
// # Formats
//
// Every block this package writes is self-describing: its last byte is a
// Format code and the bytes before it hold the parameters (probes, lines,
// buckets, fingerprint bits, key count). FORMAT.md specifies every byte;
// OpenBlock reads any block without being told which policy wrote it.
package filter

import (
	"errors"
	"fmt"
)

// Policy makes table filters. One Policy value may be shared by many tables
// and goroutines.
type Policy interface {
	// Name identifies the policy and its parameters; SSTables record it in
	// their properties.
	Name() string
	// NewBuilder returns a builder for one table's filter.
	NewBuilder() Builder
	// NewReader returns a reader over a finished filter block, without
	// copying it. It returns an error for malformed data.
	NewReader(data []byte) (Reader, error)
}

// Builder accumulates the keys of one table. Call order: Add* Finish.
type Builder interface {
	Add(key []byte)
	Finish() []byte
}

// Reader answers membership queries over one filter block. It is safe for
// concurrent use.
type Reader interface {
	// MayContain reports false only if key was certainly not added.
	MayContain(key []byte) bool
}

// Errors returned by OpenBlock, the policies' NewReader and the standalone
// filters' UnmarshalBinary. Callers test them with errors.Is.
var (
	// ErrUnknownType marks a block whose format code this version does not
	// know (written by a newer version, or not a filter block at all). A
	// table should then read without its filter (fail open) and count it.
	ErrUnknownType = errors.New("filter: unknown filter format")
	// ErrTypeMismatch marks a well-known format handed to a policy or
	// decoder for another format, e.g. a cuckoo block to Bloom(10).NewReader.
	ErrTypeMismatch = errors.New("filter: block is of another filter format")
	// ErrMalformed marks data whose format code is known but whose bytes
	// are inconsistent (truncated, impossible parameters, wrong length).
	ErrMalformed = errors.New("filter: malformed filter data")
)

// Format is the code that ends every filter block and starts every
// standalone filter value. The codes are one linear enum shared by blocks
// and values and are never reused; a changed layout gets a new code.
type Format uint8

const (
	formatReserved           Format = 0 // never written
	FormatBlockedBloom       Format = 1 // v1: k probes in one 64-byte line, per-line pattern choice
	FormatStandardBloom      Format = 2 // v1: classic Bloom, Kirsch–Mitzenmacher double hashing
	FormatCuckoo             Format = 3 // v1: 4-slot buckets, f-bit fingerprints, reflected alternate bucket
	FormatStandardBloomValue Format = 4 // v1: standalone StandardBloomFilter.MarshalBinary
	FormatCuckooTableValue   Format = 5 // v1: standalone CuckooTableFilter.MarshalBinary
	FormatBinaryFuse         Format = 6 // v1: 3-wise binary fuse, 8- or 16-bit fingerprints
	FormatRibbon             Format = 7 // v1: Standard Ribbon, w = 128, interleaved solution
)

// isBlockFormat reports whether f is the code of a table-filter block.
func isBlockFormat(f Format) bool { return int(f) < len(blockOpeners) && blockOpeners[f] != nil }

var formatNames = [...]string{FormatBlockedBloom: "blocked-bloom", FormatStandardBloom: "standard-bloom", FormatCuckoo: "cuckoo",
	FormatStandardBloomValue: "standard-bloom-value", FormatCuckooTableValue: "cuckoo-table-value", FormatBinaryFuse: "binary-fuse", FormatRibbon: "ribbon"}

// String returns the format's name ("blocked-bloom", "cuckoo", ...).
func (f Format) String() string {
	if int(f) < len(formatNames) && formatNames[f] != "" {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// OpenBlock returns a reader for any filter block written by this package,
// dispatching on the format code in the block's last byte. An empty block is
// what None writes; its reader reports every key as possibly present. The
// reader uses data in place: data must not change while the reader is in
// use.
//
// An unknown code returns an error wrapping ErrUnknownType; a known code with
// inconsistent bytes returns an error wrapping ErrMalformed. OpenBlock never
// panics and never reads outside data, whatever data holds.
func OpenBlock(data []byte) (Reader, error) {
	if len(data) == 0 {
		return noFilter{}, nil
	}
	f := blockFormat(data)
	if int(f) < len(blockOpeners) && blockOpeners[f] != nil {
		return blockOpeners[f](data)
	}
	return nil, fmt.Errorf("%w: block format code %d", ErrUnknownType, uint8(f))
}

// blockOpeners decode the table-filter blocks, by format code.
var blockOpeners = [...]func([]byte) (Reader, error){
	FormatBlockedBloom: openBlocked, FormatStandardBloom: openStandard, FormatCuckoo: openCuckoo,
	FormatBinaryFuse: openFuse, FormatRibbon: openRibbon,
}

// policyBase is what every table-filter policy of this package shares: its
// name, and a NewReader that reads blocks of its one format (whatever their
// size: a block carries its own geometry) and refuses any other.
type policyBase struct {
	name   string
	format Format
}

func (p *policyBase) Name() string { return p.name }

func (p *policyBase) NewReader(data []byte) (Reader, error) {
	if err := checkBlockFormat(data, p.format); err != nil {
		return nil, err
	}
	return OpenBlock(data)
}

// blockFormat returns the format code of a non-empty block.
func blockFormat(data []byte) Format { return Format(data[len(data)-1]) }

// checkBlockFormat is the first step of every policy's NewReader: the block
// must carry the policy's own format code.
func checkBlockFormat(data []byte, want Format) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty block (written by None), want %s", ErrTypeMismatch, want)
	}
	switch got := blockFormat(data); {
	case got == want:
		return nil
	case isBlockFormat(got):
		return fmt.Errorf("%w: %s block, want %s", ErrTypeMismatch, got, want)
	default:
		return fmt.Errorf("%w: block format code %d, want %s", ErrUnknownType, uint8(got), want)
	}
}

func malformed(what string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(what, args...))
}

// noFilter is the reader of an empty block: no filter, every key may be
// present.
type noFilter struct{}

func (noFilter) MayContain([]byte) bool     { return true }
func (noFilter) MayContainHash(uint64) bool { return true }

// emptyFilter is the reader of a filter built from zero keys.
type emptyFilter struct{}

func (emptyFilter) MayContain([]byte) bool     { return false }
func (emptyFilter) MayContainHash(uint64) bool { return false }

// The builders that report how a build went (BuildReporter is optional,
// found by a type assertion, so the compiler checks it here).
var (
	_ BuildReporter = (*fuseBuilder)(nil)
	_ BuildReporter = (*ribbonBuilder)(nil)
)

// Every table-filter builder takes hashes (HashBuilder).
var (
	_ HashBuilder = (*blockedBuilder)(nil)
	_ HashBuilder = (*standardBuilder)(nil)
	_ HashBuilder = (*cuckooBuilder)(nil)
	_ HashBuilder = (*fuseBuilder)(nil)
	_ HashBuilder = (*ribbonBuilder)(nil)
)

// blockTrailer returns the fixed-size trailer of a filter block of kind
// what, or ErrMalformed when the block is shorter than it.
func blockTrailer(data []byte, n int, what string) ([]byte, error) {
	if len(data) < n {
		return nil, malformed("%s block of %d bytes is shorter than its %d-byte trailer", what, len(data), n)
	}
	return data[len(data)-n:], nil
}
