package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// moreApps are Debian's OpenCL applications beyond TestApplications',
// each run on small inputs: ffmpeg's OpenCL filters (ffmpeg), clFFT's
// test client (clfft-client), CLBlast's library through a C host
// (libclblast-dev) and GEGL's command line (gegl).
func moreApps(t *testing.T) []app {
	ffmpeg := []string{"ffmpeg", "-hide_banner", "-loglevel", "error", "-init_hw_device", "opencl=ocl:0.0",
		"-filter_hw_device", "ocl", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=5", "-frames:v", "3", "-vf",
		"format=yuv420p,hwupload,avgblur_opencl=sizeX=3,unsharp_opencl,sobel_opencl,hwdownload,format=yuv420p",
		"-f", "framemd5", "-"}
	return []app{
		{name: "ffmpeg", argv: ffmpeg, programs: 3, normalize: func(s string) string { return s }},
		{name: "clfft", argv: []string{"clFFT-client", "-x", "64", "-y", "64", "-p", "1"}, programs: 3, normalize: normalizeNumbers},
		{name: "clblast", argv: []string{"blas"}, programs: 3, normalize: func(s string) string { return s }},
		{
			// GEGL builds two programs of 41 kernels at start and, for this
			// operation, launches none, reaches no synchronisation and
			// releases nothing: the layer has no point at which it may read
			// the binaries in the process, and orders them at exit; the
			// background worker stores them, so the second run hits.
			name: "gegl", argv: []string{"gegl", "-i", "in.png", "-o", "out.png", "--", "gaussian-blur", "std-dev-x=2", "std-dev-y=2"},
			programs: 2, normalize: func(s string) string { return s }, extraEnv: []string{"GEGL_USE_OPENCL=cpu"},
		},
	}
}

// TestMoreApplications runs each of moreApps without the layer, through it
// cold, warm, and four copies at once warm: the output (and any file it
// writes) is the same every time, every run exits with status 0, and
// every warm run takes every program from the cache.
func TestMoreApplications(t *testing.T) {
	requireLayer(t)
	for _, a := range moreApps(t) {
		t.Run(a.name, func(t *testing.T) {
			a = prepare(t, a)
			dir := t.TempDir()
			if a.setup != nil {
				a.setup(t, dir)
			}
			base, file := a.withOutput(t, dir, "")
			if base.err != nil {
				t.Fatal(base.err)
			}
			want := a.normalize(base.stdout)
			cache := t.TempDir()
			for _, what := range []string{"cold", "warm"} {
				misses := a.programs
				if what == "warm" {
					misses = 0
				}
				r, f := a.withOutput(t, dir, cache)
				checkRun(t, a, what, r, want, misses)
				switch {
				case f == file || a.unsteady(t, dir, file):
				case a.name == "gegl":
					// GEGL's output is not steady under load: while a
					// race-enabled test run kept both cores busy, 1 of 6
					// runs of this command without the layer wrote the
					// same other PNG that 2 of 6 runs under the layer
					// wrote (issue 20's round-two note). A second run
					// without the layer (unsteady) often agrees with the
					// first, so a difference here is logged, not failed;
					// stdout, exit status and hits are still checked.
					t.Logf("%s: GEGL wrote another file than its run without the layer (GEGL is not steady under load); its log:\n%s", what, tail(r.stderr, 2000))
				default:
					t.Errorf("%s: the written file differs from the run without the layer", what)
				}
			}
			warmMisses := 0
			// Concurrent warm starts load the same binaries at once, which
			// aborted 2 to 3 of 24 pyopencl processes with PoCL's cache off
			// before each process had a PoCL directory of its own.
			runs := make([]run, 4)
			var wg sync.WaitGroup
			for i := range runs {
				wg.Go(func() { runs[i] = a.run(t, dir, cache) })
			}
			wg.Wait()
			for i, r := range runs {
				checkRun(t, a, fmt.Sprintf("concurrent warm run %d", i), r, want, warmMisses)
			}
		})
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// unsteady reports whether the application, run again without the layer,
// writes another file than file: then a difference under the layer says
// nothing of the layer. GEGL's output once differed under heavy load (a
// whole race-enabled test run on two cores) and never alone.
func (a app) unsteady(t *testing.T, dir, file string) bool {
	t.Helper()
	if _, again := a.withOutput(t, dir, ""); again != file {
		t.Logf("%s writes another file run again without the layer: its output is not steady here, and is not compared", a.name)
		return true
	}
	return false
}

// prepare checks that the application is installed, builds the C host of
// CLBlast, and gives GEGL its input image.
func prepare(t *testing.T, a app) app {
	t.Helper()
	switch a.name {
	case "clblast":
		_, err := os.Stat("/usr/include/clblast_c.h")
		requireReal(t, "CLBlast (libclblast-dev)", err)
		bin := filepath.Join(t.TempDir(), "blas")
		if out, err := exec.Command("gcc", "-Wall", "-o", bin, filepath.Join("testdata", "blas.c"), "-lclblast", "-lOpenCL").CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		a.argv[0] = bin
	case "gegl":
		_, err := exec.LookPath("ffmpeg")
		requireReal(t, "ffmpeg, which makes GEGL's input", err)
		a.setup = func(t *testing.T, dir string) {
			out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=128x96",
				"-frames:v", "1", "-y", filepath.Join(dir, "in.png")).CombinedOutput()
			if err != nil {
				t.Fatalf("ffmpeg: %v\n%s", err, out)
			}
		}
	}
	requireReal(t, a.name, a.available())
	return a
}

// withOutput runs the application and returns the digest of the file it
// writes, if any (GEGL's out.png), which is removed before the run.
func (a app) withOutput(t *testing.T, dir, cache string) (run, string) {
	out := filepath.Join(dir, "out.png")
	os.Remove(out)
	r := a.run(t, dir, cache)
	b, err := os.ReadFile(out)
	if err != nil {
		return r, ""
	}
	return r, fmt.Sprintf("%x", sha256.Sum256(b))
}
