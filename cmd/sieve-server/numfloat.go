package main

import (
	"math/big"
	"strings"
)

// Redis's long doubles, for INCRBYFLOAT. Redis parses with strtold and
// adds in x86's 80-bit extended precision (a 64-bit mantissa, exponents
// to ±16383), then prints with "%.17Lf" and trims the trailing zeros.
// big.Float with 64 bits of precision, rounding to nearest even, computes
// the same values; the range is checked by hand.

const (
	ldPrec     = 64
	ldMaxExp   = 16384  // |x| < 2^16384 (big.Float's exponent: 0.5 <= mant < 1)
	ldMinExp   = -16444 // below half the smallest subnormal, strtold gives 0 (ERANGE)
	ldMaxChars = 5 * 1024
)

// parseLongDouble is Redis's string2ld: the whole argument must be a
// number strtold reads (decimal or hexadecimal, a sign allowed, inf and
// infinity in any case), without spaces, not NaN, not out of range. inf
// reports an infinite value (x is then nil).
func parseLongDouble(b []byte) (x *big.Float, inf bool, ok bool) {
	if len(b) == 0 || len(b) >= ldMaxChars {
		return nil, false, false
	}
	s := string(b)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return nil, false, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		return nil, true, true
	}
	hex := len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')
	if hex && !floatSyntax(body[2:], isHexDigit, "pP") || !hex && !floatSyntax(body, isDigit, "eE") {
		return nil, false, false
	}
	f, _, err := big.ParseFloat(s, 0, ldPrec, big.ToNearestEven)
	if err != nil || f.IsInf() {
		return nil, false, false // an exponent past any range: ERANGE
	}
	if e := f.MantExp(nil); f.Sign() != 0 && (e > ldMaxExp || e < ldMinExp) {
		return nil, false, false // strtold's ERANGE: HUGE_VAL or 0
	}
	return f, false, true
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isHexDigit(c byte) bool { _, ok := hexVal(c); return ok }

// floatSyntax checks digits with at most one point (at least one digit),
// then optionally an exponent: one of exp, a sign, decimal digits.
func floatSyntax(s string, digit func(byte) bool, exp string) bool {
	i, n, point := 0, 0, false
	for ; i < len(s); i++ {
		switch {
		case digit(s[i]):
			n++
			continue
		case s[i] == '.' && !point:
			point = true
			continue
		}
		break
	}
	if n == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if !strings.ContainsRune(exp, rune(s[i])) {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// addLongDouble returns a+b in 80-bit precision, or ok false when the sum
// is infinite (Redis's "increment would produce NaN or Infinity").
func addLongDouble(a, b *big.Float) (*big.Float, bool) {
	z := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
	z.Add(a, b)
	if z.Sign() != 0 && z.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return z, true
}

// formatLongDouble is Redis's ld2string in its human mode: "%.17Lf" with
// the trailing zeros (and a bare point) trimmed, and "-0" written "0".
func formatLongDouble(x *big.Float) string {
	s := x.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
