package deps

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PoCL 3.1 (Debian's 3.1-3+deb12u1) on its CPU device (pthread), as it
// runs clang's front end in its own process: POCL_DEBUG=llvm logs the
// arguments ("all build options: ..."), and strace shows what it sets
// beside them (the headers it includes, PIC). Checked on this machine
// with 1,610 predefined macros, names and values, alike in PoCL's build
// and in clang-15 -cc1 with PoCLFrontEnd's arguments
// (TestPoCLFrontEndShape pins the arguments).
var (
	// poclFrontBefore come before the build's options.
	poclFrontBefore = []string{"-cc1", "-Dcl_khr_int64", "-DPOCL_DEVICE_ADDRESS_BITS=64", "-D__USE_CLANG_OPENCL_C_H", "-xcl", "-Dinline=", "-I.", "-cl-kernel-arg-info", "-opaque-pointers"}
	// poclFrontDevice come after them: the device's macros.
	poclFrontDevice = []string{"-D__ENDIAN_LITTLE__=1", "-D__IMAGE_SUPPORT__=1", "-DCL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE=0", "-D__OPENCL_VERSION__=300"}
	// poclExtensions are the device's extensions, each a -D NAME=1 and
	// a +NAME of -cl-ext; poclFeatures its OpenCL C 3.0 features, given
	// so where the build's language is 3.0 or later.
	poclExtensions = []string{"cl_khr_byte_addressable_store", "cl_khr_global_int32_base_atomics", "cl_khr_global_int32_extended_atomics",
		"cl_khr_local_int32_base_atomics", "cl_khr_local_int32_extended_atomics", "cl_khr_3d_image_writes", "cl_khr_command_buffer",
		"cl_khr_spir", "cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics", "cl_khr_fp64"}
	poclFeatures = []string{"__opencl_c_3d_image_writes", "__opencl_c_images", "__opencl_c_atomic_order_acq_rel", "__opencl_c_atomic_order_seq_cst",
		"__opencl_c_atomic_scope_device", "__opencl_c_read_write_images", "__opencl_c_int64", "__opencl_c_fp64"}
	// poclFrontTarget ends the logged arguments (the CPU is this
	// machine's, which PoCL asks LLVM for).
	poclFrontTarget = []string{"-fno-builtin", "-triple=x86_64-pc-linux-gnu", "-target-cpu", "skylake-avx512"}
	// poclFrontSet is what PoCL sets in the invocation beside its
	// arguments: a PIC level of 2 and PIE (__PIC__ 2, __PIE__ 2), and
	// the headers it includes after every -include of the build, in
	// this order (PreprocessorOptions.Includes).
	poclFrontSet = []string{"-pic-level", "2", "-pic-is-pie"}
	poclHeaders  = []string{"pocl_types.h", "_builtin_renames.h", "opencl-c-base.h", "opencl-c.h", "_kernel.h"}
	// poclRewrites are the options PoCL's first split (at blanks) turns
	// into others before its second gives them to clang; nil drops one.
	poclRewrites = map[string][]string{
		"-cl-denorms-are-zero":        {"-fdenormal-fp-math=positive-zero"},
		"-g":                          {"-debug-info-kind=limited", "-dwarf-version=4", "-debugger-tuning=gdb"},
		"-cl-uniform-work-group-size": nil,
	}
)

// poclIncludeDir is where PoCL 3.1 finds its headers: relative to its
// library, as it logs them.
func poclIncludeDir() string {
	for _, d := range []string{"/lib/x86_64-linux-gnu/../../share/pocl/include", "/usr/share/pocl/include"} {
		if _, err := os.Stat(d + "/_kernel.h"); err == nil {
			return d
		}
	}
	return "/usr/share/pocl/include"
}

// PoCLFrontEnd returns the arguments PoCL 3.1 gives clang's front end
// (clang-15 -cc1) for a build whose clBuildProgram options are options,
// less the input file and what to make of it (-E, -dependency-file ...),
// which the caller appends: the one model of PoCL's compiler that the
// tests hold clang to. PoCL splits the options twice (SplitDriverOptions'
// DriverPoCL), rewriting a few of the first split's tokens
// (poclRewrites); it adds -D__FAST_RELAXED_MATH__=1 before them where
// they hold -cl-fast-relaxed-math anywhere, and -cl-std=CL3.0 after its
// device's macros where they hold no -cl-std= anywhere (as text: behind
// a tab, or inside a -D, counts); __OPENCL_C_VERSION__ is made of the
// first -cl-std='s value as PoCL computes it (CL1.2 is 120, CLC++ 1850),
// and the OpenCL C 3.0 features are given where that is 300 or more.
func PoCLFrontEnd(options string) ([]string, error) {
	var first []string
	for _, tok := range splitAtBlanks(options) {
		if r, ok := poclRewrites[tok]; ok {
			first = append(first, r...)
			continue
		}
		first = append(first, tok)
	}
	user, err := SplitDriverOptions(DriverPoCL, strings.Join(first, " "))
	if err != nil {
		return nil, err
	}
	args := append([]string{}, poclFrontBefore...)
	if strings.Contains(options, "-cl-fast-relaxed-math") {
		args = append(args, "-D__FAST_RELAXED_MATH__=1")
	}
	args = append(append(args, user...), poclFrontDevice...)
	version := 300
	if _, v, ok := strings.Cut(options, "-cl-std="); ok {
		version = poclVersion(v)
	} else {
		args = append(args, "-cl-std=CL3.0")
	}
	args = append(args, "-D__OPENCL_C_VERSION__="+strconv.Itoa(version))
	exts := append([]string{}, poclExtensions...)
	if version >= 300 {
		exts = append(exts, poclFeatures...)
	}
	for _, e := range exts {
		args = append(args, "-D"+e+"=1")
	}
	args = append(args, "-cl-ext=-all,+"+strings.Join(exts, ",+"))
	args = append(append(args, poclFrontTarget...), poclFrontSet...)
	dir := poclIncludeDir()
	for _, h := range poclHeaders {
		args = append(args, "-include", dir+"/"+h)
	}
	return args, nil
}

// poclVersion is PoCL 3.1's number for a -cl-std= value (what follows
// "-cl-std=" in the options): its third and fifth characters as digits.
func poclVersion(v string) int {
	digit := func(i int) int {
		if i < len(v) {
			return int(v[i]) - '0'
		}
		return -'0'
	}
	return digit(2)*100 + digit(4)*10
}

// splitAtBlanks splits options at the blanks (' ') outside double quotes,
// as PoCL's first split does.
func splitAtBlanks(options string) []string {
	var out []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(options); i++ {
		switch c := options[i]; {
		case c == '"':
			in = !in
			cur.WriteByte(c)
		case c == ' ' && !in:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// PoCLFrontEndMust is PoCLFrontEnd for options PoCL splits.
func PoCLFrontEndMust(options string) []string {
	args, err := PoCLFrontEnd(options)
	if err != nil {
		panic(fmt.Sprintf("PoCLFrontEnd(%q): %v", options, err))
	}
	return args
}
