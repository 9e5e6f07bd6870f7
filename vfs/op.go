package vfs

import (
	"strconv"
	"strings"
)

// Op names a kind of file-system operation. The fault-injecting wrappers
// count operations by Op, and MemFS reports mutations to its durability hook
// by Op.
type Op uint8

// The operations, one per FS or File method (Open covers OpenReadWrite;
// Stat covers File.Size).
const (
	OpCreate   Op = iota // FS.Create
	OpOpen               // FS.Open, FS.OpenReadWrite
	OpRead               // File.ReadAt
	OpWrite              // File.Write
	OpSync               // File.Sync
	OpTruncate           // File.Truncate
	OpClose              // File.Close
	OpRemove             // FS.Remove
	OpRename             // FS.Rename
	OpMkdir              // FS.MkdirAll
	OpList               // FS.List
	OpStat               // FS.Stat, File.Size
	OpLock               // FS.Lock
	OpSyncDir            // FS.SyncDir
	OpLink               // Linker.Link (see Link)
	numOps
)

var opNames = [numOps]string{
	OpCreate: "create", OpOpen: "open", OpRead: "read", OpWrite: "write",
	OpSync: "sync", OpTruncate: "truncate", OpClose: "close",
	OpRemove: "remove", OpRename: "rename", OpMkdir: "mkdir", OpList: "list",
	OpStat: "stat", OpLock: "lock", OpSyncDir: "syncdir", OpLink: "link",
}

// String returns the operation's name ("create", "sync", ...).
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// OpSet is a set of Ops.
type OpSet uint32

// Predefined sets of operations.
const (
	// AllOps holds every Op, including OpClose.
	AllOps OpSet = 1<<numOps - 1
	// MutatingOps holds the operations that change files or directories.
	MutatingOps OpSet = 1<<OpCreate | 1<<OpWrite | 1<<OpSync | 1<<OpTruncate |
		1<<OpRemove | 1<<OpRename | 1<<OpMkdir | 1<<OpLock | 1<<OpSyncDir | 1<<OpLink
	// ReadOps holds the operations that only look.
	ReadOps OpSet = 1<<OpOpen | 1<<OpRead | 1<<OpList | 1<<OpStat
	// SyncOps holds File.Sync and FS.SyncDir.
	SyncOps OpSet = 1<<OpSync | 1<<OpSyncDir
)

// OpsOf returns the set holding ops.
func OpsOf(ops ...Op) OpSet {
	var s OpSet
	for _, o := range ops {
		s |= 1 << o
	}
	return s
}

// Has reports whether op is in s.
func (s OpSet) Has(op Op) bool { return op < numOps && s&(1<<op) != 0 }

// String lists the set's operations.
func (s OpSet) String() string {
	var names []string
	for o := Op(0); o < numOps; o++ {
		if s.Has(o) {
			names = append(names, o.String())
		}
	}
	return "{" + strings.Join(names, ",") + "}"
}
