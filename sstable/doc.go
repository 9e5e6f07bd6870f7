// Package sstable writes and reads sieve's sorted string tables: immutable
// files of internal keys and values in prefix-compressed, checksummed data
// blocks, with an index block, a whole-table filter over user keys, a
// properties block and a fixed-size footer. FORMAT.md in this directory is
// the specification; the code follows it.
//
// Writing: NewWriter Add* Finish. Keys must be added in strictly increasing
// CompareInternal order. The Writer buffers its output; the caller syncs and
// closes the underlying file after Finish.
//
// Reading: NewReader reads the footer, metaindex, properties, index and
// filter and keeps the index and filter resident; data blocks are read on
// demand, through the block cache when one is configured. Every block read
// from the file has its checksum verified. Bad bytes are reported as errors
// wrapping base.ErrCorruption that name the table (ReaderOptions.FileNum),
// the block and its offset, and the check that failed; no file content
// makes the package panic.
//
// Concurrency: a Writer is used by one goroutine. A Reader is safe for
// concurrent use by many goroutines (Get, NewIter, MayContain, Verify,
// Properties); Close must run after all other uses have finished. An
// iterator returned by NewIter is used by one goroutine at a time.
package sstable
