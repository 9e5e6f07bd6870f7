package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress bars. A phase shows a bar only once it has run for a second, so
// short phases print nothing; the bar goes to stderr and is cleared when the
// phase ends, leaving the report on stdout untouched. Workers report done
// operations in chunks (progressChunk) through one atomic counter, and a
// single goroutine redraws, so a bar costs the benchmark nearly nothing.

const (
	progressDelay  = time.Second
	progressRedraw = 150 * time.Millisecond
	progressChunk  = 1024
)

// progress makes phases. A nil *progress (bars off) makes phases that do
// nothing but count.
type progress struct {
	w io.Writer
}

// newProgress returns nil unless bars are wanted: mode "on", or "auto" with
// both stdout and stderr on a terminal (never with -json or -csv, whose
// output is for programs).
func newProgress(mode string, machineOutput bool, stdout, stderr io.Writer) *progress {
	switch {
	case mode == "off", machineOutput && mode != "on":
		return nil
	case mode == "on", isTerminal(stdout) && isTerminal(stderr):
		return &progress{w: stderr}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// phase is one timed step: a benchmark, or a flush/compaction.
type phase struct {
	done  atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
	total int64
}

// start begins a phase of total operations (-1: unknown, a spinner).
func (p *progress) start(desc string, total int64) *phase {
	ph := &phase{stop: make(chan struct{}), total: total}
	if p == nil {
		return ph
	}
	ph.wg.Add(1)
	go ph.draw(p.w, desc)
	return ph
}

// add records n more operations done; workers call it every progressChunk
// operations.
func (ph *phase) add(n int) { ph.done.Add(int64(n)) }

// finish stops the phase and clears its bar.
func (ph *phase) finish() {
	close(ph.stop)
	ph.wg.Wait()
}

// draw shows the bar once the phase has run for progressDelay. The rate in
// the description is the phase's own (done / elapsed): the library's rate
// would count the operations done before the bar appeared as one burst.
func (ph *phase) draw(w io.Writer, desc string) {
	defer ph.wg.Done()
	start := time.Now()
	select {
	case <-ph.stop:
		return
	case <-time.After(progressDelay):
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(progressRedraw),
		progressbar.OptionClearOnFinish(),
	}
	if ph.total >= 0 {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true))
	} else {
		opts = append(opts, progressbar.OptionSpinnerType(14))
	}
	bar := progressbar.NewOptions64(ph.total, opts...)
	tick := time.NewTicker(progressRedraw)
	defer tick.Stop()
	for {
		select {
		case <-ph.stop:
			_ = bar.Finish()
			_ = bar.Clear()
			return
		case <-tick.C:
			if ph.total < 0 {
				_ = bar.Add(1) // spinner
				continue
			}
			done := ph.done.Load()
			_ = bar.Set64(done)
			bar.Describe(fmt.Sprintf("%s %s ops/s", desc, commas(int64(float64(done)/time.Since(start).Seconds()))))
		}
	}
}
