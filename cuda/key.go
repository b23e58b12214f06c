package cuda

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
)

// Source is a CUDA C++ program to compile through the cache.
type Source struct {
	// Code is the program text.
	Code []byte
	// Path is the file Code was read from, if any, as the caller names it
	// (relative names keep keys equal across checkouts). It is the
	// program's name in NVRTC's diagnostics and line info, and quoted
	// includes are searched in its directory.
	Path string
	// Options are NVRTC options, one per element ("-std=c++17",
	// "-I", "include", "-DTILE=16"). Without an -arch option the cache
	// compiles for the device's own architecture.
	Options []string
	// Headers are handed to NVRTC in memory; they take precedence over
	// files of the same name.
	Headers []Header
	// NameExpressions are template instantiations or other names whose
	// mangled names the program needs (nvrtcAddNameExpression):
	// "gemm<float, 16>". CachedModule.Function accepts them.
	NameExpressions []string
	// Depends are files the program depends on that no scanner can see
	// (a file a header reads through a macro NVRTC is given, a generated
	// table): each enters the key, so editing it causes a rebuild.
	Depends []string
}

// FormatCUDA names CUDA C++ source in a key's Image.Format.
const FormatCUDA = "cuda-c++"

// compilerEnv is the rule for the environment variables that are part of
// a build's identity: the families the driver and NVRTC read
// (CUDA_FORCE_PTX_JIT, CUDA_DISABLE_PTX_JIT, NVRTC_*, ...), less those
// known not to change the code NVRTC or the driver's JIT produces.
var compilerEnv = keyparts.EnvRule{
	Prefixes: []string{"CUDA_", "NVRTC_"},
	Irrelevant: map[string]bool{
		// Which GPUs a process sees and in what order: the device's own
		// identity is in the key, and the ranks of one job, each given a
		// different GPU of one kind, must share their entries.
		"CUDA_VISIBLE_DEVICES": true,
		"CUDA_DEVICE_ORDER":    true,
		// The driver's own JIT cache: where it is and whether it is used.
		"CUDA_CACHE_PATH":    true,
		"CUDA_CACHE_MAXSIZE": true,
		"CUDA_CACHE_DISABLE": true,
		// When work runs, not what code it runs.
		"CUDA_LAUNCH_BLOCKING":        true,
		"CUDA_MODULE_LOADING":         true,
		"CUDA_MODULE_DATA_LOADING":    true,
		"CUDA_DEVICE_MAX_CONNECTIONS": true,
	},
}

// hasArch reports whether options choose a target architecture.
func hasArch(options []string) bool {
	return slices.ContainsFunc(options, func(o string) bool {
		return o == "-arch" || strings.HasPrefix(o, "-arch=") || strings.HasPrefix(o, "--gpu-architecture")
	})
}

// archOption returns the value of the options' target architecture
// ("sm_90", "compute_90"), or "".
func archOption(options []string) string {
	arch := ""
	for i, o := range options {
		switch {
		case (o == "-arch" || o == "--gpu-architecture") && i+1 < len(options):
			arch = options[i+1]
		case strings.HasPrefix(o, "-arch="):
			arch = o[len("-arch="):]
		case strings.HasPrefix(o, "--gpu-architecture="):
			arch = o[len("--gpu-architecture="):]
		}
	}
	return arch
}

// programName is what NVRTC calls the program: its file's path as given
// (NVRTC resolves the program's quoted includes from the path's
// directory, as a compiler resolves them from the file's), or a fixed name
// for source held in memory.
func programName(src Source) string {
	if src.Path != "" {
		return src.Path
	}
	return "kcache.cu"
}

// encodeOptions writes the options a key holds, unambiguously (each
// quoted), after the program's name, which NVRTC writes into line info.
func encodeOptions(name string, options []string) string {
	// Sized once, quoted in place: a key is computed on every lookup.
	n := len("program=") + len(name) + 2
	for _, o := range options {
		n += len(o) + 3
	}
	b := make([]byte, 0, n+16)
	b = strconv.AppendQuote(append(b, "program="...), name)
	for _, o := range options {
		b = strconv.AppendQuote(append(b, ' '), o)
	}
	return string(b)
}

// identity is the device and compiler part of every key of one context.
type identity struct {
	dev    kcache.Device
	comp   kcache.Compiler
	arch   string // "sm_90": what a build targets by default
	ptx    bool   // NVRTC cannot target arch: builds emit PTX for ptxArch
	cc     int    // the device's compute capability, 90 for 9.0
	reason string // why builds fall back to PTX, when ptx
	// files waits for the digest of compilerFiles, which comp.Files
	// takes in every key (compiler); nil leaves comp as it is.
	files func() kcache.Digest
}

// compiler returns the compiler part of a key: comp, with the digest of
// the compiler's files once it is known.
func (id *identity) compiler() kcache.Compiler {
	c := id.comp
	if id.files != nil {
		c.Files = id.files()
	}
	return c
}

// compilerFiles returns the files that compile a program, found once per
// process, after both libraries are loaded: NVRTC, what it links, and the
// builtins library it opens at its first compile; the driver, what it
// links, and the JIT compilers it opens for PTX (a build that falls back
// to PTX is compiled by them). Each library is one file of many: a key
// that held only libnvrtc and libcuda would not change when the builtins
// or the PTX compiler were replaced.
var compilerFiles = sync.OnceValue(func() keyparts.Files {
	files := keyparts.LibraryFiles(NVRTCLibrary(), "libnvrtc-builtins.so*")
	return append(files, keyparts.LibraryFiles(DriverLibrary(),
		"libnvidia-ptxjitcompiler.so*", "libnvidia-nvvm.so*", "libnvidia-gpucomp.so*")...)
})

// compilerDigest returns a wait for the digest of compilerFiles. The
// first call starts finding the files on a goroutine of their own: a
// new process's NewCache returns without them, and its first key waits
// for them only after its scan, which they overlap. Finding them reads
// the ELF headers of the libraries and what they need, /proc/self/maps
// twice and the libraries' directories (the driver's may hold thousands
// of files): time a new process's first warm start used to add to the
// scan's.
var compilerDigest = sync.OnceValue(func() func() kcache.Digest {
	done := make(chan kcache.Digest, 1)
	go func() { done <- compilerFiles().Digest() }()
	return sync.OnceValue(func() kcache.Digest { return <-done })
})

// Whether each library compilerFiles looks at is loaded: set by Init and
// LoadNVRTC on success.
var driverLoaded, nvrtcLoaded atomic.Bool

// libraryLoaded records that the driver or NVRTC (loaded) is loaded and,
// once both are, starts the search for the compiler's files: a process
// loads them, makes its context (100 ms or more), then its cache and its
// first key, by when the search is done. The files found do not depend
// on when: the libraries' closure is what they need, mapped when they
// were, and what they open later is found on disk.
func libraryLoaded(loaded *atomic.Bool) {
	loaded.Store(true)
	if driverLoaded.Load() && nvrtcLoaded.Load() {
		compilerDigest()
	}
}

// deviceIdentity reads what a key needs about dev, the driver and NVRTC.
func deviceIdentity(dev Device) (identity, error) {
	name, err := dev.Name()
	if err != nil {
		return identity{}, err
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return identity{}, err
	}
	drv, err := DriverVersion()
	if err != nil {
		return identity{}, err
	}
	nvMajor, nvMinor, err := NVRTCVersion()
	if err != nil {
		return identity{}, err
	}
	archs, err := SupportedArchs()
	if err != nil {
		return identity{}, err
	}
	id := identity{cc: major*10 + minor, arch: fmt.Sprintf("sm_%d%d", major, minor)}
	// A library that cannot be read is keyed by its path alone: the
	// version numbers above still tell drivers apart.
	lib, _ := keyparts.StatLibrary(DriverLibrary())
	id.dev = kcache.Device{
		Platform: "CUDA",
		Name:     name,
		Version:  id.arch,
		Driver:   fmt.Sprintf("cuda %d; %s %d %d", drv, lib.Path, lib.Size, lib.MTime),
	}
	nv, _ := keyparts.StatLibrary(NVRTCLibrary())
	id.comp = kcache.Compiler{Name: "nvrtc", Version: fmt.Sprintf("%d.%d", nvMajor, nvMinor),
		Library: nv.Path, LibrarySize: nv.Size, LibraryTime: nv.MTime}
	id.files = compilerDigest()
	id.ptx, id.reason = ptxFallback(id.cc, archs, nvMajor, nvMinor)
	return id, nil
}

// ptxFallback decides whether NVRTC can emit CUBIN for compute capability
// cc: a device newer than the NVRTC library cannot be targeted, and gets
// PTX for the newest architecture NVRTC knows, which the driver compiles.
func ptxFallback(cc int, archs []int, major, minor int) (bool, string) {
	if len(archs) == 0 || slices.Contains(archs, cc) {
		return false, ""
	}
	return true, fmt.Sprintf("NVRTC %d.%d cannot compile for sm_%d (it knows sm_%d to sm_%d): compiling PTX, which the driver JIT-compiles on every load",
		major, minor, cc, archs[0], archs[len(archs)-1])
}

// ptxArchFor returns the virtual architecture to emit PTX for on a device
// of compute capability cc: the newest NVRTC knows at or below cc.
func ptxArchFor(cc int, archs []int) string {
	best := 0
	for _, a := range archs {
		if a <= cc && a > best {
			best = a
		}
	}
	if best == 0 && len(archs) > 0 {
		best = archs[0]
	}
	return fmt.Sprintf("compute_%d", best)
}
