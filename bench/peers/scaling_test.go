package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestScalingSmall runs the scaling mode on a small database with sieve
// and Pebble and checks every phase ran, every read was right and the
// writer phase really wrote.
func TestScalingSmall(t *testing.T) {
	var out bytes.Buffer
	err := runScalingCmd([]string{"-n=3000", "-reads=2000", "-rounds=2", "-threads=1,2", "-engines=sieve,pebble", "-baseline=pebble", "-dir=" + t.TempDir()}, &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"readrandom, 1 reader(s): Gets/s", "readrandom, 2 reader(s): Gets/s", "readrandom, 1 reader + 1 writer: p99 us", "Gets/s, 2 readers / 1 reader", "p99, with the writer / without"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	for _, m := range regexp.MustCompile(`wrong results +(\S+) +(\S+)`).FindAllStringSubmatch(text, -1) {
		if m[1] != "0" || m[2] != "0" {
			t.Errorf("wrong results: %s", m[0])
		}
	}
	m := regexp.MustCompile(`writer Puts/s beside the reader +(\S+)k +(\S+)k`).FindStringSubmatch(text)
	if m == nil || m[1] == "0.0" || m[2] == "0.0" {
		t.Errorf("the writer phase wrote nothing: %v\n%s", m, text)
	}
}
