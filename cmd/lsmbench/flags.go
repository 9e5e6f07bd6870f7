package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Flag types and parsing shared by the engine benchmark and the labs.

// usageError is a mistake on the command line: main prints it with the
// usage text and exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// countFlag is an operation or key count: 1000000, 1_000_000, 20k, 1M, 1e6.
// A negative count is refused; -reads uses -1 internally for "default".
type countFlag int

func (f *countFlag) String() string {
	if *f < 0 {
		return "min(-num, 200k)" // -reads: see defaultMaxReads
	}
	return strconv.Itoa(int(*f))
}

func (f *countFlag) Set(s string) error { return setParsed(f, s, parseCount) }

func parseCount(s string) (int, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult, t = 1e3, t[:n-1]
		case 'm', 'M':
			mult, t = 1e6, t[:n-1]
		case 'g', 'G', 'b', 'B':
			mult, t = 1e9, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a count (examples: 20000, 20k, 1M, 1_000_000)", s)
	}
	v *= mult
	switch {
	case v < 0:
		return 0, fmt.Errorf("%q is negative", s)
	case v != math.Trunc(v) || v > math.MaxInt32*64:
		return 0, fmt.Errorf("%q is not a whole count in range", s)
	}
	return int(v), nil
}

// sizeFlag is a byte size: 4096, 64KiB, 8MiB, 1GiB (K/M/G and KB/MB/GB are
// binary too, as in most storage tools).
type sizeFlag int64

func (f *sizeFlag) String() string { return strconv.FormatInt(int64(*f), 10) }

func (f *sizeFlag) Set(s string) error { return setParsed(f, s, parseSize) }

func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "_", ""))
	units := []struct {
		suffix string
		mult   float64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			mult, t = u.mult, strings.TrimSuffix(t, u.suffix)
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a size (examples: 4096, 64KiB, 8MiB, 1GiB)", s)
	}
	v *= mult
	switch {
	case v < 0:
		return 0, fmt.Errorf("%q is negative", s)
	case v > 1<<50:
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v), nil
}

// setList is setNamedList for lab flags (-policies, -sections).
func setList(dst *[]string, s string, known []string) error {
	return setNamedList(dst, s, known, "")
}

// setNamedList sets *dst to the comma-separated names in s, each one of
// known; noun (with its trailing space, or "") names them in errors.
func setNamedList(dst *[]string, s string, known []string, noun string) error {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !slices.Contains(known, v) {
			return fmt.Errorf("unknown %s%q (known: %s)", noun, v, strings.Join(known, ", "))
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return fmt.Errorf("empty %slist", noun)
	}
	*dst = out
	return nil
}

func parseFloats(s string, lo, hi float64) ([]float64, error) {
	var out []float64
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", v)
		}
		if !(f >= lo && f <= hi) {
			return nil, fmt.Errorf("%v is outside [%v, %v]", f, lo, hi)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// parseFlags parses args with fs, which then returns its errors instead
// of printing them: -h gives flag.ErrHelp, any other mistake a usage
// error, as does an argument left over (its message ending in hint).
func parseFlags(fs *flag.FlagSet, args []string, hint string) error {
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q%s", fs.Arg(0), hint)
	}
	return nil
}

// checkProgress checks a -progress flag.
func checkProgress(mode string) error {
	switch mode {
	case "auto", "on", "off":
		return nil
	}
	return usagef("-progress must be auto, on or off, got %q", mode)
}

// printUsage prints a program's usage: text, its flags with their
// defaults, then tail.
func printUsage(w io.Writer, text string, fs *flag.FlagSet, tail string) {
	fmt.Fprint(w, text)
	fs.PrintDefaults()
	fmt.Fprint(w, tail)
}

// setParsed is a flag's Set: *f = parse(s), or parse's error.
func setParsed[F, V ~int | ~int64](f *F, s string, parse func(string) (V, error)) error {
	v, err := parse(s)
	if err != nil {
		return err
	}
	*f = F(v)
	return nil
}
