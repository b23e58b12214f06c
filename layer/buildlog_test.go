package main

import (
	"regexp"
	"strings"
	"testing"
)

// tempSource is the path of the file a driver compiled, which it names in
// its warnings: PoCL writes the source to a temporary file per build.
var tempSource = regexp.MustCompile(`[^\s:]*\.cl:`)

// TestBuildLog builds a program whose compile warns, without the layer,
// then through it cold and warm: the application sees the driver's log
// on the miss and the stored one, byte for byte, on the hit (the driver
// compiled nothing then, so its own log would be empty).
func TestBuildLog(t *testing.T) {
	requireLayer(t)
	normalize := func(s string) string {
		s = tempSource.ReplaceAllString(s, "SOURCE.cl:")
		return regexp.MustCompile(`log size: [0-9]+`).ReplaceAllString(s, "log size: N")
	}
	a := app{name: "buildlog", argv: []string{compileC(t, "buildlog")}, programs: 1, normalize: normalize}
	dir := t.TempDir()
	base := a.run(t, dir, "")
	if base.err != nil {
		t.Fatal(base.err)
	}
	if !strings.Contains(base.stdout, "kcache-build-log-warning") {
		t.Fatalf("the driver's log lacks the warning:\n%s", base.stdout)
	}
	cache := t.TempDir()
	cold := a.run(t, dir, cache)
	checkRun(t, a, "cold", cold, normalize(base.stdout), 1)
	warm := a.run(t, dir, cache)
	checkRun(t, a, "warm", warm, normalize(base.stdout), 0)
	if warm.stdout != cold.stdout {
		t.Errorf("the warm run's log is not the cold build's:\n%s\nwant:\n%s", warm.stdout, cold.stdout)
	}
}

// TestBuildInfo checks every build query (status, options, binary type,
// log) of a built program, a compiled one, its link and a failed build,
// right after the build and after launches and a binary read, without the
// layer and through it cold and warm: the lines must be the same. A
// program made from a cached compiled object was compiled by nobody in the
// warm process; the application still sees its compile's options, log and
// type.
func TestBuildInfo(t *testing.T) {
	requireLayer(t)
	sizes := regexp.MustCompile(`log size [0-9]+, again [0-9]+`)
	normalize := func(s string) string {
		return sizes.ReplaceAllString(tempSource.ReplaceAllString(s, "SOURCE.cl:"), "log size N, again N")
	}
	a := app{name: "buildinfo", argv: []string{compileC(t, "buildinfo")}, programs: 4, normalize: normalize}
	dir := t.TempDir()
	base := a.run(t, dir, "")
	if base.err != nil {
		t.Fatal(base.err)
	}
	for _, want := range []string{"kcache-build-log-warning", "kcache-compile-log-warning", "undeclared_name", "options [-cl-std=CL1.2]"} {
		if !strings.Contains(base.stdout, want) {
			t.Fatalf("without the layer the output lacks %q:\n%s", want, base.stdout)
		}
	}
	cache := t.TempDir()
	// The built, compiled and linked programs are stored; the failed
	// build misses every time.
	checkRun(t, a, "cold", a.run(t, dir, cache), normalize(base.stdout), 4)
	checkRun(t, a, "warm", a.run(t, dir, cache), normalize(base.stdout), 1)
}
