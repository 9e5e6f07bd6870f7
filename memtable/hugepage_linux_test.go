package memtable

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/sievedb/sieve/internal/base"
)

// thpCounters returns the kernel's counts of huge pages it mapped at a
// fault and of faults in advised memory that fell back to 4 KiB pages.
func thpCounters(t *testing.T) (alloc, fallback int64) {
	data, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		t.Skipf("no /proc/vmstat: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "thp_fault_alloc":
			alloc = n
		case "thp_fault_fallback":
			fallback = n
		}
	}
	return alloc, fallback
}

// TestUseHugePagesReachesTheKernel fills a memtable that advises its B-tree
// nodes for huge pages and checks that the kernel's huge-page fault path saw
// it (a huge page mapped, or a fallback when none was free), and that the
// entries read back. Without the advice, in THP's usual "madvise" mode,
// neither counter moves.
func TestUseHugePagesReachesTheKernel(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages unavailable: %q %v", mode, err)
	}
	a0, f0 := thpCounters(t)
	m := New()
	m.UseHugePages()
	const n = 200_000 // about 24 MiB of arena and nodes, 8 MiB of them nodes
	key := make([]byte, 16)
	val := bytes.Repeat([]byte{'v'}, 100)
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(key, uint64(i)*0x9E3779B97F4A7C15)
		binary.BigEndian.PutUint64(key[8:], uint64(i))
		m.Add(uint64(i+1), base.KindSet, key, val)
	}
	a1, f1 := thpCounters(t)
	t.Logf("huge pages mapped at a fault: %d, fallbacks: %d", a1-a0, f1-f0)
	if a1-a0+f1-f0 == 0 {
		t.Fatalf("filling %d entries with UseHugePages took no huge-page fault", n)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		binary.BigEndian.PutUint64(key, uint64(i)*0x9E3779B97F4A7C15)
		binary.BigEndian.PutUint64(key[8:], uint64(i))
		found := false
		m.Get(key, base.SeqNumMax, func(k base.InternalKey, v []byte) bool {
			found = bytes.Equal(v, val)
			return false
		})
		if !found {
			t.Fatalf("entry %d not read back", i)
		}
	}
}

func TestGodebugSet(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"", false},
		{"disablethp=1", true},
		{"gctrace=1, disablethp=1", true},
		{"disablethp=0", false},
		{"disablethp=1,disablethp=0", false},
		{"xdisablethp=1", false},
	} {
		if got := godebugSet(tc.s, "disablethp"); got != tc.want {
			t.Errorf("godebugSet(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// BenchmarkFaultIn measures what faulting fresh memory in costs, per 64
// MiB: a new anonymous mapping touched once per 4 KiB page, as 4 KiB
// pages and advised for 2 MiB transparent huge pages (adviseHuge); the
// mmap and munmap are not timed. On some virtual machines the 4 KiB
// pages cost about 10 µs each:
//
//	go test -run=NONE -bench='BenchmarkFaultIn$' ./memtable
//
// Run back to back, it reuses memory the previous iteration freed; see
// BenchmarkFaultInAfterIdle for memory the machine has not touched lately.
func BenchmarkFaultIn(b *testing.B) { benchFaultIn(b, 0) }

// BenchmarkFaultInAfterIdle is BenchmarkFaultIn with the process idle for
// 3 s before each iteration: on a VM guest that reports free memory to
// its host (virtio-balloon free page reporting, which reports free blocks
// of 2 MiB and up after a delay of about 2 s), the freed memory is the
// host's again by then, and faulting it back in faults on the host as
// well. Huge pages are made of such blocks; 4 KiB pages mostly come from
// smaller free ones (doc/performance.md gives the figures this measured).
// Each iteration sleeps, so pick the count:
//
//	go test -run=NONE -bench=BenchmarkFaultInAfterIdle -benchtime=3x ./memtable
func BenchmarkFaultInAfterIdle(b *testing.B) { benchFaultIn(b, 3*time.Second) }

// benchFaultIn times faultIn of a fresh 64 MiB mapping, in 4 KiB and in
// huge pages, after idle (untimed) each time.
func benchFaultIn(b *testing.B, idle time.Duration) {
	const size = 64 << 20
	for _, huge := range []bool{false, true} {
		b.Run(map[bool]string{false: "4KiB", true: "huge"}[huge], func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				time.Sleep(idle)
				m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				// With huge, the advice covers the whole 2 MiB pages the
				// mapping (not 2 MiB-aligned) overlaps.
				faultIn(unsafe.Pointer(&m[0]), size, huge)
				b.StopTimer()
				if err := syscall.Munmap(m); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
