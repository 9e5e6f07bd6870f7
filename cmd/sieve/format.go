package main

import (
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/sievedb/sieve/internal/base"
)

// byteFmt prints keys and values safely: never a raw control byte or an
// invalid UTF-8 sequence on the terminal. It is the one rendering of keys
// (and raw values) of every command, chosen with -keys:
//
//	text    as is when printable ASCII without spaces, '"', '\\', '#' or
//	        '=', else quoted with Go escapes ("\x00\xff\n"); the default
//	quote   always quoted with Go escapes
//	hex     0x and hex digits
//	base64  standard base64 (RFC 4648, with padding)
//
// ("auto", the name of the default before it was one rule, is text.)
type byteFmt struct {
	mode string // text, quote, hex, base64
	max  int    // values longer than this are cut (0: no limit)
}

// keyModes are the values -keys takes.
const keyModes = "text, quote, hex or base64"

func (b *byteFmt) keyFlags(fs *flag.FlagSet) {
	fs.StringVar(&b.mode, "keys", "text", "how to print keys and values: `text` (as is if printable ASCII, else quoted with Go escapes), quote, hex, base64")
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
	if b.mode == "auto" {
		b.mode = "text"
	}
	if !validMode(b.mode) {
		return usagef("-keys=%s: want %s", b.mode, keyModes)
	}
	return nil
}

func validMode(m string) bool {
	switch m {
	case "text", "quote", "hex", "base64":
		return true
	}
	return false
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

// bytes formats s, cut at max bytes when max > 0.
func (b *byteFmt) bytes(s []byte, max int) string {
	suffix := ""
	if max > 0 && len(s) > max {
		suffix = fmt.Sprintf("...(%d bytes)", len(s))
		s = s[:max]
	}
	return render(b.mode, s) + suffix
}

// render is s in mode (byteFmt's modes).
func render(mode string, s []byte) string {
	switch {
	case mode == "hex":
		return "0x" + hex.EncodeToString(s)
	case mode == "base64":
		return base64.StdEncoding.EncodeToString(s)
	case mode == "text" && plain(s):
		return string(s)
	}
	return quote(s)
}

// quote is s as a Go string literal escaped byte by byte: printable ASCII
// as is, \n, \r, \t, \" and \\, and every other byte as \xNN (never
// a \u escape: a binary key whose bytes happen to form a UTF-8 sequence
// prints like any other). strconv.Unquote reads it back.
func quote(s []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, len(s)+2)
	out = append(out, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c >= ' ' && c < 0x7f:
			out = append(out, c)
		default:
			out = append(out, '\\', 'x', digits[c>>4], digits[c&15])
		}
	}
	return string(append(out, '"'))
}

// parseArg reads a key given on the command line in mode, the inverse of
// render: hex with or without 0x, base64, or for text and quote the bytes
// as typed, or a Go-quoted string when it starts with a double quote
// (what render prints for a key that is not plain).
func parseArg(mode, s string) ([]byte, error) {
	switch mode {
	case "hex":
		b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
		if err != nil {
			return nil, fmt.Errorf("not hex: %v", err)
		}
		return b, nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("not base64: %v", err)
		}
		return b, nil
	}
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return nil, fmt.Errorf("not a Go-quoted string: %v", err)
		}
		return []byte(u), nil
	}
	return []byte(s), nil
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
