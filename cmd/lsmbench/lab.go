package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// The skeleton both labs (lsmbench filters, lsmbench sketches) share: the
// flags -out, -json and -progress; the output directory; the clock; the
// -sections run in order, each printed as it completes; the CSV and SVG
// files; and the closing lines or the JSON document. A lab supplies its
// own flags, experiments, tables and files (filter_*.go, sketch_*.go).

// labOutput is where a lab's results go: its -out, -json and -progress
// flags. Both labs' configs embed it where "out" appears in their JSON.
type labOutput struct {
	Out         string `json:"out"`
	JSON        bool   `json:"-"`
	Progress    string `json:"-"`
	outProvided bool
}

// flags declares -out, -json and -progress on fs.
func (o *labOutput) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.Out, "out", o.Out, "`directory` for the CSV files and SVG charts (default: a new temporary directory)")
	fs.BoolVar(&o.JSON, "json", o.JSON, "print the results as one JSON document instead of tables")
	fs.StringVar(&o.Progress, "progress", o.Progress, "progress bars: `auto`, on or off")
}

// parse parses a lab's command line with fs (see parseFlags) and notes
// whether -out was given.
func (o *labOutput) parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { o.outProvided = o.outProvided || f.Name == "out" })
	return nil
}

// labFiles closes both labs' JSON documents: the files written, and the
// run's wall time.
type labFiles struct {
	Files   []string `json:"files"`
	Seconds float64  `json:"seconds"`
}

// labSpec is what one lab gives runLab.
type labSpec struct {
	// name is the subcommand; without -out the files go to a new
	// temporary directory lsmbench-<name>-*.
	name string
	out  *labOutput
	// prepare, when not nil, runs once the clock has started, before the
	// first section and the header.
	prepare func()
	// header, when not nil, is printed before the first section.
	header   func(io.Writer)
	sections []string
	// section runs one of sections and returns how to print its table.
	section func(name string) (show func(io.Writer), err error)
	// write writes the lab's files into dir and returns their paths.
	write func(dir string) ([]string, error)
	// report is the -json document; tail is its labFiles.
	report any
	tail   *labFiles
}

// runLab runs l: it makes the output directory, starts the clock, runs the
// sections in order (stopping when ctx is cancelled), printing each as it
// completes unless -json, writes the files and prints the closing lines
// (or the JSON document).
func runLab(ctx context.Context, stdout io.Writer, l labSpec) error {
	o := l.out
	if !o.outProvided {
		var err error
		if o.Out, err = os.MkdirTemp("", "lsmbench-"+l.name+"-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	run := startLab()
	if l.prepare != nil {
		l.prepare()
	}
	if l.header != nil && !o.JSON {
		l.header(stdout)
	}
	for _, s := range l.sections {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		show, err := l.section(s)
		if err != nil {
			return err
		}
		if show != nil && !o.JSON {
			show(stdout)
		}
	}
	var err error
	if l.tail.Files, err = l.write(o.Out); err != nil {
		return err
	}
	l.tail.Seconds = run.elapsed()
	return run.finish(stdout, o.JSON, l.report, l.tail.Files, l.tail.Seconds)
}

// labFile is one file a lab writes: its name in -out and its contents.
type labFile struct {
	name  string
	write func(io.Writer) error
}

// writeFiles writes files into dir in order and returns their paths (those
// written so far on an error).
func writeFiles(dir string, files []labFile) ([]string, error) {
	var paths []string
	for _, f := range files {
		p, err := writeFile(dir, f.name, f.write)
		if err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// labRun measures one laboratory run (filters, sketches): wall and CPU time,
// and the load average at its start.
type labRun struct {
	start time.Time
	cpu   time.Duration
	load  float64
}

func startLab() labRun { return labRun{start: time.Now(), cpu: cpuTime(), load: loadAverage()} }

// elapsed is the run's wall time in seconds so far.
func (r labRun) elapsed() float64 { return time.Since(r.start).Seconds() }

// finish prints rep as one JSON document, or the files the run wrote and
// what the run cost, with a warning when the machine was busy.
func (r labRun) finish(stdout io.Writer, asJSON bool, rep any, files []string, wall float64) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "files (open the .svg in a browser):\n")
	for _, f := range files {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	fmt.Fprintf(stdout, "wall time %s, CPU time %s\n", seconds(wall), seconds((cpuTime() - r.cpu).Seconds()))
	if warn := busyWarning(max(r.load, loadAverage())); warn != "" {
		fmt.Fprintf(stdout, "warning: %s\n", warn)
	}
	return nil
}

// writeFile creates dir/name with the output of write and returns its path.
func writeFile(dir, name string, write func(io.Writer) error) (string, error) {
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := write(f); err != nil {
		f.Close()
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return path, f.Close()
}
