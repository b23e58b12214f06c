package keyparts

import "sync"

// PoCL 3.1 reads POCL_EXTRA_BUILD_FLAGS at every clBuildProgram,
// clCompileProgram and clLinkProgram (compile_and_link_program), through
// its runtime configuration (pocl_get_string_option), which keeps a
// variable's value from the first read that finds it set, empty included:
// set, changed or unset after that build, the process's environment no
// longer says what PoCL builds with (checked with PoCL 3.1: unset after a
// build with -DV=5, the next build still defines V as 5).
var poclExtra struct {
	mu      sync.Mutex
	latched bool   // guarded by mu: a build found the variable set
	value   string // guarded by mu: what it found, PoCL's from then on
}

// poclExtraName is the variable PoCL appends to every build's options.
const poclExtraName = "POCL_EXTRA_BUILD_FLAGS"

// NotePoCLBuild records POCL_EXTRA_BUILD_FLAGS as a PoCL build made now
// reads it from lookup (the environment PoCL reads: os.LookupEnv for a
// process whose Go and C environments agree). It is called before every
// build, compile and link the process makes through PoCL, whether or not
// the cache is involved: the first that finds the variable set fixes it.
func NotePoCLBuild(lookup func(string) (string, bool)) {
	v, ok := lookup(poclExtraName)
	poclExtra.mu.Lock()
	defer poclExtra.mu.Unlock()
	if !poclExtra.latched && ok {
		poclExtra.latched, poclExtra.value = true, v
	}
}

// PoCLExtraFlags returns the flags PoCL's next build appends, and whether
// they are set: the value an earlier build fixed (NotePoCLBuild), else
// lookup's now, which the next build fixes.
func PoCLExtraFlags(lookup func(string) (string, bool)) (string, bool) {
	if value, kept := PoCLKeptExtraFlags(); kept {
		return value, true
	}
	return lookup(poclExtraName)
}

// PoCLKeptExtraFlags returns the flags an earlier build fixed
// (NotePoCLBuild), and whether one did.
func PoCLKeptExtraFlags() (string, bool) {
	poclExtra.mu.Lock()
	defer poclExtra.mu.Unlock()
	return poclExtra.value, poclExtra.latched
}
