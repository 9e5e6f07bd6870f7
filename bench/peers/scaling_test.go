package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestScalingSmall runs the scaling mode on a small database with sieve
// and Pebble and checks every phase ran, every read was right and the
// writer phase really wrote.
func TestScalingSmall(t *testing.T) {
	var out bytes.Buffer
	err := runScalingCmd([]string{"-n=3000", "-reads=20000", "-rounds=2", "-writer-rate=5000", "-threads=1,2", "-engines=sieve,pebble", "-baseline=pebble", "-dir=" + t.TempDir()}, &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"readrandom, 1 reader(s): Gets/s", "readrandom, 2 reader(s): Gets/s", "readrandom, 1 reader + 1 writer: p99 us", "Gets/s, 2 readers / 1 reader", "p99, with the writer / without", "p99, with the paced writer (5k Puts/s) / without"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	// The machine's calibration ran at both goroutine counts.
	if m := regexp.MustCompile(`machine \(no shared memory\), 2 goroutines / 1, same rounds +(\S+)`).FindStringSubmatch(text); m == nil {
		t.Errorf("no machine calibration row:\n%s", text)
	} else if r, err := strconv.ParseFloat(m[1], 64); err != nil || r <= 0 {
		t.Errorf("machine calibration %q, want a positive ratio", m[1])
	}
	// The readers also ran split over each engine's two instances.
	if m := regexp.MustCompile(`Gets/s, 2 readers on two instances / 1 reader, same rounds +(\S+) +(\S+)`).FindStringSubmatch(text); m == nil {
		t.Errorf("no two-instance row:\n%s", text)
	} else {
		for _, v := range m[1:] {
			if r, err := strconv.ParseFloat(v, 64); err != nil || r <= 0 {
				t.Errorf("two-instance ratio %q, want a positive ratio", v)
			}
		}
	}
	if strings.Contains(text, "wrong results)") {
		t.Errorf("the two-instance rounds read wrong results:\n%s", text)
	}
	for _, m := range regexp.MustCompile(`wrong results +(\S+) +(\S+)`).FindAllStringSubmatch(text, -1) {
		if m[1] != "0" || m[2] != "0" {
			t.Errorf("wrong results: %s", m[0])
		}
	}
	m := regexp.MustCompile(`Puts/s of the writer beside the reader +(\S+)k +(\S+)k`).FindStringSubmatch(text)
	if m == nil || m[1] == "0.0" || m[2] == "0.0" {
		t.Errorf("the writer phase wrote nothing: %v\n%s", m, text)
	}
	// The paced writer wrote, and no faster than its rate (one Put of
	// slack per round).
	m = regexp.MustCompile(`Puts/s of the paced writer \(5k Puts/s\) beside the reader +(\S+)k +(\S+)k`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no paced writer row:\n%s", text)
	}
	for _, v := range m[1:] {
		if r, err := strconv.ParseFloat(v, 64); err != nil || r <= 0 || r > 5.5 {
			t.Errorf("paced writer at %sk Puts/s, want (0, 5.5k]:\n%s", v, text)
		}
	}
}
