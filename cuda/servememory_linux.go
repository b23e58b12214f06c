package cuda

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// madvHugePage is Linux's MADV_HUGEPAGE: back the range with transparent
// huge pages where the system's policy is "madvise" (as on the H100 hosts
// measured) or "always".
const madvHugePage = 14

// hugePageAdvisor asks the kernel for transparent huge pages on the large
// private anonymous mappings of this process: NVRTC's PCH heap and the
// memory its compiles use. A PCH'd compile was measured to spend 55-150
// ms of its 220-500 ms in the kernel, handling 18,000-29,000 page faults
// of 4 KiB pages (bench/RESULTS-cuda.md, "Compile server"). Huge pages
// change how memory is mapped, never what NVRTC computes.
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
