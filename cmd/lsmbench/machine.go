package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The machine's state, so that a report says when its timings are suspect:
// these benchmarks run on shared, noisy machines, and a run that got a
// fraction of a CPU reports latencies that are mostly waiting.

// loadAverage returns the 1-minute load average, or -1 where /proc/loadavg
// does not exist.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// cpuTime returns the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// busyWarning returns a warning when the load average exceeds the CPUs,
// or "".
func busyWarning(load float64) string {
	if cpus := runtime.NumCPU(); load > float64(cpus) {
		return fmt.Sprintf("load average %.1f on %d CPUs: other processes compete for the CPUs, so times are inflated and tails long; compare ratios within one run", load, cpus)
	}
	return ""
}
