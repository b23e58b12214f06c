package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHandles runs a C program that checks the program handle rules
// (reference counts, source, build status, options and log, callbacks,
// kernels and CL_KERNEL_PROGRAM, binaries, a failed build, separate
// compilation) without the layer, then through it cold and warm: each run
// must pass its own checks and print the same lines.
func TestHandles(t *testing.T) {
	requireLayer(t)
	bin := compileC(t, "handles")
	a := app{name: "handles", argv: []string{bin}, programs: 4, normalize: func(s string) string { return s }}
	dir := t.TempDir()
	base := a.run(t, dir, "")
	if base.err != nil {
		t.Fatal(base.err)
	}
	if !strings.HasSuffix(base.stdout, "PASS\n") {
		t.Fatalf("without the layer:\n%s", base.stdout)
	}
	cache := t.TempDir()
	// Five programs go through the cache: the built one, the rebuilt one
	// (its first build; the second passes through), the compiled one, its
	// link, and the broken one (a miss whose build fails and stores
	// nothing). The program compiled with an embedded header, and so its
	// link, pass through.
	cold := a.run(t, dir, cache)
	if cold.err != nil {
		t.Fatal(cold.err)
	}
	if cold.stdout != base.stdout || cold.misses != 5 || cold.hits != 0 {
		t.Errorf("cold: %d misses, %d hits; output:\n%s\nwant:\n%s", cold.misses, cold.hits, cold.stdout, base.stdout)
	}
	warm := a.run(t, dir, cache)
	if warm.err != nil {
		t.Fatal(warm.err)
	}
	if warm.stdout != base.stdout || warm.misses != 1 || warm.hits != 4 {
		t.Errorf("warm: %d misses, %d hits (the broken program is never stored); output:\n%s\nwant:\n%s", warm.misses, warm.hits, warm.stdout, base.stdout)
	}
}

// TestHeaderEdit checks the never-stale rule through the layer: a header
// the application's source includes from its working directory is part of
// the key, so editing it rebuilds the program.
func TestHeaderEdit(t *testing.T) {
	a, dir, cache := headerApp(t)
	first := a.run(t, dir, cache)
	if first.err != nil {
		t.Fatal(first.err)
	}
	writeFile(t, filepath.Join(dir, "scale.h"), "#define SCALE 3.0f\n")
	edited := a.run(t, dir, cache)
	if edited.err != nil {
		t.Fatal(edited.err)
	}
	if edited.misses != 1 || edited.hits != 1 {
		t.Errorf("after the header edit: %d misses, %d hits, want 1 and 1", edited.misses, edited.hits)
	}
	// 256 elements i*3+1 sum to 98176; with the old header, 65536.
	if !strings.Contains(edited.stdout, "scaled sum 98176.0") {
		t.Errorf("after the header edit the old binary ran:\n%s", edited.stdout)
	}
}
