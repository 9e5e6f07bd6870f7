package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	keyLen   = 16
	valueLen = 100
)

// Keys are "key%013d". With -keys=seq (the default) present keys are the
// even numbers 2i (i < n) and absent keys the odd numbers 2j+1 (j < n-1):
// the same length, inside the key range, each absent key adjacent to two
// present ones (the worst case for a weak 32-bit filter hash). With
// -keys=scattered, key i is i·1000 plus a hashed offset in [0, 250) and
// absent key j is j·1000 + 500 plus a hashed offset in [0, 250): no two
// keys adjacent, the low digits irregular. Either way present key i sorts
// i-th and absent key j sorts between present keys j and j+1.
var scatteredKeys bool

func presentKey(dst []byte, i int) []byte {
	if scatteredKeys {
		return fmtKey(dst, int64(i)*1000+int64(mix64(uint64(i))%250))
	}
	return fmtKey(dst, 2*int64(i))
}

func absentKey(dst []byte, j int) []byte {
	if scatteredKeys {
		return fmtKey(dst, int64(j)*1000+500+int64(mix64(uint64(j)^0xabcdef)%250))
	}
	return fmtKey(dst, 2*int64(j)+1)
}

// mix64 is splitmix64's finalizer.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func fmtKey(dst []byte, num int64) []byte {
	dst = append(dst[:0], "key0000000000000"...)
	for p := keyLen - 1; num > 0 && p >= 3; p-- {
		dst[p] = byte('0' + num%10)
		num /= 10
	}
	return dst
}

// values holds distinct 100-byte values, each 50 random printable bytes
// written twice, so they compress about 2:1 (as db_bench's
// CompressibleString at ratio 0.5). The value of present key i is
// value(i); reads check it.
type values struct{ buf []byte }

const numValues = 1 << 14

func newValues(seed uint64) *values {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	buf := make([]byte, numValues*valueLen)
	for v := 0; v < numValues; v++ {
		p := buf[v*valueLen : (v+1)*valueLen]
		for i := 0; i < valueLen/2; i++ {
			p[i] = byte(' ' + r.IntN(95))
		}
		copy(p[valueLen/2:], p[:valueLen/2])
	}
	return &values{buf}
}

func (v *values) value(i int) []byte {
	o := (i % numValues) * valueLen
	return v.buf[o : o+valueLen : o+valueLen]
}

// sample is one measurement of process-wide resources.
type sample struct {
	wall        time.Time
	cpu         time.Duration // user + system
	faults      int64         // minor + major page faults
	syscr, rchr int64         // read syscalls, bytes they returned (/proc/self/io)
	syscw, wchr int64         // write syscalls, bytes
	writeBytes  int64         // bytes sent to the block layer
	steal       time.Duration // machine-wide CPU time the hypervisor gave to others (/proc/stat)
}

// processUsage is the process's user and system CPU time and its page
// faults so far (zero if getrusage fails).
func processUsage() (cpu time.Duration, faults int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt + ru.Majflt
}

func takeSample() sample {
	s := sample{wall: time.Now(), steal: stealTime()}
	s.cpu, s.faults = processUsage()
	if f, err := os.Open("/proc/self/io"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, val, ok := strings.Cut(sc.Text(), ": ")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			switch name {
			case "syscr":
				s.syscr = n
			case "rchar":
				s.rchr = n
			case "syscw":
				s.syscw = n
			case "wchar":
				s.wchr = n
			case "write_bytes":
				s.writeBytes = n
			}
		}
		f.Close()
	}
	return s
}

// cost is the difference between two samples.
type cost struct {
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Faults     int64   `json:"page_faults"`
	ReadCalls  int64   `json:"read_syscalls"`
	ReadBytes  int64   `json:"read_syscall_bytes"`
	WriteBytes int64   `json:"write_syscall_bytes"`
	// StealSeconds is the CPU time the hypervisor ran other guests on
	// this VM's vCPUs meanwhile, summed over all vCPUs: a phase with
	// steal ran on less than the machine it reports.
	StealSeconds float64 `json:"steal_seconds"`
}

// StealPercent is the stolen share of the machine's CPU time over the
// phase: StealSeconds / (Seconds × the vCPUs).
func (c cost) StealPercent() float64 {
	if c.Seconds <= 0 {
		return 0
	}
	return 100 * c.StealSeconds / (c.Seconds * float64(runtime.NumCPU()))
}

func (c *cost) add(a, b sample) {
	c.Seconds += b.wall.Sub(a.wall).Seconds()
	c.CPUSeconds += (b.cpu - a.cpu).Seconds()
	c.StealSeconds += (b.steal - a.steal).Seconds()
	c.Faults += b.faults - a.faults
	// Subtract our own read of /proc/self/io (one syscall or two).
	c.ReadCalls += b.syscr - a.syscr
	c.ReadBytes += b.rchr - a.rchr
	c.WriteBytes += b.wchr - a.wchr
}

// stealTime reads the steal column of /proc/stat's "cpu" line (all vCPUs,
// in USER_HZ ticks of 10 ms); 0 where there is none.
func stealTime() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0
	}
	ticks, err := strconv.ParseInt(fields[8], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// diskUsage returns the allocated bytes under dir and the apparent size of
// its table files (.sst for sieve, pebble and badger; .ldb for goleveldb).
func diskUsage(dir string) (allocated, tables int64) {
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		} else {
			allocated += info.Size()
		}
		switch filepath.Ext(path) {
		case ".sst", ".ldb":
			tables += info.Size()
		}
		return nil
	})
	return
}

func mib(b int64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%dB", b)
}
