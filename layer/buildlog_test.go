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
