package keyparts

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// OpenCLDevice is what an OpenCL runtime reports about a device and its
// platform, as clGetDeviceInfo and clGetPlatformInfo return the strings.
type OpenCLDevice struct {
	PlatformName    string // CL_PLATFORM_NAME
	PlatformVendor  string // CL_PLATFORM_VENDOR
	PlatformVersion string // CL_PLATFORM_VERSION
	Name            string // CL_DEVICE_NAME
	Version         string // CL_DEVICE_VERSION
	DriverVersion   string // CL_DRIVER_VERSION
	OpenCLCVersion  string // CL_DEVICE_OPENCL_C_VERSION
}

// Identity returns the device and compiler parts of a key for d: what the
// runtime reports about the device and driver, and the file identity of
// the driver libraries loaded in this process (ICDLibraries), which
// changes when a driver is replaced in place without a new version string.
func (d OpenCLDevice) Identity() (kcache.Device, kcache.Compiler) {
	dev := kcache.Device{Platform: d.PlatformName, Name: d.Name, Version: d.Version, Driver: d.DriverVersion}
	comp := kcache.Compiler{Name: "opencl:" + d.PlatformVendor, Version: d.PlatformVersion + " / " + d.OpenCLCVersion}
	if lib := ICDLibraries(); lib.Path != "" {
		comp.Library, comp.LibrarySize, comp.LibraryTime = lib.Path, lib.Size, lib.MTime
	}
	return dev, comp
}

// ICDLibraries describes the OpenCL driver libraries this process loaded,
// found by matching the libraries the ICD loader's vendor files name
// against the process's memory map. With several drivers loaded their
// identities are joined (paths by ':', sizes summed, times XORed): a change
// to any of them changes the key. It is computed once per process; the
// zero Library where no driver is found.
var ICDLibraries = sync.OnceValue(func() Library {
	dir := os.Getenv("OCL_ICD_VENDORS")
	if dir == "" {
		dir = "/etc/OpenCL/vendors"
	}
	return icdLibraries(dir, MappedFiles())
})

// icdLibraries joins the identities of the files of mapped that the vendor
// files (*.icd) of dir name.
func icdLibraries(dir string, mapped []string) Library {
	names := icdLibraryNames(dir)
	var out Library
	for _, path := range mapped {
		if !strings.Contains(path, ".so") || !names[filepath.Base(path)] {
			continue
		}
		lib, err := StatLibrary(path)
		if err != nil {
			continue
		}
		if out.Path != "" {
			out.Path += ":"
		}
		out.Path += path
		out.Size += lib.Size
		out.MTime ^= lib.MTime
	}
	return out
}

// icdLibraryNames returns the base names of the driver libraries the
// vendor files of dir name.
func icdLibraryNames(dir string) map[string]bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.icd"))
	names := map[string]bool{}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			names[filepath.Base(strings.TrimSpace(string(b)))] = true
		}
	}
	return names
}

// OpenCLEnv is the rule for OpenCL drivers' environment: the families
// drivers read to change their compilers' output (PoCL's POCL_*, Intel's
// CL_CONFIG_*, the loaders' OCL_ICD_*/OPENCL_* that pick a different driver
// altogether), less PoCL's variables that say where caches and logs go and
// how many threads run kernels.
var OpenCLEnv = EnvRule{
	Prefixes: []string{"POCL_", "CL_CONFIG_", "OCL_ICD_", "OPENCL_"},
	Irrelevant: map[string]bool{
		"POCL_CACHE_DIR":                         true,
		"POCL_KERNEL_CACHE":                      true,
		"POCL_DEBUG":                             true,
		"POCL_DEBUG_LLVM_PASSES":                 true,
		"POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES":  true,
		"POCL_AFFINITY":                          true,
		"POCL_MAX_PTHREAD_COUNT":                 true,
		"POCL_CPU_MAX_CU_COUNT":                  true,
		"POCL_MEMORY_LIMIT":                      true,
		"POCL_TRACING":                           true,
		"POCL_TRACING_OPT":                       true,
		"POCL_TRACING_FILTER":                    true,
		"POCL_STARTUP_DELAY":                     true,
		"POCL_SIGFPE_HANDLER":                    true,
		"POCL_IMPLICIT_FINISH":                   true,
		"POCL_DUMP_TASK_GRAPHS":                  true,
		"POCL_KERNEL_COMPILER_DEBUG_DIRECTORIES": true,
	},
}

// PoCL is PoCL's platform name (CL_PLATFORM_NAME).
const PoCL = "Portable Computing Language"

// OpenCLScan returns the dependency scanner's input for OpenCL C source
// src built with options on the platform named platform. A driver is
// given program text, not a path, so the working directory is searched
// first, as PoCL searches it (it compiles with "-I." ahead of the build
// options). PoCL searches no include directory of its own (its headers
// come in by -include), so its search path is complete; another driver,
// whose search order is not known, may search directories of its own and
// may or may not search the working directory, so every file an include
// could name is keyed. The caller adds what it knows of the source's
// place: its Path, WorkDir and Depends.
//
// PoCL compiles the text from a temporary file in its cache directory,
// which its compiler therefore searches first for the source's quoted
// includes (MainDir). Its clang replaces trigraphs in OpenCL C; whether
// another driver does is not known.
func OpenCLScan(src []byte, options, platform string) deps.Input {
	in := deps.Input{
		Source:             src,
		Args:               deps.SplitOptions(options),
		SearchWorkDir:      true,
		Builtins:           builtinHeaders(),
		CompleteSearchPath: platform == PoCL,
		EveryCandidate:     platform != PoCL,
	}
	if platform == PoCL {
		in.MainDir = PoCLTempDir(os.Getenv)
		in.Trigraphs = deps.TrigraphsOn
	}
	return in
}

// PoCLTempDir returns the directory PoCL writes a program's text to
// before compiling it: POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl/kcache,
// else $HOME/.cache/pocl/kcache (PoCL's cache directory, used for its
// temporary files even with its cache off).
func PoCLTempDir(getenv func(string) string) string {
	if d := getenv("POCL_CACHE_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return d + "/pocl/kcache"
	}
	return getenv("HOME") + "/.cache/pocl/kcache"
}

// builtinHeaders lists the headers OpenCL compilers include on their own
// (PoCL's kernel headers, clang's opencl-c.h): their macros can take part
// in a computed include. Found once per process; the scanner reads them
// only for a source with a computed include.
var builtinHeaders = sync.OnceValue(func() []string {
	var out []string
	for _, pattern := range []string{
		"/usr/share/pocl/include/*.h",
		"/usr/local/share/pocl/include/*.h",
		"/usr/lib/llvm-*/lib/clang/*/include/opencl-c*.h",
		"/usr/lib/clang/*/include/opencl-c*.h",
	} {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	return out
})
