package vfs

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// UnsyncedMode says what a crash does to file data written (or truncated)
// since the file's last Sync.
//
// The unsynced region of a file is cut into sectors aligned to absolute file
// offsets (CrashOptions.SectorSize). Bytes before the first change since the
// last Sync are synced and always survive, also when they share a sector
// with unsynced bytes. Where unsynced bytes are "lost", the file holds what
// it held at its last Sync there, or zeros past the synced length when a
// later sector survived. A Truncate that shrank the file is undone by a
// crash unless synced (the synced length is kept or extended, never cut).
type UnsyncedMode uint8

const (
	// DropUnsynced (the default) keeps exactly the synced content: every
	// file is as it was at its last Sync.
	DropUnsynced UnsyncedMode = iota
	// KeepUnsyncedPrefix keeps a random number of the unsynced sectors, in
	// order from the first (0 to all, uniformly): data written in order
	// reached the disk in order, up to some point.
	KeepUnsyncedPrefix
	// KeepUnsyncedSectors keeps each unsynced sector independently with
	// probability KeepUnsyncedFraction, so a later sector may survive
	// while an earlier one is lost (the page cache writes back out of
	// order). The file keeps its synced length, or more if a surviving
	// sector reaches further (with zeros in lost sectors before it).
	KeepUnsyncedSectors
	// ZeroUnsynced is KeepUnsyncedSectors where the lost sectors read as
	// zeros and the file keeps its current length: the size reached the
	// disk but the data did not (ext4 with delayed allocation).
	ZeroUnsynced
	// GarbageUnsynced is ZeroUnsynced with random bytes instead of zeros:
	// the size reached the disk and the lost sectors hold whatever was on
	// the medium before.
	GarbageUnsynced
)

var unsyncedModeNames = []string{"DropUnsynced", "KeepUnsyncedPrefix", "KeepUnsyncedSectors", "ZeroUnsynced", "GarbageUnsynced"}

// String returns the mode's name.
func (m UnsyncedMode) String() string {
	if int(m) < len(unsyncedModeNames) {
		return unsyncedModeNames[m]
	}
	return "UnsyncedMode(?)"
}

// DefaultSectorSize is the sector size CrashClone uses when
// CrashOptions.SectorSize is zero.
const DefaultSectorSize = 512

// CrashOptions configure CrashClone. The zero value gives the strict crash:
// only synced data and durable directory entries survive.
type CrashOptions struct {
	// Unsynced says what becomes of unsynced file data.
	Unsynced UnsyncedMode
	// KeepUnsyncedFraction is the probability that an unsynced sector
	// survives, for KeepUnsyncedSectors, ZeroUnsynced and GarbageUnsynced.
	// Zero keeps none (with ZeroUnsynced and GarbageUnsynced the whole
	// unsynced region is then zeros or garbage).
	KeepUnsyncedFraction float64
	// SectorSize is the unit in which unsynced data survives or is lost;
	// zero means DefaultSectorSize. Typical values are 512 and 4096.
	SectorSize int
	// RandomDirOps makes a random prefix (0 to all, uniformly) of the
	// directory operations not yet made durable by SyncDir survive, in the
	// order they were made, as a journaling file system commits its
	// metadata in order. A Rename survives or is lost as a whole (unless
	// one of its two directories was synced since). Without it, only
	// entries made durable by SyncDir survive.
	RandomDirOps bool
	// Rand drives every random choice. When nil, a generator seeded with
	// Seed is used, so a clone is reproducible from its options alone.
	// Rand is used only during the call (it is not safe for concurrent use;
	// don't share it with another goroutine meanwhile).
	Rand *rand.Rand
	// Seed seeds the generator when Rand is nil.
	Seed uint64
}

// CrashClone returns a new, independent MemFS holding a state that a crash
// (power loss) at this moment could leave, as opts describes: every
// directory holds its durable entries (plus, with RandomDirOps, some of the
// pending ones), and every file its synced content (plus what the Unsynced
// mode lets survive). In the clone everything is durable and synced, no lock
// is held and no hook is installed; open handles of fs are unaffected and
// don't refer to the clone. The same fs state and options (with the same
// seed) give the same clone.
//
// CrashClone holds fs's lock while it copies, so it sees every file at one
// instant even while other goroutines write: the clone is a state of the
// whole file system at a single moment. It may be called from the
// durability hook.
func (fs *MemFS) CrashClone(opts CrashOptions) *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	c := &crasher{opts: opts, rng: opts.Rand, files: make(map[*memNode]*memNode)}
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	}
	if c.opts.SectorSize <= 0 {
		c.opts.SectorSize = DefaultSectorSize
	}
	if opts.RandomDirOps && len(fs.pending) > 0 {
		c.entries = make(map[*memNode]map[string]*memNode)
		for _, op := range fs.pending[:c.rng.IntN(len(fs.pending)+1)] {
			for _, ch := range op {
				m := c.entries[ch.dir]
				if m == nil {
					m = maps.Clone(ch.dir.durable)
					c.entries[ch.dir] = m
				}
				if ch.node == nil {
					delete(m, ch.name)
				} else {
					m[ch.name] = ch.node
				}
			}
		}
	}
	clone := NewMem()
	clone.root = c.dir(fs.root, map[*memNode]bool{})
	return clone
}

// crasher builds one crash clone.
type crasher struct {
	opts CrashOptions
	rng  *rand.Rand
	// entries overrides the durable entries of directories touched by
	// surviving pending operations.
	entries map[*memNode]map[string]*memNode
	// files maps each inode of the old FS to its clone, so two surviving
	// names of one inode (a rename half made durable) stay one inode.
	files map[*memNode]*memNode
}

// dir clones the durable state of directory d. onPath guards against a
// cycle, which durable entries of different ages can form in theory.
func (c *crasher) dir(d *memNode, onPath map[*memNode]bool) *memNode {
	onPath[d] = true
	defer delete(onPath, d)
	entries := d.durable
	if m, ok := c.entries[d]; ok {
		entries = m
	}
	nd := newDir()
	for _, name := range slices.Sorted(maps.Keys(entries)) { // sorted: reproducible
		n := entries[name]
		var cn *memNode
		switch {
		case !n.isDir:
			cn = c.file(n)
		case onPath[n]:
			continue
		default:
			cn = c.dir(n, onPath)
		}
		nd.children[name] = cn
		nd.durable[name] = cn
	}
	return nd
}

func (c *crasher) file(n *memNode) *memNode {
	if cn, ok := c.files[n]; ok {
		return cn
	}
	n.mu.RLock()
	data := c.content(n.synced, n.data, min(n.dirty, len(n.synced), len(n.data)))
	n.mu.RUnlock()
	cn := newFile()
	cn.data = data
	cn.sync()
	c.files[n] = cn
	return cn
}

// content returns what a crash leaves of a file whose synced content is
// synced and current content is cur, the two being equal below dirty.
func (c *crasher) content(synced, cur []byte, dirty int) []byte {
	out := slices.Clone(synced)
	if c.opts.Unsynced == DropUnsynced || dirty >= len(cur) {
		return out
	}
	ss := c.opts.SectorSize
	first, last := dirty/ss, (len(cur)-1)/ss
	keepPrefix := -1
	if c.opts.Unsynced == KeepUnsyncedPrefix {
		keepPrefix = c.rng.IntN(last - first + 2)
	}
	for s := first; s <= last; s++ {
		lo, hi := max(s*ss, dirty), min((s+1)*ss, len(cur))
		var kept bool
		if keepPrefix >= 0 {
			kept = s-first < keepPrefix
		} else {
			kept = c.rng.Float64() < c.opts.KeepUnsyncedFraction
		}
		switch {
		case kept:
			out = overwrite(out, lo, cur[lo:hi])
		case c.opts.Unsynced == ZeroUnsynced:
			out = overwrite(out, lo, make([]byte, hi-lo))
		case c.opts.Unsynced == GarbageUnsynced:
			garbage := make([]byte, hi-lo)
			for i := range garbage {
				garbage[i] = byte(c.rng.Uint32())
			}
			out = overwrite(out, lo, garbage)
		}
	}
	return out
}

// overwrite copies p into b at off, growing b with zeros as needed.
func overwrite(b []byte, off int, p []byte) []byte {
	if end := off + len(p); end > len(b) {
		b = append(b, make([]byte, end-len(b))...)
	}
	copy(b[off:], p)
	return b
}
