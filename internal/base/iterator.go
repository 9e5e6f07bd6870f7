package base

// InternalIterator is the cursor over internal keys that every layer of the
// read path implements (memtables, block and table iterators, level and
// merging iterators). Entries come in CompareInternal order.
//
// Positioning methods report whether the iterator is positioned at an entry
// afterwards. Key and Value are valid only until the next positioning call
// and must not be modified. After a positioning method returns false, Error
// tells an exhausted iterator (nil) from a failed one, and the iterator is
// unpositioned: only First, Last, SeekGE and SeekLT may follow (Next and
// Prev return false). Next and Prev may alternate freely while positioned.
//
// An InternalIterator is not safe for concurrent use.
type InternalIterator interface {
	// First moves to the first entry.
	First() bool
	// Last moves to the last entry.
	Last() bool
	// SeekGE moves to the first entry whose user key is >= ukey.
	SeekGE(ukey []byte) bool
	// SeekLT moves to the last entry whose user key is < ukey.
	SeekLT(ukey []byte) bool
	// Next moves to the following entry.
	Next() bool
	// Prev moves to the preceding entry.
	Prev() bool
	// Key returns the current entry's key.
	Key() InternalKey
	// Value returns the current entry's value.
	Value() []byte
	// Error returns the error that stopped the iterator, if any.
	Error() error
	// Close releases the iterator's resources and returns Error().
	Close() error
}
