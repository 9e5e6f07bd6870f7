package main

import "testing"

// TestLongDouble pins INCRBYFLOAT's arithmetic and formatting on sums
// redis-server 7.0.15 (x86-64, 80-bit long double) answered.
func TestLongDouble(t *testing.T) {
	cases := []struct{ a, b, want string }{
		{"10.5", "0.1", "10.6"},
		{"10.6", "-10.6", "0"},
		{"0", "1e20", "100000000000000000000"},
		{"100000000000000000000", "0.1", "100000000000000000000"},
		{"0.1", "0.2", "0.3"},
		{"-0.000000000000000001", "0", "0"},
		{"1", "0x1p3", "9"},
		{"3000", "1e4000", "99999999999999999999654638730996237849324925835069576313015083330432619433063423554818216418655092798627644520731236735402176022173675923441721258819505279999614285824343547545018709582142907413011430"},
	}
	for _, c := range cases {
		a, _, ok1 := parseLongDouble([]byte(c.a))
		b, _, ok2 := parseLongDouble([]byte(c.b))
		if !ok1 || !ok2 {
			t.Fatalf("%s + %s: not parsed", c.a, c.b)
		}
		sum, ok := addLongDouble(a, b)
		if !ok {
			t.Fatalf("%s + %s: overflow", c.a, c.b)
		}
		got := formatLongDouble(sum)
		if len(got) > len(c.want) {
			got = got[:len(c.want)] // the 1e4000 case: its first digits
		}
		if got != c.want {
			t.Errorf("%s + %s = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	for _, bad := range []string{"", " 1", "1 ", "1e", "nan", "NaN", "1_0", "0b1", "0o7", "0x", "0xg", "--1", "+-1", "1e5000", "1e-5000",
		"1e99999999999999999999", "1e-99999999999999999999", "1.2.3", "e5", ".", "1\x00"} {
		if _, _, ok := parseLongDouble([]byte(bad)); ok {
			t.Errorf("%q parsed; strtold (as Redis checks it) refuses it", bad)
		}
	}
	for _, good := range []string{"inf", "-Infinity", "+INF", "007", ".5", "5.", "+1", "-0", "0x1.8p1", "0XAp-2", "1E+05", "1.5e-4940"} {
		if _, _, ok := parseLongDouble([]byte(good)); !ok {
			t.Errorf("%q refused; strtold reads it", good)
		}
	}
	big, _, _ := parseLongDouble([]byte("1e4932"))
	if _, ok := addLongDouble(big, big); ok {
		t.Error("1e4932+1e4932 is past the long double range")
	}
}
