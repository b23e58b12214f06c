package cuda

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// madvHugePage is Linux's MADV_HUGEPAGE: back the range with transparent
// huge pages where the system's policy is "madvise" (as on the H100 hosts
// measured) or "always".
const madvHugePage = 14

// hugePageAdvisor asks the kernel for transparent huge pages on the large
// private anonymous mappings of this process: NVRTC's PCH heap and the
// memory its compiles use. A PCH'd compile spends 55-150 ms of its
// 220-500 ms in the kernel, handling 18,000-29,000 page faults of 4 KiB
// pages; TestServePhases (KCACHE_SERVE_PHASES_THP) measured whether huge
// pages cut them: they did not (bench/RESULTS-cuda.md, "Round 4"), so no
// worker uses it. Huge pages change how memory is mapped, never what NVRTC
// computes.
type hugePageAdvisor struct {
	// min is the smallest mapping advised: small ones are malloc's and
	// the runtime's, where a huge page would mostly be wasted.
	min uintptr
	// advised holds the mappings advised, by start and end, so that a
	// mapping is advised once.
	advised map[[2]uintptr]bool
}

// hugePageMin is the smallest mapping a worker advises: NVRTC's PCH
// heap and its compiles' arenas are tens to hundreds of megabytes;
// malloc's per-thread arenas start at 64 MiB reserved (most of it never
// touched), and a huge page of a small mapping would mostly be waste.
const hugePageMin = 4 << 20

// newHugePageAdvisor returns an advisor of the mappings of at least min
// bytes.
func newHugePageAdvisor(min uintptr) *hugePageAdvisor {
	return &hugePageAdvisor{min: min, advised: make(map[[2]uintptr]bool)}
}

// advise advises every mapping not advised before, and returns how many
// and how many bytes it advised.
func (a *hugePageAdvisor) advise() (n int, size uintptr, err error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: huge pages: %w", err)
	}
	for _, r := range anonymousMappings(maps, a.min) {
		if a.advised[r] {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1]-r[0], madvHugePage); e != 0 {
			return n, size, fmt.Errorf("cuda: madvise(MADV_HUGEPAGE) of %#x-%#x: %w", r[0], r[1], e)
		}
		a.advised[r] = true
		n, size = n+1, size+r[1]-r[0]
	}
	return n, size, nil
}

// anonymousMappings returns the private anonymous mappings of at least
// min bytes in maps (the text of /proc/PID/maps), as start and end.
func anonymousMappings(maps []byte, min uintptr) [][2]uintptr {
	var out [][2]uintptr
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode [path]
		f := bytes.Fields(sc.Bytes())
		anon := len(f) == 5 || len(f) == 6 && string(f[5]) == "[heap]" // malloc's main arena
		if !anon || string(f[4]) != "0" || len(f[1]) != 4 || f[1][3] != 'p' {
			continue // a file, the stack and the like, or shared
		}
		lo, hi, ok := bytes.Cut(f[0], []byte{'-'})
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start || uintptr(end-start) < min {
			continue
		}
		out = append(out, [2]uintptr{uintptr(start), uintptr(end)})
	}
	return out
}

func TestAnonymousMappings(t *testing.T) {
	maps := []byte(`55d0c0a00000-55d0c0c00000 r--p 00000000 fd:01 1234   /usr/bin/kcache
55d0c2000000-55d0c6000000 rw-p 00000000 00:00 0      [heap]
7f0000000000-7f0004000000 rw-p 00000000 00:00 0
7f0004000000-7f0004100000 rw-p 00000000 00:00 0
7f1000000000-7f1010000000 ---p 00000000 00:00 0
7f2000000000-7f2008000000 rw-s 00000000 00:01 77     /dev/shm/x
7f3000000000-7f3008000000 rw-p 00000000 fd:01 99     /tmp/__nvrtc_auto_pch_1_0/k_0.pch
7ffd00000000-7ffd08000000 rw-p 00000000 00:00 0      [stack]
bogus line
7f4000000000-7f3000000000 rw-p 00000000 00:00 0
`)
	got := anonymousMappings(maps, 4<<20)
	want := [][2]uintptr{
		{0x55d0c2000000, 0x55d0c6000000}, // malloc's main arena
		{0x7f0000000000, 0x7f0004000000}, // 64 MiB
		{0x7f1000000000, 0x7f1010000000}, // reserved, not yet usable: its advice stays with it
	}
	if !slices.Equal(got, want) {
		t.Errorf("anonymousMappings = %#x, want %#x (no file, shared, stack, small or malformed mapping)", got, want)
	}
}

// TestHugePageAdvisor advises a mapping of this process and finds the
// kernel's record of it (smaps' "hg" flag, VM_HUGEPAGE), once.
func TestHugePageAdvisor(t *testing.T) {
	const size = 8 << 20
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	a := newHugePageAdvisor(size)
	n, bytes, err := a.advise()
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 || bytes < size {
		t.Fatalf("advised %d mappings, %d bytes; want at least the test's of %d", n, bytes, size)
	}
	if !advisedHuge(t, mem) {
		t.Errorf("the mapping is not marked for huge pages (smaps VmFlags hg)")
	}
	// A second advise passes over every mapping advised already; the Go
	// runtime (the race detector's too) may have mapped new ones since,
	// which it advises.
	first := maps.Clone(a.advised)
	n2, _, err := a.advise()
	if err != nil {
		t.Fatal(err)
	}
	if fresh := len(a.advised) - len(first); n2 != fresh {
		t.Errorf("second advise: %d mappings advised, %d of them new; want only the new: each mapping is advised once", n2, fresh)
	}
	for r := range first {
		if !a.advised[r] {
			t.Errorf("mapping %#x forgotten by the second advise", r)
		}
	}
}

// advisedHuge reports whether smaps lists mem's mapping with the hg flag.
func advisedHuge(t *testing.T, mem []byte) bool {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	return smapsFlag(smaps, uintptr(unsafePointer(mem)), "hg")
}

func unsafePointer(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// smapsFlag reports whether the mapping of smaps holding addr has flag
// among its VmFlags.
func smapsFlag(smaps []byte, addr uintptr, flag string) bool {
	in := false
	for line := range strings.Lines(string(smaps)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(start) <= addr && addr < uintptr(end)
			continue
		}
		if in && f[0] == "VmFlags:" {
			return slices.Contains(f[1:], flag)
		}
	}
	return false
}
