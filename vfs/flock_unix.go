//go:build unix

package vfs

import (
	"os"
	"syscall"
)

// flock takes a non-blocking exclusive flock(2) on f. A lock held elsewhere
// yields an error wrapping both ErrLocked and the errno (EWOULDBLOCK).
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch err {
		case nil:
			return nil
		case syscall.EINTR:
			continue
		case syscall.EWOULDBLOCK:
			return &lockHeldError{by: "another process", errno: err}
		default:
			return err
		}
	}
}
