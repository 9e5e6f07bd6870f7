// Package lockrank gives every lock of the database a rank and, in
// checking builds (the race detector or the invariants build tag), panics
// when a goroutine acquires a lock whose rank is not above every rank it
// already holds — the Go runtime's lockrank idea, for sieve's locks. An
// inversion then fails the first test that runs its code path, with the
// stacks of both acquisitions, instead of hanging only under an unlucky
// schedule. In other builds the wrappers are plain sync mutexes and the
// checks compile away.
//
// The ranks below are the order, lowest first; the root package documents
// what each lock guards, beside its lock order (doc/DESIGN.md says where).
package lockrank

// Rank orders locks: a goroutine may acquire a lock only while every lock
// it holds has a lower rank.
type Rank int

// The ranks, outermost first. Unranked (zero) locks are not checked.
const (
	unranked Rank = iota
	// SketchKey is a sketchcol.Store key stripe: held across a command's
	// read and its merge-operand write.
	SketchKey
	// CFCreate serializes column family creation and merger binding.
	CFCreate
	// Commit is leadership of the commit pipeline (a logical lock: the
	// head of the writer queue). Taken by every write, by Flush, Close
	// and the WAL buffer timer.
	Commit
	// Version is DB.versionMu: the manifest writer (LogAndApply).
	Version
	// DB is DB.mu: memtables, flush and compaction state, snapshots, the
	// sticky background error.
	DB
	// CFRegistry is the column family registry's lock, held only to read
	// or swap a map entry.
	CFRegistry
	// ReadState is DB.rsMu: publishing the read state (loading it takes
	// no lock).
	ReadState
	// TableCache is the table cache's lock.
	TableCache
	numRanks
)

var names = [numRanks]string{"unranked", "SketchKey", "CFCreate", "Commit", "Version", "DB", "CFRegistry", "ReadState", "TableCache"}

// String returns the rank's name.
func (r Rank) String() string {
	if r >= 0 && r < numRanks {
		return names[r]
	}
	return "Rank(?)"
}
