package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
)

// ycsbProfiler writes one CPU profile covering the phases of the selected
// workloads (-cpuprofile, -cpuprofile-workloads): it starts before the
// first selected workload runs and stops after the last one, so the load
// and the other workloads stay out of it.
type ycsbProfiler struct {
	file, only string
	out        *os.File
	done       bool
}

// selected reports whether workload name is profiled.
func (p *ycsbProfiler) selected(name string) bool {
	if p.only == "" {
		return true
	}
	return slices.ContainsFunc(strings.Split(p.only, ","), func(s string) bool { return strings.EqualFold(strings.TrimSpace(s), name) })
}

// around runs workload name's phase f, profiling it when selected; the
// profile stops after the last selected workload of wls.
func (p *ycsbProfiler) around(name string, wls []ycsbWorkload, f func() error) error {
	if p.file == "" || p.done || !p.selected(name) {
		return f()
	}
	if p.out == nil {
		out, err := os.Create(p.file)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			out.Close()
			return err
		}
		p.out = out
		fmt.Fprintf(os.Stderr, "cpu profile: started before workload %s\n", name)
	}
	err := f()
	last := true
	for i := slices.IndexFunc(wls, func(w ycsbWorkload) bool { return w.name == name }) + 1; i < len(wls); i++ {
		last = last && !p.selected(wls[i].name)
	}
	if last {
		if serr := p.stop(); err == nil {
			err = serr
		}
	}
	return err
}

// stop ends the profile (if one runs) and closes its file.
func (p *ycsbProfiler) stop() error {
	if p.out == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.out.Close()
	p.out, p.done = nil, true
	fmt.Fprintf(os.Stderr, "cpu profile: written to %s\n", p.file)
	return err
}

// compactBefore flushes and compacts every engine before workload wl when
// -compact-before names it, recording the shape that results.
func compactBefore(runs []*ycsbRun, wl ycsbWorkload, o ycsbOptions) error {
	if o.compactBefore == "" || !(&ycsbProfiler{only: o.compactBefore}).selected(wl.name) {
		return nil
	}
	for _, r := range runs {
		fmt.Fprintf(os.Stderr, "%s: flush and compact before workload %s\n", r.Name, wl.name)
		if err := r.eng.FlushCompact(); err != nil {
			return fmt.Errorf("%s: flush+compact before %s: %w", r.Name, wl.name, err)
		}
		if r.ShapeBefore == nil {
			r.ShapeBefore = map[string]string{}
		}
		r.ShapeBefore[wl.name] = r.eng.Shape()
	}
	return nil
}
