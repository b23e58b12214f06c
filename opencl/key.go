package opencl

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/kcache/kcache"
)

// Source is an OpenCL C program to build through the cache.
type Source struct {
	// Code is the program text.
	Code []byte
	// Path is the file Code was read from, if any, for messages. The
	// driver is given the text alone: includes are searched from the
	// working directory, as PoCL searches them, not from Path's directory.
	Path string
	// Options are the build options. Their -I directories are searched for
	// headers, their -D and -U options expand computed includes, and
	// every header found becomes part of the key, so editing a header
	// causes a rebuild (see package deps for the rules).
	Options string
	// Depends are files the build depends on that no scanner can see
	// (read by the program at build time, or named in a way that cannot
	// be followed), relative to the working directory: each file's
	// content enters the key, and a missing one is checked again on every
	// lookup.
	Depends []string
}

// FormatOpenCLC names OpenCL C source in a key's Image.Format.
const FormatOpenCLC = "opencl-c"

// irrelevantEnv lists variables of the POCL_ and CL_ families that do not
// change the code a compiler produces: where caches and logs go, how many
// threads run kernels. Every other variable of those families is part of
// the key. An unknown variable therefore costs at worst a spurious rebuild,
// never a stale binary; adding a name here is a claim that needs checking
// against the driver's source.
var irrelevantEnv = map[string]bool{
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
}

// codegenEnvPrefixes are the families of variables drivers read to change
// their compilers' output (PoCL's POCL_*, Intel's CL_CONFIG_*, the
// loaders' OCL_ICD_*/OPENCL_* that pick a different driver altogether).
var codegenEnvPrefixes = []string{"POCL_", "CL_CONFIG_", "OCL_ICD_", "OPENCL_"}

// compilerEnv returns the environment variables that are part of a build's
// identity, from environ (os.Environ's form).
func compilerEnv(environ []string) []kcache.EnvVar {
	var out []kcache.EnvVar
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if irrelevantEnv[name] || !hasAnyPrefix(name, codegenEnvPrefixes) {
			continue
		}
		out = append(out, kcache.EnvVar{Name: name, Value: value})
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// deviceIdentity returns the device and compiler parts of a key for d:
// what the runtime reports about the device and driver, and the file
// identity (size, modification time) of the driver libraries loaded in
// this process, which change when a driver is replaced in place.
func deviceIdentity(d Device) (kcache.Device, kcache.Compiler) {
	p := d.Platform()
	dev := kcache.Device{Platform: p.Name(), Name: d.Name(), Version: d.Version(), Driver: d.DriverVersion()}
	comp := kcache.Compiler{Name: "opencl:" + p.Vendor(), Version: p.Version() + " / " + d.OpenCLCVersion()}
	if lib := driverLibrary(); lib.path != "" {
		comp.Library, comp.LibrarySize, comp.LibraryTime = lib.path, lib.size, lib.mtime
	}
	return dev, comp
}

type libraryFile struct {
	path        string
	size, mtime int64
}

// driverLibrary finds the ICD driver libraries this process loaded, by
// matching the libraries the loader's vendor files name against the
// process's memory map, and describes them. With several drivers loaded
// their identities are joined: a change to any of them changes the key.
var driverLibrary = sync.OnceValue(func() libraryFile {
	names := icdLibraryNames()
	var out libraryFile
	for _, path := range mappedLibraries() {
		if !names[filepath.Base(path)] {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		if out.path != "" {
			out.path += ":"
		}
		out.path += path
		out.size += fi.Size()
		out.mtime ^= fi.ModTime().UnixNano()
	}
	return out
})

// icdLibraryNames returns the base names of the driver libraries the ICD
// loader's vendor files name (OCL_ICD_VENDORS or /etc/OpenCL/vendors).
func icdLibraryNames() map[string]bool {
	dir := os.Getenv("OCL_ICD_VENDORS")
	if dir == "" {
		dir = "/etc/OpenCL/vendors"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.icd"))
	names := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			names[filepath.Base(strings.TrimSpace(string(b)))] = true
		}
	}
	return names
}

// mappedLibraries returns the paths of the shared objects mapped into this
// process, from /proc/self/maps; nil where that file does not exist.
func mappedLibraries() []string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.Contains(fields[5], ".so") || seen[fields[5]] {
			continue
		}
		seen[fields[5]] = true
		out = append(out, fields[5])
	}
	return out
}
