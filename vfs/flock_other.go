//go:build !unix

package vfs

import (
	"errors"
	"os"
)

func flock(*os.File) error { return errors.New("vfs: file locking is not supported on this platform") }
