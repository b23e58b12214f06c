package main

/*
#include <stdlib.h>
#include "layer.h"
extern char **environ;
static char **kc_environ(void) { return environ; }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unsafe"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/layerstore"
)

// compilerEnv is the rule for the variables that are part of a build's
// identity, which the background worker keys by too.
var compilerEnv = layerstore.CompilerEnv

// errEnvChanged stops a build from going through the cache: a variable of
// compilerEnv is not what it was when the layer started.
var errEnvChanged = errors.New("the compiler's environment changed since the layer started")

// checkEnv reports, wrapped in deps.ErrUncacheable, a variable of
// compilerEnv, or TZ, set, changed or removed in the process's environment
// since the layer started (start). Keys hold the variables as they were then,
// as do the scan (PoCL's POCL_EXTRA_BUILD_FLAGS) and the background
// worker's environment; a driver reads some of them again at each build
// (PoCL its extra build flags), so an application that sets one at run
// time must not get a binary keyed without it. Such builds pass through:
// which of its variables a driver reads when is not modelled.
func checkEnv(start []kcache.EnvVar) error {
	// TZ decides the day a source that expands __DATE__ is keyed by: the
	// scan reads it from the Go runtime's copy of the environment, the
	// compiler (in this process) from the C library's.
	live := liveEnviron()
	if tz, set := lookupTZ(live); tz != startTZ || set != startTZSet {
		return fmt.Errorf("%w: %w (TZ)", deps.ErrUncacheable, errEnvChanged)
	}
	if err := checkKeptExtraFlags(start); err != nil {
		return err
	}
	now := compilerEnv.Select(live)
	if slices.Equal(now, start) {
		return nil
	}
	var names []string
	for _, v := range now {
		if !slices.Contains(start, v) {
			names = append(names, v.Name)
		}
	}
	for _, v := range start {
		if !slices.ContainsFunc(now, func(n kcache.EnvVar) bool { return n.Name == v.Name }) {
			names = append(names, v.Name) // removed; a changed one is named above
		}
	}
	return fmt.Errorf("%w: %w (%s)", deps.ErrUncacheable, errEnvChanged, strings.Join(names, ", "))
}

// checkKeptExtraFlags reports, wrapped in deps.ErrUncacheable, PoCL's
// extra build flags kept from an earlier build (C.kc_extra_flags) that are
// not those of the layer's start, which its keys hold: PoCL appends them to
// every build from then on, whatever the environment says now.
func checkKeptExtraFlags(start []kcache.EnvVar) error {
	var set C.int
	v := C.kc_extra_flags(&set)
	if set == 0 {
		return nil // the next build reads the environment, which checkEnv compares
	}
	i := slices.IndexFunc(start, func(e kcache.EnvVar) bool { return e.Name == "POCL_EXTRA_BUILD_FLAGS" })
	if v == nil || i < 0 || C.GoString(v) != start[i].Value {
		return fmt.Errorf("%w: %w (POCL_EXTRA_BUILD_FLAGS, kept by PoCL from an earlier build)", deps.ErrUncacheable, errEnvChanged)
	}
	return nil
}

// liveEnviron returns the variables of the C library's environment that
// compilerEnv's families may hold, and TZ. The application's setenv after
// the Go runtime started is there, and not in os.Environ, which is the
// runtime's copy from its start.
func liveEnviron() []string {
	env := C.kc_environ()
	if env == nil {
		return nil
	}
	var out []string
	for _, p := range unsafe.Slice(env, maxEnviron) {
		if p == nil {
			break
		}
		if first := byte(*p); first == 'T' || mayBeCompilerEnv(first) {
			out = append(out, C.GoString(p))
		}
	}
	return out
}

// startTZ is TZ as the Go runtime copied it at its start, and startTZSet
// whether it was set.
var startTZ, startTZSet = os.LookupEnv("TZ")

// lookupTZ returns TZ in env as the C library's getenv finds it (the
// first entry), and whether it is set.
func lookupTZ(env []string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TZ="); ok {
			return v, true
		}
	}
	return "", false
}

// maxEnviron bounds the environment liveEnviron walks, far above any.
const maxEnviron = 1 << 20

// mayBeCompilerEnv reports whether a variable whose first byte is first
// may begin with one of compilerEnv's prefixes: the rest of the
// environment is not copied.
func mayBeCompilerEnv(first byte) bool {
	for _, p := range compilerEnv.Prefixes {
		if p != "" && p[0] == first {
			return true
		}
	}
	return false
}
