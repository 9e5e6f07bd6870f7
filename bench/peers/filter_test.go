package main

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestFilterCommand runs the filter subcommand on a tiny key set: every
// candidate, both key schemes, no false negatives, and GOMAXPROCS restored.
func TestFilterCommand(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	var out bytes.Buffer
	if err := runFilterCmd([]string{"-n=2000", "-rounds=2"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS is %d after the run, want %d", got, procs)
	}
	text := out.String()
	if !strings.Contains(text, "GOMAXPROCS=1") {
		t.Errorf("report does not say GOMAXPROCS=1:\n%s", text)
	}
	for _, c := range filterCandidates(10) {
		for _, scheme := range []string{"seq", "scattered"} {
			if !strings.Contains(text, "| "+c.name+" | "+scheme+" | ") {
				t.Errorf("no row for %s, %s keys:\n%s", c.name, scheme, text)
			}
		}
	}
	if err := runFilterCmd([]string{"-keys=bogus"}, &out); err == nil {
		t.Error("-keys=bogus accepted")
	}
}

// TestFilterFalseNegative checks that a filter rejecting a present key
// fails the run.
func TestFilterFalseNegative(t *testing.T) {
	broken := filterCandidate{name: "broken", build: func(keys keySet, bits int) (builtFilter, error) {
		last := string(keys.key(keys.count - 1))
		return builtFilter{size: keys.count, test: func(key []byte) bool { return string(key) != last }}, nil
	}}
	var out bytes.Buffer
	err := runFilterBench(filterOptions{n: 100, bits: 10, keys: "seq", seed: 1, rounds: 1}, []filterCandidate{broken}, &out)
	if !errors.Is(err, errFalseNegative) {
		t.Fatalf("err = %v, want a false negative", err)
	}
}
