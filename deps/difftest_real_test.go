package deps_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/kcache/kcache/deps"
)

// The same differential check as TestDifferentialClang, on real kernel
// trees: hashcat's (Debian's hashcat-data) and darktable's.

// realKernel is one program of a real tree, built as its application
// builds it.
type realKernel struct {
	path    string // the kernel's file: its text becomes PoCL's temporary file
	wd      string // the application's working directory
	options string // the build options string the application passes
}

// realSummary is what checkReal found over its kernels: the count of each
// verdict, and the files under the tree the keys held and clang -M
// listed, summed over the kernels checked (exact or widened).
type realSummary struct {
	counts        [numVerdicts]int
	keyed, listed int
}

// checkReal runs the differential check on kernels, in parallel, and
// reports failures; within is the tree whose files count.
func checkReal(t *testing.T, clang string, kernels []realKernel, within string) realSummary {
	tmp := t.TempDir()
	strace, _ := exec.LookPath("strace") // the places clang probes in vain, too
	var (
		mu     sync.Mutex
		counts [numVerdicts]int
		// keyed and listed sum the files under the tree each key
		// holds and clang -M lists, over the kernels checked.
		keyed, listed, checked, maxKeyed, maxListed int
		wg                                          sync.WaitGroup
	)
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := deps.NewScanner(nil) // warm across kernels, as in an application
			for i := range next {
				k := kernels[i]
				dir := filepath.Join(tmp, fmt.Sprint(i))
				o := checkKernel(s, clang, strace, k, dir, within)
				os.RemoveAll(dir)
				mu.Lock()
				counts[o.v]++
				if o.v == exact || o.v == widened {
					keyed, listed, checked = keyed+o.keyed, listed+o.listed, checked+1
					maxKeyed, maxListed = max(maxKeyed, o.keyed), max(maxListed, o.listed)
				}
				switch o.v {
				case failure, clash, unseen:
					t.Errorf("%s (options %q): %s: %v", k.path, k.options, verdictNames[o.v], o.missed)
				case rejected:
					t.Logf("%s: clang rejects it (not counted): %s", k.path, firstLine(o.detail))
				case refused:
					t.Logf("%s: uncacheable: %s", k.path, firstLine(o.detail))
				case scanErr:
					t.Errorf("%s: scanner error: %s", k.path, o.detail)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range kernels {
		next <- i
	}
	close(next)
	wg.Wait()
	var b strings.Builder
	for v, n := range counts {
		fmt.Fprintf(&b, " %s %d", verdictNames[v], n)
	}
	t.Logf("%d kernels:%s", len(kernels), b.String())
	if checked > 0 {
		t.Logf("files under %s: %d keyed, %d listed by clang -M over %d kernels (%.1f and %.1f per kernel; most: %d keyed, %d listed)",
			within, keyed, listed, checked, float64(keyed)/float64(checked), float64(listed)/float64(checked), maxKeyed, maxListed)
	}
	return realSummary{counts: counts, keyed: keyed, listed: listed}
}

// checkKernel copies k's text to PoCL's temporary file under dir and
// compares.
func checkKernel(s *deps.Scanner, clang, strace string, k realKernel, dir, within string) outcome {
	src, err := os.ReadFile(k.path)
	if err != nil {
		return outcome{v: scanErr, detail: err.Error()}
	}
	main := filepath.Join(dir, "pocl-cache", "tempfile.cl")
	if err := os.MkdirAll(filepath.Dir(main), 0o755); err != nil {
		return outcome{v: scanErr, detail: err.Error()}
	}
	if err := os.WriteFile(main, src, 0o644); err != nil {
		return outcome{v: scanErr, detail: err.Error()}
	}
	run := clangRun{clang: clang, wd: k.wd, options: k.options, main: main, strace: strace}
	return compare(s, run, src, k.options, within, dir)
}

// realSample returns how many of n kernels to check: KCACHE_DIFF_REAL
// ("all" or a number), default def, spread evenly.
func realSample(t *testing.T, n, def int) int {
	switch v := os.Getenv("KCACHE_DIFF_REAL"); v {
	case "all":
		return n
	case "":
		return min(n, def)
	default:
		return min(n, envInt(t, "KCACHE_DIFF_REAL", def))
	}
}

// hashcatKernelName reads the hash mode and attack kernel of a kernel's
// file name (m01000_a3-optimized.cl).
var hashcatKernelName = regexp.MustCompile(`^m0*(\d+)(?:_a(\d))?-`)

// hashcatOptions are the build options hashcat 6.2.6 passes for kernel
// (backend.c): the kernel directory by -I and INCLUDE_PATH (relative to
// its shared folder, where it runs, or absolute), M2S, and the device's
// and hash mode's -D macros. vendor picks the VENDOR_ID (64 is PoCL, 32
// NVIDIA), which selects different branches of inc_vendor.h.
func hashcatOptions(kernel string, absolute bool, vendor int) string {
	mode, attack := "0", "0"
	if m := hashcatKernelName.FindStringSubmatch(filepath.Base(kernel)); m != nil {
		mode = m[1]
		if m[2] != "" {
			attack = m[2]
		}
	}
	inc := "OpenCL"
	if absolute {
		inc = filepath.Join(hashcatDir, "OpenCL")
	}
	var b strings.Builder
	fmt.Fprintf(&b, `-D KERNEL_STATIC -I OpenCL -I %s -D INCLUDE_PATH=%s -D "XM2S(x)=#x" -D "M2S(x)=XM2S(x)" `, inc, inc)
	fmt.Fprintf(&b, "-D LOCAL_MEM_TYPE=2 -D VENDOR_ID=%d -D CUDA_ARCH=0 ", vendor)
	for _, has := range []string{"ADD", "ADDC", "SUB", "SUBC", "VADD", "VADDC", "VADD_CO", "VADDC_CO", "VSUB", "VSUBB", "VSUB_CO", "VSUBB_CO", "VPERM", "VADD3", "VBFE", "BFE", "LOP3", "MOV64", "PRMT"} {
		fmt.Fprintf(&b, "-D HAS_%s=0 ", has)
	}
	fmt.Fprintf(&b, "-D VECT_SIZE=1 -D DEVICE_TYPE=2 -D DGST_R0=0 -D DGST_R1=1 -D DGST_R2=2 -D DGST_R3=3 -D DGST_ELEM=4 ")
	fmt.Fprintf(&b, "-D KERN_TYPE=%s -D ATTACK_EXEC=11 -D ATTACK_KERN=%s -D ATTACK_MODE=%s -w", mode, attack, attack)
	return b.String()
}

// hashcatDir is where Debian's hashcat-data puts hashcat's shared folder.
const hashcatDir = "/usr/share/hashcat"

// TestDifferentialHashcat checks hashcat's kernels (a spread sample; all
// with KCACHE_DIFF_REAL=all), each as hashcat builds it under PoCL.
func TestDifferentialHashcat(t *testing.T) {
	clang := requireClang(t)
	files, _ := filepath.Glob(filepath.Join(hashcatDir, "OpenCL", "m*.cl"))
	if len(files) == 0 {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but %s holds no kernels (apt-get install hashcat-data)", hashcatDir)
		}
		t.Skipf("no hashcat kernels in %s (apt-get install hashcat-data)", hashcatDir)
	}
	n := realSample(t, len(files), 24)
	var kernels []realKernel
	for i := 0; i < n; i++ {
		f := files[i*len(files)/n]
		// Alternate the spellings of the include directory and the
		// vendor, so both are covered by any sample.
		kernels = append(kernels, realKernel{path: f, wd: hashcatDir, options: hashcatOptions(f, i%2 == 1, []int{64, 32}[i/2%2])})
	}
	checkReal(t, clang, kernels, hashcatDir)
}

// darktableKernels is where Debian's darktable puts its OpenCL kernels.
const darktableKernels = "/usr/share/darktable/kernels"

// TestDifferentialDarktable checks darktable's kernels (programs.conf
// lists them), each as darktable 4.2 builds it: "-w %s %s -D%s=1 -I%s",
// the compile option (-cl-fast-relaxed-math by default), NVIDIA's
// -DNVIDIA_SM_20=1 or nothing, the vendor's name and the kernel
// directory, from the user's working directory.
func TestDifferentialDarktable(t *testing.T) {
	clang := requireClang(t)
	dir := os.Getenv("KCACHE_DARKTABLE_KERNELS")
	if dir == "" {
		dir = darktableKernels
	}
	conf, err := os.Open(filepath.Join(dir, "programs.conf"))
	if err != nil {
		t.Skipf("no darktable kernels (apt-get install darktable, or KCACHE_DARKTABLE_KERNELS=dir): %v", err)
	}
	defer conf.Close()
	var names []string
	sc := bufio.NewScanner(conf)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s/programs.conf lists no programs", dir)
	}
	wd := t.TempDir() // the user's working directory: unrelated to the kernels
	vendors := []string{"-D UNKNOWN=1", "-D NVIDIA=1 -DNVIDIA_SM_20=1", "-D AMD=1", "-D INTEL=1"}
	var kernels []realKernel
	for i, name := range names {
		v := strings.Replace(vendors[i%len(vendors)], "-D ", "-D", 1)
		kernels = append(kernels, realKernel{path: filepath.Join(dir, name), wd: wd, options: "-w -cl-fast-relaxed-math " + v + " -I" + dir})
	}
	checkReal(t, clang, kernels, dir)
}
