package main

import (
	"strings"
	"testing"
	"time"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false}, {"h[ae]llo", "hallo", true},
		{"h[^e]llo", "hello", false}, {"h[^e]llo", "hallo", true}, {"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false}, {"h\\*llo", "h*llo", true}, {"h\\*llo", "hello", false},
		{"*llo", "hello", true}, {"he*o*", "hellooo", true}, {"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false}, {"hll:*", "hll:0001", true}, {"[abc", "a", true},
		{"*.go", "x.go.txt", false}, {"**a", "xxa", true}, {"", "", true}, {"", "a", false},
	} {
		if got := globMatch([]byte(tc.p), []byte(tc.s), false); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
	if !globMatch([]byte("HLL:*"), []byte("hll:1"), true) {
		t.Error("nocase")
	}
	// A pattern that is exponential for naive backtracking.
	start := time.Now()
	globMatch([]byte(strings.Repeat("*a", 30)+"b"), []byte(strings.Repeat("a", 5000)), false)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("pathological pattern took %v", d)
	}
}
