package main

import (
	"path/filepath"
	"testing"
	"time"
)

// TestLinkOfCompileChangedDuringBuild: a program compiled while its header
// was being saved is not stored (the compile's key may name another text
// than the compiler read), but its link was keyed by that compile's key
// and stored: a later run whose header held the scanned text would miss
// the compile, compile the true text, and be served the link of the other.
// A link of an input whose compile did not hold passes through uncached.
func TestLinkOfCompileChangedDuringBuild(t *testing.T) {
	host := buildScaleHost(t)
	dir, pocl, cache := t.TempDir(), t.TempDir(), t.TempDir()
	header := filepath.Join(dir, "scale.h")
	writeFile(t, header, "#define SCALE 1\n")
	writeFile(t, filepath.Join(dir, "k.cl"), "#include \"scale.h\"\n"+scaleKernel)
	stop := keepSaving(header)
	got := runScale(t, host, dir, pocl, cache, "SCALE_LINK=1")
	stop()
	if got != "scale 1.0" && got != "scale 2.0" {
		t.Errorf("output %q", got)
	}
	if bins := entries(t, cache); len(bins) != 0 {
		t.Errorf("a compile or link of a header being saved was stored: %v", bins)
	}
	// Whichever text the scan saw, a run with it settled gets its own.
	for _, v := range []string{"1", "2"} {
		writeFile(t, header, "#define SCALE "+v+"\n")
		time.Sleep(30 * time.Millisecond) // past the too-new window
		if got := runScale(t, host, dir, pocl, cache, "SCALE_LINK=1"); got != "scale "+v+".0" {
			t.Errorf("header SCALE %s: through the layer %q", v, got)
		}
	}
}

// TestEnvSetBeforeLink: PoCL appends POCL_EXTRA_BUILD_FLAGS to a link's
// options too (it refuses link options there, and takes -cl-opt-disable).
// An application that set the flags between its compile and its link had
// PoCL's link with them stored under the key of the layer's start, without
// them, for the next run without the flags. A link, as a build, passes
// through once the environment is not the start's: only the compiled
// object is stored.
func TestEnvSetBeforeLink(t *testing.T) {
	host := buildScaleHost(t)
	dir, pocl, cache := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "k.cl"), "#define SCALE 3\n"+scaleKernel)
	set := "SCALE_LINK_SETENV=POCL_EXTRA_BUILD_FLAGS=-cl-opt-disable"
	if got := runScale(t, host, dir, pocl, "", "SCALE_LINK=1", set); got != "scale 3.0" {
		t.Fatalf("without the layer, flags set before the link: %q", got)
	}
	if got := runScale(t, host, dir, pocl, cache, "SCALE_LINK=1", set); got != "scale 3.0" {
		t.Errorf("through the layer, flags set before the link: %q", got)
	}
	if bins := entries(t, cache); len(bins) != 1 {
		t.Errorf("%d entries after a link with flags the key does not hold, want 1 (the compiled object): %v", len(bins), bins)
	}
	for _, run := range []string{"first", "second"} {
		if got := runScale(t, host, dir, pocl, cache, "SCALE_LINK=1"); got != "scale 3.0" {
			t.Errorf("%s run without the flags: %q", run, got)
		}
	}
	if bins := entries(t, cache); len(bins) != 2 {
		t.Errorf("%d entries after runs without the flags, want 2 (the object and its link): %v", len(bins), bins)
	}
}
