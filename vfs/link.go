package vfs

import (
	"errors"
	"fmt"
)

// Linker is implemented by file systems that can give a file a second name
// (a hard link): MemFS, the disk FS, and the fault-injecting wrappers
// around one that can. It is not part of FS, so that every FS need not
// support it; call Link.
type Linker interface {
	// Link makes newname another name of the file oldname. It fails if
	// newname exists. The new entry is durable only after SyncDir of its
	// directory.
	Link(oldname, newname string) error
}

// ErrLinkUnsupported is wrapped by Link's error when fs cannot link.
var ErrLinkUnsupported = errors.New("vfs: hard links not supported")

// Link makes newname a hard link to oldname on fs, or fails with an error
// wrapping ErrLinkUnsupported when fs does not implement Linker.
func Link(fs FS, oldname, newname string) error {
	l, ok := fs.(Linker)
	if !ok {
		return fmt.Errorf("link %s %s: %w", oldname, newname, ErrLinkUnsupported)
	}
	return l.Link(oldname, newname)
}
