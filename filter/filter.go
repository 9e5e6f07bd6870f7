// Package filter provides the table filters that sieve embeds in every
// SSTable — a cache-line-blocked Bloom filter (the default), a classic Bloom
// filter and a cuckoo filter — behind the Policy/Builder/Reader contract,
// plus standalone mutable Bloom and cuckoo filters.
//
// The package imports nothing of the engine and can be used on its own.
package filter

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
