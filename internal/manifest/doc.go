// Package manifest keeps the record of which tables are live: version
// edits, versions (immutable LSM shapes, reference counted), and the version
// set, which logs edits to the MANIFEST file and names the live manifest in
// CURRENT. The formats are in FORMAT.md beside this file.
//
// Invariants (checked by Version.CheckLevels after every edit):
//   - a table number appears at most once in a version;
//   - each table's smallest key <= largest key, smallest seq <= largest seq;
//   - L0 is ordered newest first; L1..L6 are sorted by key and their tables'
//     user-key ranges do not overlap;
//   - a table or WAL is named by the manifest only after it and its
//     directory entry are durable; CURRENT is replaced only by an atomic
//     rename of a synced temporary file, followed by a directory sync.
//
// Concurrency: a Version is immutable and may be read from any goroutine
// while referenced. VersionSet.LogAndApply calls must be serialized by the
// caller; Current may be called concurrently with them.
package manifest
