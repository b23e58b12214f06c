package keyparts

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
// runtime reports about the device and driver, and the identity of the
// files of the drivers loaded in this process (OpenCLDriver): the ICD
// libraries in Library, every file in Files. Both change when a driver,
// a library it links or a file it reads is replaced or edited in place
// without a new version string.
func (d OpenCLDevice) Identity() (kcache.Device, kcache.Compiler) {
	dev := kcache.Device{Platform: d.PlatformName, Name: d.Name, Version: d.Version, Driver: d.DriverVersion}
	comp := kcache.Compiler{Name: "opencl:" + d.PlatformVendor, Version: d.PlatformVersion + " / " + d.OpenCLCVersion}
	drv := OpenCLDriver()
	if len(drv.ICD) == 0 {
		// No library a vendor file names is mapped: the driver was loaded
		// another way (by a path, or linked in), and any mapped file may
		// be its compiler.
		comp.Files = unfoundDriverFiles(ReadMaps()).Digest()
		return dev, comp
	}
	lib := drv.Library()
	comp.Library, comp.LibrarySize, comp.LibraryTime = lib.Path, lib.Size, lib.MTime
	comp.Files = drv.Files.Digest()
	return dev, comp
}

// icdNames returns the driver library names the ICD loaders would load,
// from every place either loader reads them (ocl-icd's OCL_ICD_FILENAMES
// and OCL_ICD_VENDORS, Khronos's OPENCL_VENDOR_PATH, and the default
// vendor directory): a name that is not loaded matches no mapped file, so
// the union costs nothing, and a name left out would leave its driver
// unkeyed.
func icdNames(getenv func(string) string) []string {
	var names []string
	for _, f := range filepath.SplitList(getenv("OCL_ICD_FILENAMES")) {
		if f != "" {
			names = append(names, f)
		}
	}
	switch v := getenv("OCL_ICD_VENDORS"); {
	case v == "":
	case strings.HasSuffix(v, ".icd"):
		names = append(names, vendorFileNames([]string{v})...)
	case isDir(v):
		names = append(names, vendorDirNames(v)...)
	default: // ocl-icd takes any other value as a library to load
		names = append(names, v)
	}
	if v := getenv("OPENCL_VENDOR_PATH"); v != "" {
		names = append(names, vendorDirNames(v)...)
	}
	return append(names, vendorDirNames("/etc/OpenCL/vendors")...)
}

// vendorDirNames returns the library names of the vendor files of dir.
func vendorDirNames(dir string) []string {
	return vendorFileNames(globFiles(dir, "*.icd"))
}

// vendorFileNames returns the library name each vendor file holds.
func vendorFileNames(files []string) []string {
	var names []string
	for _, f := range files {
		if b, err := readFile(f); err == nil && strings.TrimSpace(string(b)) != "" {
			names = append(names, strings.TrimSpace(string(b)))
		}
	}
	return names
}

// librarySearchPath returns the directories the dynamic loader searches
// for a bare library name: LD_LIBRARY_PATH's, then those of
// /etc/ld.so.conf (the loader's cache is built from them), then the
// default directories.
func librarySearchPath(ldLibraryPath string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(ldLibraryPath) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	dirs = append(dirs, ldSoConf("/etc/ld.so.conf", 0)...)
	return append(dirs, "/lib", "/usr/lib", "/lib64", "/usr/lib64")
}

// ldSoConf returns the directories an ld.so.conf file lists, following
// its includes (globs, relative to the file's directory) a few levels deep.
func ldSoConf(path string, depth int) []string {
	b, err := readFile(path)
	if err != nil || depth > 4 {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if pattern, ok := strings.CutPrefix(line, "include "); ok {
			pattern = strings.TrimSpace(pattern)
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(filepath.Dir(path), pattern)
			}
			for _, f := range glob(pattern) {
				dirs = append(dirs, ldSoConf(f, depth+1)...)
			}
		} else if strings.HasPrefix(line, "/") {
			dirs = append(dirs, line)
		}
	}
	return dirs
}

// OpenCLEnv is the rule for OpenCL drivers' environment: the families
// drivers read to change their compilers' output (PoCL's POCL_*, Intel's
// CL_CONFIG_*, the loaders' OCL_ICD_*/OPENCL_* that pick a different driver
// altogether), less PoCL's variables that say where caches and logs go,
// how many threads run kernels, and which work-group functions a binary
// holds.
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
		// Which work-group functions a binary holds when it is read
		// (kcache build --specialize), not how any is compiled: a binary
		// read with it serves the processes that run without it.
		"POCL_BINARY_SPECIALIZE_WG": true,
	},
}

// PoCL is PoCL's platform name (CL_PLATFORM_NAME).
const PoCL = "Portable Computing Language"

// OpenCLScan returns the dependency scanner's input for OpenCL C source
// src built with options on the platform named platform. The options
// (for PoCL, followed by POCL_EXTRA_BUILD_FLAGS) are split as the
// platform's driver splits them (deps.SplitDriverOptions):
// exactly for PoCL; for another driver, whose split is not known, only
// where no quote or backslash makes it uncertain, and otherwise an error
// wrapping deps.ErrUncacheable, so the program is built and not stored.
//
// A driver is given program text, not a path, so the working directory
// is searched first, as PoCL searches it (it compiles with "-I." ahead of
// the build options). PoCL searches no include directory of its own (its
// headers come in by -include), so its search path is complete; another
// driver, whose search order is not known, may search directories of its
// own and may or may not search the working directory, so every file an
// include could name is keyed. The caller adds what it knows of the
// source's place: its Path, WorkDir and Depends.
//
// PoCL compiles the text from a temporary file in its cache directory,
// which its compiler therefore searches first for the source's quoted
// includes (MainDir). Its clang replaces trigraphs in OpenCL C, the only
// language PoCL builds from source; whether another driver does, and
// whether it lexes C++ (C++ for OpenCL), is not known.
func OpenCLScan(src []byte, options, platform string) (deps.Input, error) {
	driver := deps.DriverUnknown
	if platform == PoCL {
		driver = deps.DriverPoCL
		extra, _ := PoCLExtraFlags(os.LookupEnv)
		options = withPoCLExtraFlags(options, extra)
	}
	args, err := deps.SplitDriverOptions(driver, options)
	if err != nil {
		return deps.Input{}, fmt.Errorf("build options for %q: %w", platform, err)
	}
	if a, ok := unfollowedOption(args); ok {
		// PoCL refuses such an option as a token of its own, but splits
		// twice: first at ' ' to check the tokens, then at every blank to
		// hand them to clang, so "-DA\t-working-directory=d" passes its
		// check as one -D and reaches clang as two options.
		return deps.Input{}, fmt.Errorf("build options for %q: %w: option %q may make a compiler read files the scan does not follow", platform, deps.ErrUncacheable, a)
	}
	if platform == PoCL {
		args = append(poclDefines[:len(poclDefines):len(poclDefines)], args...)
	} else if v, ok := includePathVariable(os.Getenv); ok {
		return deps.Input{}, fmt.Errorf("driver %q: %w: %s may add include directories the scan does not follow", platform, deps.ErrUncacheable, v)
	}
	in := deps.Input{
		Source:             src,
		Args:               args,
		SearchWorkDir:      true,
		Builtins:           builtinHeaders(),
		CompleteSearchPath: platform == PoCL,
		EveryCandidate:     platform != PoCL,
	}
	if platform == PoCL {
		in.MainDir = PoCLTempDir(os.LookupEnv)
		in.Trigraphs = deps.TrigraphsOn
		in.LexesC = true // OpenCL C only: PoCL refuses -cl-std=CLC++
		if cplusplusStandard(args) {
			// ... as a token of its own, not behind a tab
			// ("-DA\t-cl-std=CLC++"), where it reaches clang, which
			// then replaces no trigraphs: PoCL 3.1 reads the include
			// after "// ??/". How it lexes is left open, both ways
			// checked (a file whose directives differ is uncacheable).
			in.Trigraphs, in.LexesC = deps.TrigraphsUnknown, false
		}
		// PoCL gives clang its device's macros after the options
		// (-D__OPENCL_VERSION__=300 -Dcl_khr_fp64=1 ...), which
		// replace an option's -D of the same name.
		in.PredefinesAfterOptions = true
	}
	return in, nil
}

// unfollowedOption returns the first option of args that is neither a
// preprocessing option the scan follows nor one known to make the compiler
// read no file: a driver's option set other than PoCL's is not known, and
// PoCL lets any option through behind a -D or -I token (see OpenCLScan); a
// compiler that is clang underneath honours -ivfsoverlay (which maps one
// header's path to another file), -working-directory, -Xclang, -Wp,,
// @file and others the scan ignores.
func unfollowedOption(args []string) (string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case slices.ContainsFunc(clangLongerOptions, func(o string) bool { return strings.HasPrefix(a, o) }):
			return a, true
		case slices.Contains(followedOptions, a) || a == "-x":
			i++ // the value follows
		case slices.ContainsFunc(followedOptions, func(o string) bool { return strings.HasPrefix(a, o) }):
		case strings.HasPrefix(a, "-Wp,") || strings.HasPrefix(a, "-Wa,") || strings.HasPrefix(a, "-Wl,"):
			return a, true
		case a == "-w" || slices.ContainsFunc(namelessOptions, func(o string) bool { return strings.HasPrefix(a, o) }):
		default:
			return a, true
		}
	}
	return "", false
}

// cplusplusStandard reports whether args ask for C++ for OpenCL
// (-cl-std=CLC++, clc++1.0, CLC++2021, ...; clang takes the value in
// either case).
func cplusplusStandard(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		v, ok := strings.CutPrefix(a, "-cl-std=")
		return ok && strings.HasPrefix(strings.ToLower(v), "clc++")
	})
}

// includePathVariable returns the first variable set in getenv's
// environment that a compiler which is clang (or GCC) underneath reads for
// include directories of its own: a driver other than PoCL may be one, and
// the scan does not follow them. PoCL's clang, in the process, ignores
// them (checked with PoCL 3.1), so its scans pass.
func includePathVariable(getenv func(string) string) (string, bool) {
	for _, v := range includePathVariables {
		if getenv(v) != "" {
			return v, true
		}
	}
	return "", false
}

// includePathVariables are the variables clang and GCC read for include
// directories beside -I and -isystem.
var includePathVariables = []string{"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", "OBJCPLUS_INCLUDE_PATH"}

// followedOptions are the preprocessing options the scan follows, joined
// to their values or followed by them (deps.Input.Args), longest first.
var followedOptions = []string{"-idirafter", "-isystem", "-iquote", "-include", "-imacros", "-I", "-D", "-U"}

// namelessOptions start the options known to name no file a compiler
// reads: OpenCL C's (-cl-*), warnings, optimization, debug information
// (which keys the working directory) and the language. -w, which turns
// warnings off, is known by its whole name only: clang's
// -working-directory, which moves every relative place the compiler
// opens, starts with it.
var namelessOptions = []string{"-cl-", "-W", "-O", "-g", "-x"}

// clangLongerOptions are clang's options that start with the name of one
// the scan follows but are others: -include-pch reads a precompiled
// header, -isystem-after adds a directory at another place, and -I- changes
// how the -I before it are searched.
var clangLongerOptions = []string{"-include-pch", "-isystem-after", "-I-"}

// poclDefines are the macros PoCL 3.1 defines ahead of the build options
// (lib/CL/pocl_llvm_build.cc) whose names the scan would otherwise take
// for undefined: inline, defined empty on every build, so that
// #include XS(inline.h) opens ".h". Its other macros are reserved names
// or start with cl_, CL_ or POCL_, which the scan already treats as the
// compiler's; those it puts after the options (its device's list) replace
// an option's -D of the same name (deps.Input.PredefinesAfterOptions).
var poclDefines = []string{"-Dinline="}

// WithPrivateDir returns in with dir, a PoCL directory of the process's
// own, as its private directory (deps.Input.PrivateDir) where it is the
// directory PoCL searches first (in.MainDir, from POCL_CACHE_DIR): the
// scan's dependency record then serves other processes, each with its
// own. "" leaves in as it is.
func WithPrivateDir(in deps.Input, dir string) deps.Input {
	if dir != "" && in.MainDir == dir {
		in.PrivateDir = dir
	}
	return in
}

// withPoCLExtraFlags returns the options PoCL compiles with: the build
// options and then POCL_EXTRA_BUILD_FLAGS, joined by a blank
// (lib/CL/pocl_build.c compile_and_link_program), whose -I and -D the
// scanner must follow like the program's own. PoCL reads the variable
// from its process's environment, whatever environment a cache's keys
// are told about, and keeps the value its first build found
// (PoCLExtraFlags).
func withPoCLExtraFlags(options, extra string) string {
	if extra == "" {
		return options
	}
	return options + " " + extra
}

// PoCLTempDir returns the directory PoCL writes a program's text to
// before compiling it, which its compiler searches first for the
// program's quoted includes. PoCL 3.1 picks it as lib/CL/pocl_cache.c
// (pocl_cache_init_topdir) does, from lookup (os.LookupEnv): POCL_CACHE_DIR
// where it is set; else a directory under $XDG_CACHE_HOME where that is
// not empty, under $HOME/.cache where HOME is set (even to ""), and
// under /tmp where it is not. That directory is pocl/kcache with PoCL's
// kernel cache on and pocl/uncached with it off: off wherever
// POCL_KERNEL_CACHE is set to a value that does not begin with '1'
// (pocl_get_bool_option), "0", "no" and "" alike. A key that searched
// pocl/kcache for a program PoCL compiled from pocl/uncached would miss a
// header there.
func PoCLTempDir(lookup func(string) (string, bool)) string {
	if d, ok := lookup("POCL_CACHE_DIR"); ok {
		return d
	}
	sub := "pocl/kcache"
	if v, ok := lookup("POCL_KERNEL_CACHE"); ok && !strings.HasPrefix(v, "1") {
		sub = "pocl/uncached"
	}
	if d, _ := lookup("XDG_CACHE_HOME"); d != "" {
		return d + "/" + sub
	}
	if h, ok := lookup("HOME"); ok {
		return h + "/.cache/" + sub
	}
	return "/tmp/" + sub
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

// PrefetchBuiltinHeaders finds the compilers' own headers (builtinHeaders)
// on a goroutine of its own: a caller that sets up long before its first
// scan (a cache made with its context) takes the search, a glob over
// /usr/lib, off that scan.
func PrefetchBuiltinHeaders() { go builtinHeaders() }
