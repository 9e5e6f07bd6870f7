// Package wal writes and reads sieve's record logs: the write-ahead log,
// where each record is one commit group (one or many batches), and the
// manifest, where each record is one version edit. A log is an append-only
// file of opaque records, framed in 32 KiB blocks with checksummed chunks.
// FORMAT.md in this directory specifies the bytes.
//
// What the format adds to LevelDB's: every chunk records how far the file
// had been synced when the chunk was written, so that a Reader can tell the
// torn tail of a crashed log (never synced; recovery truncates it and goes
// on) from damage to bytes that had been made durable (ErrCorruption).
//
// Writer call order:
//
//	NewWriter (WriteRecord | BufferRecord | Flush | Sync | SyncWritten)* Close
//
// A failed write or sync is sticky: every later call returns the same
// error, and Close then writes nothing. Close does not close the file.
//
// Reader call order:
//
//	NewReader Next* (until Next returns an error) then ValidEnd, TornTail, Tail
//
// Next returns io.EOF at a clean end and at a torn tail, and an error
// wrapping base.ErrCorruption (naming the offset and the failed check) when
// synced bytes are damaged; errors from the underlying file are returned
// as they are, unmarked.
//
// Concurrency: a Writer is used by one goroutine at a time (the commit
// pipeline's write stage serializes WriteRecord, BufferRecord, Flush and
// Sync), except SyncWritten, which one other goroutine may run meanwhile
// (the pipeline's sync stage fsyncs a group's record while the next group
// is written), and Size and SyncedOffset, which any goroutine may call at
// any time. A Reader is used by one
// goroutine at a time; separate Readers may read the same file at once.
package wal
