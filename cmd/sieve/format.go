package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/sievedb/sieve/internal/base"
)

// byteFmt prints keys and values safely: never a raw control byte or an
// invalid UTF-8 sequence on the terminal.
type byteFmt struct {
	mode string // auto, quote, hex
	max  int    // values longer than this are cut (0: no limit)
}

func (b *byteFmt) keyFlags(fs *flag.FlagSet) {
	fs.StringVar(&b.mode, "keys", "auto", "how to print keys and values: `auto` (plain if printable ASCII, else quoted, or hex if mostly binary), quote, hex")
}

// dumpFlags adds -keys, -n (at most N entries printed, into n, with the
// usage nUsage) and -v (at most N bytes of each value): the flags of the
// dump commands.
func (b *byteFmt) dumpFlags(fs *flag.FlagSet, n *int, nUsage string) {
	b.keyFlags(fs)
	fs.IntVar(n, "n", 100, nUsage)
	fs.IntVar(&b.max, "v", 32, "print at most `N` bytes of each value (0: whole values)")
}

// parse parses args as parse does and then checks -keys: it returns the
// one positional argument of a command that prints keys.
func (b *byteFmt) parse(fs *flag.FlagSet, args []string) (string, error) {
	arg, err := parse(fs, args)
	if err != nil {
		return "", err
	}
	if err := b.check(); err != nil {
		return "", err
	}
	return arg, nil
}

func (b *byteFmt) check() error {
	switch b.mode {
	case "auto", "quote", "hex":
		return nil
	}
	return usagef("-keys=%s: want auto, quote or hex", b.mode)
}

// plain reports whether s can be printed as it is without ambiguity in
// "key#seq,KIND" or "key = value".
func plain(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '#' || c == '=' {
			return false
		}
	}
	return true
}

func mostlyPrintable(s []byte) bool {
	n := 0
	for _, c := range s {
		if c >= ' ' && c < 0x7f {
			n++
		}
	}
	return 4*n >= 3*len(s)
}

// bytes formats s, cut at max bytes when max > 0.
func (b *byteFmt) bytes(s []byte, max int) string {
	suffix := ""
	if max > 0 && len(s) > max {
		suffix = fmt.Sprintf("...(%d bytes)", len(s))
		s = s[:max]
	}
	switch {
	case b.mode == "hex":
		return "0x" + hex.EncodeToString(s) + suffix
	case b.mode == "quote":
		return strconv.QuoteToASCII(string(s)) + suffix
	case plain(s):
		return string(s) + suffix
	case mostlyPrintable(s):
		return strconv.QuoteToASCII(string(s)) + suffix
	}
	return "0x" + hex.EncodeToString(s) + suffix
}

// key formats a user key (never cut).
func (b *byteFmt) key(k []byte) string { return b.bytes(k, 0) }

// value formats a value, cut at the -v limit.
func (b *byteFmt) value(v []byte) string { return b.bytes(v, b.max) }

// ikey formats an internal key as key#seq,KIND.
func (b *byteFmt) ikey(k base.InternalKey) string {
	if k.SeqNum() == base.SeqNumMax {
		return fmt.Sprintf("%s#max,%s", b.key(k.UserKey), k.Kind())
	}
	return fmt.Sprintf("%s#%d,%s", b.key(k.UserKey), k.SeqNum(), k.Kind())
}

// size formats a byte count for people.
func size(n uint64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}

// count formats n with word in the singular or plural ("1 batch", "2
// batches", "1 entry", "3 entries", "2 column families").
func count(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	switch {
	case strings.HasSuffix(word, "y"):
		word = strings.TrimSuffix(word, "y") + "ie"
	case strings.HasSuffix(word, "ch"):
		word += "e"
	}
	return fmt.Sprintf("%d %ss", n, word)
}
