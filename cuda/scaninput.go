package cuda

import (
	"slices"
	"sync"

	"github.com/kcache/kcache/deps"
)

// nvrtcBuiltinHeader is the one header name NVRTC 13.0 resolves with no
// directory: it includes it in every program, from its builtins library.
// Measured on the H100 (bench/RESULTS-cuda.md, "Key precision on CCCL"):
// of 2,157 names probed (every C and C++ standard header, every header of
// the toolkit's include directory, every name CCCL includes), quoted and
// angled, with no -I, only this one compiled; it wins over a file of the
// same name in an -I directory or the working directory.
const nvrtcBuiltinHeader = "__nv_nvrtc_builtin_header.h"

// scanInputs returns the dependency scanner's inputs for src: the program,
// then each header handed to NVRTC in memory, searched as NVRTC searches.
func scanInputs(src Source, p plan) []deps.Input {
	main := nvrtcInput(src, p)
	main.Source, main.Depends = src.Code, src.Depends
	// NVRTC searches the directory of the program's name (relative to the
	// working directory: "kcache.cu" names the working directory) first for
	// its quoted includes, unless -no-source-include.
	main.Path = programName(src)
	if slices.Contains(p.options, "-no-source-include") || slices.Contains(p.options, "--no-source-include") {
		main.Path = ""
	}
	ins := []deps.Input{main}
	for _, h := range src.Headers {
		in := nvrtcInput(src, p)
		in.Source = h.Content
		ins = append(ins, in)
	}
	return ins
}

// nvrtcInput is what every input of src shares: the options, and, for
// NVRTC 13 (whose search was measured), the promise that it searches no
// directory of its own: an include found nowhere fails the build where it
// is live, so it is keyed by its absence, and only the names NVRTC holds
// (its built-in header and src's headers in memory) may define macros the
// scan cannot see. For other versions, an include found nowhere may come
// from a place the scan cannot see.
func nvrtcInput(src Source, p plan) deps.Input {
	in := deps.Input{Args: p.options}
	if major, err := nvrtcMajor(); err != nil || major != 13 {
		return in
	}
	in.CompleteSearchPath = true
	in.CompilerHeaders = []string{nvrtcBuiltinHeader}
	for _, h := range src.Headers {
		in.CompilerHeaders = append(in.CompilerHeaders, h.Name)
	}
	return in
}

// nvrtcMajor is NVRTC's major version, asked once: it cannot change
// within a process, and every key computes its scan input.
var nvrtcMajor = sync.OnceValues(func() (int, error) {
	major, _, err := NVRTCVersion()
	return major, err
})
