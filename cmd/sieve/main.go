// Command sieve inspects sieve databases and their files, like Pebble's
// "pebble tool" or RocksDB's sst_dump and ldb:
//
//	sieve sstable dump  [flags] FILE   blocks (offsets, sizes, compression, checksums) and entries
//	sieve sstable check FILE           verify every block, key order, properties and filter
//	sieve sstable props FILE           properties and the filter's type and parameters
//	sieve wal dump      [flags] FILE   records, batches and their entries, how the log ends
//	sieve manifest dump [flags] FILE|DIR   version edits and the version they produce
//	sieve lsm   [flags] DIR            levels, tables, sizes, key ranges, filter bytes, measured FPR
//	                                   (-format=text|svg|html)
//	sieve check DIR                    open read-only and verify every table, WAL and invariant
//	sieve get   [flags] DIR KEY        a key's value (decoded in the sketch families) and deadline
//	sieve scan  [flags] DIR            keys and values in order (-start, -end, -prefix, -limit, -cf)
//
// The tool never changes a file: every file is opened read-only through a
// file system that refuses writes, creations, renames and removals, and a
// database another process holds open is read without its lock. Malformed
// input gives an error naming the file and the offset, and exit status 1;
// bad usage exits with 2. cmd/sieve/README.md in the repository shows each
// command's output.
//
// Keys and values are printed safely, by one rule in every command: as
// they are when they are printable ASCII, otherwise quoted with Go escapes
// (-keys=text, the default), or always quoted, in hex or in base64
// (-keys=quote|hex|base64). get and scan read their key arguments in the
// same form.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is bad usage: exit status 2 and the usage text.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errFound is returned by a command that printed the problems it found
// (check, sstable check): exit status 1 without a further message.
var errFound = errors.New("problems found")

const usageText = `usage:
  sieve sstable dump  [-n N] [-v N] [-keys text|quote|hex|base64] [-blocks] FILE
  sieve sstable check FILE
  sieve sstable props FILE
  sieve wal dump      [-n N] [-v N] [-keys text|quote|hex|base64] FILE
  sieve manifest dump [-n N] [-edits=false] [-keys text|quote|hex|base64] FILE|DIR
  sieve lsm   [-format text|svg|html] [-probes N] [-tables] [-keys ...] DIR
  sieve check [-v] [-keys text|quote|hex|base64] DIR
  sieve get   [-cf NAME] [-format F] [-keys F] [-v N] DIR KEY
  sieve scan  [-cf NAME] [-format F] [-keys F] [-v N] [-start K] [-end K] [-prefix P] [-limit N] DIR
  sieve repair [-wal-recovery skip-damaged|point-in-time] DIR

Exit status: 0 ok, 1 an error or damage found, 2 bad usage.
Run "sieve <command> -h" for a command's flags.
`

// run is the whole program behind main, for tests: it returns the exit
// status. A panic (a bug: malformed input must give an error) is reported
// as an internal error with exit status 1.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "sieve: internal error: panic: %v\n%s", p, debug.Stack())
			code = 1
		}
	}()
	err := dispatch(args, stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "sieve: %s\n\n%s", ue.msg, usageText)
		return 2
	case errors.Is(err, errFound):
		return 1
	}
	fmt.Fprintf(stderr, "sieve: %s\n", errText(err))
	return 1
}

// errText is err's message without the "sieve: " that each wrapped layer
// of the engine's errors starts with: one prefix is enough.
func errText(err error) string {
	s := strings.ReplaceAll(err.Error(), ": sieve: ", ": ")
	return strings.TrimPrefix(s, "sieve: ")
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("no command")
	}
	cmd, rest := args[0], args[1:]
	sub := ""
	if len(rest) > 0 {
		sub = rest[0]
	}
	switch cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return nil
	case "sstable":
		switch sub {
		case "dump":
			return sstableDump(rest[1:], stdout, stderr)
		case "check":
			return sstableCheck(rest[1:], stdout, stderr)
		case "props":
			return sstableProps(rest[1:], stdout, stderr)
		}
		return usagef("sstable: want dump, check or props, got %q", sub)
	case "wal":
		if sub == "dump" {
			return walDump(rest[1:], stdout, stderr)
		}
		return usagef("wal: want dump, got %q", sub)
	case "manifest":
		if sub == "dump" {
			return manifestDump(rest[1:], stdout, stderr)
		}
		return usagef("manifest: want dump, got %q", sub)
	case "lsm":
		return lsmCmd(rest, stdout, stderr)
	case "check":
		return checkCmd(rest, stdout, stderr)
	case "get":
		return getCmd(rest, stdout, stderr)
	case "scan":
		return scanCmd(rest, stdout, stderr)
	case "repair":
		return repairCmd(rest, stdout, stderr)
	}
	return usagef("unknown command %q", cmd)
}

// flags is a command's flag set: errors go to stderr, -h prints the usage
// of the command.
func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sieve %s [flags] %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args and requires exactly one positional argument.
func parse(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", err
		}
		return "", usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() != 1 {
		return "", usagef("%s: want one argument, got %d (%s)", fs.Name(), fs.NArg(), strings.Join(fs.Args(), " "))
	}
	return fs.Arg(0), nil
}
