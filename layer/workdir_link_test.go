package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache/internal/layerstore"
)

// TestOrderInLinkedWorkDir: an application run in a directory reached
// through a symbolic link (its PWD names the link, as a shell's does) and
// built with -g, whose binary holds the working directory's name, has its
// build order stored by a worker that another process started (its PWD
// names another directory) under the application's key: the order's
// process names its working directory as the application did, so the
// next run hits instead of building again.
func TestOrderInLinkedWorkDir(t *testing.T) {
	host := buildScaleHost(t)
	real, pocl, cache := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(real, "k.cl"), "#include \"scale.h\"\n"+scaleKernel)
	writeFile(t, filepath.Join(real, "scale.h"), "#define SCALE 4.0f\n")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) string {
		t.Helper()
		cmd := exec.Command(host, "k.cl", "-g")
		cmd.Dir = link
		cmd.Env = append(append(env(t, cache), "POCL_CACHE_DIR="+pocl, "PWD="+link), extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scale: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(noWorker); !strings.Contains(out, "scale 4.0") {
		t.Fatalf("cold run:\n%s", out)
	}
	w := worker(t, cache) // the test's PWD, not the link
	w.Env = append(w.Env, "PWD="+t.TempDir())
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("worker: %v\n%s", err, out)
	}
	if n := len(entries(t, cache)); n != 1 {
		log, _ := os.ReadFile(filepath.Join(layerstore.NewQueue(cache).Dir(), "worker.log"))
		t.Fatalf("the worker stored %d entries, want 1; its log:\n%s", n, log)
	}
	if out := run(); !strings.Contains(out, "scale 4.0") || !strings.Contains(out, "kcache layer: hit") {
		t.Errorf("warm run, not a hit:\n%s", out)
	}
}
