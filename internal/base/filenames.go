package base

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// FileType is the kind of a file in a database directory.
type FileType int

// The file types of a database directory. The names they use are listed in
// the root FORMAT.md.
const (
	FileTypeLog      FileType = iota // NNNNNN.log: a write-ahead log
	FileTypeTable                    // NNNNNN.sst: an SSTable
	FileTypeManifest                 // MANIFEST-NNNNNN: a manifest log
	FileTypeCurrent                  // CURRENT: names the live manifest
	FileTypeLock                     // LOCK: the directory lock
	FileTypeTemp                     // NNNNNN.tmp: a file being written for an atomic rename
)

// MakeFilename returns the path of a file of the given type and number in
// dirname.
func MakeFilename(dirname string, t FileType, num uint64) string {
	return filepath.Join(dirname, FileName(t, num))
}

// FileName returns the base name of a file of the given type and number.
func FileName(t FileType, num uint64) string {
	switch t {
	case FileTypeLog:
		return fmt.Sprintf("%06d.log", num)
	case FileTypeTable:
		return fmt.Sprintf("%06d.sst", num)
	case FileTypeManifest:
		return fmt.Sprintf("MANIFEST-%06d", num)
	case FileTypeCurrent:
		return "CURRENT"
	case FileTypeLock:
		return "LOCK"
	case FileTypeTemp:
		return fmt.Sprintf("%06d.tmp", num)
	}
	panic("base: unknown file type")
}

// ParseFilename reports the type and number of a base file name; ok is false
// for names that are not the database's.
func ParseFilename(name string) (t FileType, num uint64, ok bool) {
	switch {
	case name == "CURRENT":
		return FileTypeCurrent, 0, true
	case name == "LOCK":
		return FileTypeLock, 0, true
	case strings.HasPrefix(name, "MANIFEST-"):
		n, err := strconv.ParseUint(name[len("MANIFEST-"):], 10, 64)
		return FileTypeManifest, n, err == nil
	}
	i := strings.IndexByte(name, '.')
	if i <= 0 {
		return 0, 0, false
	}
	n, err := strconv.ParseUint(name[:i], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	switch name[i+1:] {
	case "log":
		return FileTypeLog, n, true
	case "sst":
		return FileTypeTable, n, true
	case "tmp":
		return FileTypeTemp, n, true
	}
	return 0, 0, false
}
