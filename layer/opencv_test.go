package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOpenCV runs OpenCV's OpenCL path (UMat operations, its own binary
// cache off) without the layer, then through it cold and warm. OpenCV
// never releases its programs: every run crashed at exit while the layer
// read their binaries from an exit handler, and nothing was stored. Each
// run must exit cleanly with the same output, and the warm run compile
// nothing.
func TestOpenCV(t *testing.T) {
	requireLayer(t)
	out, err := exec.Command("/usr/bin/python3", "-c", "import cv2, numpy").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("python3-opencv: %w: %s", err, out)
	}
	requireReal(t, "OpenCV for Python (python3-opencv)", err)
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/umat.py")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "umat.py"), string(src))
	a := app{name: "opencv", argv: []string{"/usr/bin/python3", "umat.py"}, normalize: func(s string) string { return s }}
	// OpenCV picks only GPUs unless told otherwise; its own cache of
	// binaries would hide the layer's.
	a.extraEnv = []string{"OPENCV_OPENCL_DEVICE=:CPU:", "OPENCV_OPENCL_CACHE_ENABLE=false"}
	base := a.run(t, dir, "")
	if base.err != nil {
		t.Fatal(base.err)
	}
	cache := t.TempDir()
	cold := a.run(t, dir, cache)
	if cold.err != nil {
		t.Fatalf("cold: %v", cold.err)
	}
	if cold.stdout != base.stdout || cold.misses == 0 || cold.hits != 0 {
		t.Fatalf("cold: %d misses, %d hits; output:\n%s\nwant:\n%s", cold.misses, cold.hits, cold.stdout, base.stdout)
	}
	a.programs = cold.misses
	checkRun(t, a, "warm", a.run(t, dir, cache), base.stdout, 0)
}
