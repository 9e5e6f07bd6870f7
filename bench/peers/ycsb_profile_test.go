package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestYCSBProfilerCoversOnlySelectedWorkloads checks that -cpuprofile with
// -cpuprofile-workloads=C,E starts before C, is still running in D (between
// the two) and stops after E, so that F after it is not profiled.
func TestYCSBProfilerCoversOnlySelectedWorkloads(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu.prof")
	p := &ycsbProfiler{file: file, only: "c, E"}
	var wls []ycsbWorkload
	for _, n := range []string{"A", "C", "D", "E", "F"} {
		wls = append(wls, ycsbWorkload{name: n})
	}
	running := map[string]bool{}
	for _, wl := range wls {
		if err := p.around(wl.name, wls, func() error { running[wl.name] = p.out != nil; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{"A": false, "C": true, "D": true, "E": true, "F": false}
	for n, w := range want {
		if running[n] != w {
			t.Errorf("workload %s: profiling %v, want %v", n, running[n], w)
		}
	}
	if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		t.Fatalf("profile not written: %v", err)
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if (&ycsbProfiler{}).selected("B") != true {
		t.Error("an empty list selects every workload")
	}
}
