package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// nvrtcSonames are NVRTC's sonames, newest first. NVRTC is versioned by
// CUDA major release (libnvrtc.so.13, .12, and .11.2 for all of CUDA 11).
var nvrtcSonames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

const nvrtcHint = "install NVRTC (the CUDA toolkit's cuda-nvrtc package, or pip's nvidia-cuda-nvrtc), or set CUDA_HOME to the toolkit"

var (
	nvrtcOnce sync.Once
	nvrtcErr  error  // written once inside nvrtcOnce
	nvrtcFile string // the library loaded
)

// LoadNVRTC finds and loads NVRTC, once per process. The search: the
// loader's path by soname (LD_LIBRARY_PATH, ldconfig), then the lib64
// directories of $CUDA_HOME, $CUDA_PATH and /usr/local/cuda*. The error
// wraps ErrNoNVRTC and says what to install.
func LoadNVRTC() error {
	nvrtcOnce.Do(func() { nvrtcErr = loadNVRTC(nvrtcCandidates()) })
	return nvrtcErr
}

// nvrtcCandidates lists what to try, in order: sonames first, so the
// loader's own choice wins; then files in the toolkit directories, newest
// version first.
func nvrtcCandidates() []string {
	out := slices.Clone(nvrtcSonames)
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := os.Getenv(env); d != "" {
			dirs = append(dirs, filepath.Join(d, "lib64"), filepath.Join(d, "lib"))
		}
	}
	roots, _ := filepath.Glob("/usr/local/cuda*")
	slices.Sort(roots)
	slices.Reverse(roots)
	for _, r := range roots {
		dirs = append(dirs, filepath.Join(r, "lib64"), filepath.Join(r, "targets", "x86_64-linux", "lib"))
	}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "libnvrtc.so.*"))
		files = slices.DeleteFunc(files, func(f string) bool { return strings.Contains(f, "builtins") })
		slices.Sort(files)
		slices.Reverse(files)
		out = append(out, files...)
	}
	return out
}

func loadNVRTC(names []string) error {
	h, name, err := openLibrary(names)
	if err != nil {
		return fmt.Errorf("%w: libnvrtc.so.* not found: %s: %w", ErrNoNVRTC, nvrtcHint, err)
	}
	for _, e := range nvrtcEntries() {
		sym, err := lookup(h, e.name)
		if err != nil {
			if e.optional {
				continue
			}
			return fmt.Errorf("%w: %s unusable: missing symbol %s: %w", ErrNoNVRTC, name, e.name, err)
		}
		bind(e.fn, sym)
	}
	nvrtcFile = mappedPath(name)
	preloadBuiltins(nvrtcFile)
	libraryLoaded(&nvrtcLoaded)
	return nil
}

// preloadBuiltins loads libnvrtc-builtins from the directory NVRTC was
// found in. NVRTC dlopens it by soname at its first compile, which fails
// when NVRTC itself was found by path outside the loader's search path;
// once loaded here, that dlopen finds it by soname.
func preloadBuiltins(nvrtc string) {
	if !filepath.IsAbs(nvrtc) {
		return
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(nvrtc), "libnvrtc-builtins.so.*"))
	slices.Sort(files)
	slices.Reverse(files)
	if len(files) > 0 {
		// Best effort: if this fails, NVRTC's own search may still succeed,
		// and if it does not, its compile error says so.
		openLibraryGlobal(files[0])
	}
}

type nvrtcEntry struct {
	fn       any
	name     string
	optional bool
}

// NVRTC's entry points. nvrtcProgram is a uintptr handle; arrays of C
// strings are passed as pointers to arrays of *byte pinned for the call.
var (
	nvrtcVersion              func(major, minor *int32) nvrtcResult
	nvrtcGetErrorString       func(r nvrtcResult) string
	nvrtcGetNumSupportedArchs func(n *int32) nvrtcResult
	nvrtcGetSupportedArchs    func(archs *int32) nvrtcResult
	nvrtcCreateProgram        func(p *uintptr, src *byte, name *byte, n int32, headers **byte, names **byte) nvrtcResult
	nvrtcDestroyProgram       func(p *uintptr) nvrtcResult
	nvrtcCompileProgram       func(p uintptr, n int32, opts **byte) nvrtcResult
	nvrtcGetPTXSize           func(p uintptr, n *uintptr) nvrtcResult
	nvrtcGetPTX               func(p uintptr, buf *byte) nvrtcResult
	nvrtcGetCUBINSize         func(p uintptr, n *uintptr) nvrtcResult
	nvrtcGetCUBIN             func(p uintptr, buf *byte) nvrtcResult
	nvrtcGetProgramLogSize    func(p uintptr, n *uintptr) nvrtcResult
	nvrtcGetProgramLog        func(p uintptr, buf *byte) nvrtcResult
	nvrtcAddNameExpression    func(p uintptr, expr *byte) nvrtcResult
	nvrtcGetLoweredName       func(p uintptr, expr *byte, lowered **byte) nvrtcResult
)

func nvrtcEntries() []nvrtcEntry {
	return []nvrtcEntry{
		{&nvrtcVersion, "nvrtcVersion", false},
		{&nvrtcGetErrorString, "nvrtcGetErrorString", false},
		{&nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", true}, // CUDA 11.2+
		{&nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", true},
		{&nvrtcCreateProgram, "nvrtcCreateProgram", false},
		{&nvrtcDestroyProgram, "nvrtcDestroyProgram", false},
		{&nvrtcCompileProgram, "nvrtcCompileProgram", false},
		{&nvrtcGetPTXSize, "nvrtcGetPTXSize", false},
		{&nvrtcGetPTX, "nvrtcGetPTX", false},
		{&nvrtcGetCUBINSize, "nvrtcGetCUBINSize", true}, // CUDA 11.1+
		{&nvrtcGetCUBIN, "nvrtcGetCUBIN", true},
		{&nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", false},
		{&nvrtcGetProgramLog, "nvrtcGetProgramLog", false},
		{&nvrtcAddNameExpression, "nvrtcAddNameExpression", false},
		{&nvrtcGetLoweredName, "nvrtcGetLoweredName", false},
	}
}

// NVRTCLibrary returns the path of the loaded NVRTC library, resolved to
// the file in use.
func NVRTCLibrary() string { return nvrtcFile }

// NVRTCVersion returns NVRTC's version, e.g. 13, 0.
func NVRTCVersion() (major, minor int, err error) {
	if err := LoadNVRTC(); err != nil {
		return 0, 0, err
	}
	var ma, mi int32
	if err := nvrtcCheck("nvrtcVersion", nvrtcVersion(&ma, &mi)); err != nil {
		return 0, 0, err
	}
	return int(ma), int(mi), nil
}

// SupportedArchs returns the compute capabilities NVRTC can emit CUBIN
// for, as numbers (90 for sm_90), ascending. An NVRTC too old to say
// returns nil.
func SupportedArchs() ([]int, error) {
	if err := LoadNVRTC(); err != nil {
		return nil, err
	}
	if nvrtcGetNumSupportedArchs == nil || nvrtcGetSupportedArchs == nil {
		return nil, nil
	}
	var n int32
	if err := nvrtcCheck("nvrtcGetNumSupportedArchs", nvrtcGetNumSupportedArchs(&n)); err != nil || n == 0 {
		return nil, err
	}
	archs := make([]int32, n)
	if err := nvrtcCheck("nvrtcGetSupportedArchs", nvrtcGetSupportedArchs(&archs[0])); err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i, a := range archs {
		out[i] = int(a)
	}
	slices.Sort(out)
	return out, nil
}
