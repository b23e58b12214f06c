package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scaleKernel is the kernel of testdata/scale.c, after the lines that
// bring SCALE in.
const scaleKernel = "__kernel void scale(__global float *out) { out[0] = SCALE; }\n"

// TestStaleThroughLayer runs the key-exactness review's attacks through
// the layer with a plain C host (testdata/scale.c): each builds a kernel,
// changes something the compiler sees, and requires the layer's run to
// print what a run without the layer prints.
func TestStaleThroughLayer(t *testing.T) {
	host := buildScaleHost(t)
	cases := []struct {
		name   string
		files  map[string]string // relative to the working directory; "@pocl/" for PoCL's directory
		source string
		change map[string]string
		// want, when set, is the output through the layer after the
		// change, where a run without the layer differs for a good reason.
		want string
		// options are the program's build options.
		options string
	}{
		{"same name in two directories", map[string]string{
			"a/x.h": "#include \"c.h\"\n", "a/c.h": "#define A 1\n",
			"b/y.h": "#include \"c.h\"\n", "b/c.h": "#define B 2\n",
		}, "#include \"a/x.h\"\n#include \"b/y.h\"\n#ifndef A\n#define A 5\n#endif\n#ifndef B\n#define B 7\n#endif\n#define SCALE (A * 10 + B)\n",
			map[string]string{"a/c.h": "#define B 2\n", "b/c.h": "#define A 1\n"}, "", ""},
		{"lone CR", map[string]string{"scale.h": "#define SCALE 1\n"}, "// hidden\r#include \"scale.h\"\r", map[string]string{"scale.h": "#define SCALE 2\n"}, "", ""},
		{"trigraph", map[string]string{"scale.h": "#define SCALE 1\n"}, "??=include \"scale.h\"\n", map[string]string{"scale.h": "#define SCALE 3\n"}, "", ""},
		{"byte order mark", map[string]string{"scale.h": "#define SCALE 1\n"}, "\xEF\xBB\xBF#include \"scale.h\"\n", map[string]string{"scale.h": "#define SCALE 4\n"}, "", ""},
		// With PoCL's cache off the layer gives PoCL a private, empty
		// directory of its own, so a header in the application's
		// POCL_CACHE_DIR is not what PoCL reads through the layer (it is
		// without it): the edit beside the kernel must be.
		{"PoCL's temporary directory", map[string]string{"scale.h": "#define SCALE 1\n"}, "#include \"scale.h\"\n",
			map[string]string{"@pocl/scale.h": "#define SCALE 6\n", "scale.h": "#define SCALE 2\n"}, "scale 2.0", ""},
		// PoCL gives clang its device's macros after the options: its
		// -D__ENDIAN_LITTLE__=1 replaces the option's, and clang reads
		// 1.h, which the key must follow (pyopencl was served SCALE 1
		// after 1.h said 5).
		{"PoCL's device macro after the options", map[string]string{"1.h": "#define SCALE 1\n", "big.h": "#define SCALE 9\n"},
			"#define S(x) #x\n#define XS(x) S(x)\n#include XS(__ENDIAN_LITTLE__.h)\n", map[string]string{"1.h": "#define SCALE 5\n"}, "", "-D__ENDIAN_LITTLE__=big"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, pocl, cache := t.TempDir(), t.TempDir(), t.TempDir()
			write := func(files map[string]string) {
				for name, content := range files {
					path := filepath.Join(dir, name)
					if rest, ok := strings.CutPrefix(name, "@pocl/"); ok {
						path = filepath.Join(pocl, rest)
					}
					os.MkdirAll(filepath.Dir(path), 0o755)
					writeFile(t, path, content)
				}
				time.Sleep(30 * time.Millisecond) // past the too-new window
			}
			write(c.files)
			writeFile(t, filepath.Join(dir, "k.cl"), c.source+scaleKernel)
			runScaleWith(t, host, dir, pocl, cache, c.options) // stores the entry
			write(c.change)
			want := c.want
			if want == "" {
				want = runScaleWith(t, host, dir, pocl, "", c.options)
			}
			if got := runScaleWith(t, host, dir, pocl, cache, c.options); got != want {
				t.Errorf("through the layer %q, without it %q: a stale binary", got, want)
			}
		})
	}
}

func buildScaleHost(t *testing.T) string {
	t.Helper()
	requireLayer(t)
	_, err := exec.LookPath("gcc")
	requireReal(t, "gcc", err)
	bin := filepath.Join(t.TempDir(), "scale")
	if out, err := exec.Command("gcc", "-Wall", "-o", bin, "testdata/scale.c", "-lOpenCL").CombinedOutput(); err != nil {
		requireReal(t, "libOpenCL (ocl-icd-opencl-dev)", err)
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// runScale runs the host in dir with PoCL's directory pocl, through the
// layer over cache unless cache is "", with the variables of extra, and
// returns its output.
func runScale(t *testing.T, host, dir, pocl, cache string, extra ...string) string {
	t.Helper()
	return runScaleWith(t, host, dir, pocl, cache, "", extra...)
}

// runScaleWith is runScale with the program's build options.
func runScaleWith(t *testing.T, host, dir, pocl, cache, options string, extra ...string) string {
	t.Helper()
	cmd := exec.Command(host, "k.cl", options)
	cmd.Dir = dir
	cmd.Env = append(append(env(t, cache), "POCL_CACHE_DIR="+pocl), extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scale (cache %q): %v\n%s", cache, err, out)
	}
	if cache != "" {
		// What the run ordered is stored (or dropped) before anything
		// changes: a stale entry must be caught at lookup, not missed.
		if err := waitWorker(cache); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "scale ") {
			return l
		}
	}
	t.Fatalf("no result in:\n%s", out)
	return ""
}

// TestEnvSetAtRunTime: an application that sets a variable its driver
// reads at each build (PoCL's POCL_EXTRA_BUILD_FLAGS) after the layer
// started gets the binary of its new setting, not the entry of the
// variable's value at the start; and the next run, without the change,
// still hits its own.
func TestEnvSetAtRunTime(t *testing.T) {
	host := buildScaleHost(t)
	dir, pocl, cache := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "k.cl"), "#ifndef SCALE\n#define SCALE 1\n#endif\n"+scaleKernel)
	set := "SCALE_SETENV=POCL_EXTRA_BUILD_FLAGS=-DSCALE=7"
	if got := runScale(t, host, dir, pocl, "", set); got != "scale 7.0" {
		t.Fatalf("without the layer, the flags set at run time give %q, want scale 7.0: the test's premise", got)
	}
	if got := runScale(t, host, dir, pocl, cache); got != "scale 1.0" {
		t.Fatalf("first run: %q", got)
	}
	if got := runScale(t, host, dir, pocl, cache, set); got != "scale 7.0" {
		t.Errorf("flags set at run time through the layer: %q, want scale 7.0 (the entry of the start's flags is stale)", got)
	}
	if got := runScale(t, host, dir, pocl, cache); got != "scale 1.0" {
		t.Errorf("a run without the change: %q", got)
	}
}

// TestEnvUnsetAtRunTime: PoCL keeps POCL_EXTRA_BUILD_FLAGS from the first
// build that found it set: an application that sets the flags, builds,
// and unsets them builds with them still (scale 7 without the layer). The
// layer compared the environment with its start's only, found it equal
// once the flags were unset, and stored PoCL's build of SCALE 7 under the
// key of no flags, which the next run without any was served.
func TestEnvUnsetAtRunTime(t *testing.T) {
	host := buildScaleHost(t)
	dir, pocl, cache := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "k.cl"), "#ifndef SCALE\n#define SCALE 1\n#endif\n"+scaleKernel)
	// The binary is read in the application, so the layer stores the
	// application's build (a program left to the background worker is
	// built again in a process that never set the flags).
	set := []string{"SCALE_SETENV=POCL_EXTRA_BUILD_FLAGS=-DSCALE=7", "SCALE_UNSETENV=1", "SCALE_READ_BINARY=1"}
	if got := runScale(t, host, dir, pocl, "", set...); got != "scale 7.0" {
		t.Fatalf("without the layer, flags set, built with and unset give %q, want scale 7.0: the test's premise", got)
	}
	if got := runScale(t, host, dir, pocl, cache, set...); got != "scale 7.0" {
		t.Errorf("through the layer: %q, want scale 7.0", got)
	}
	if got := runScale(t, host, dir, pocl, cache, "SCALE_READ_BINARY=1"); got != "scale 1.0" {
		t.Errorf("a run that never set the flags: %q, want scale 1.0 (the entry holds the build with them)", got)
	}
}

// TestStaleHeaderSavedDuringBuild: a header being saved while the
// application builds (rewritten every few milliseconds, so that whatever
// the scan and the compiler read, it is too new to trust) is never stored
// under a key: the run works, and the cache holds nothing.
func TestStaleHeaderSavedDuringBuild(t *testing.T) {
	host := buildScaleHost(t)
	dir, pocl, cache := t.TempDir(), t.TempDir(), t.TempDir()
	header := filepath.Join(dir, "scale.h")
	writeFile(t, header, "#define SCALE 1\n")
	writeFile(t, filepath.Join(dir, "k.cl"), "#include \"scale.h\"\n"+scaleKernel)
	stop := keepSaving(header)
	got := runScale(t, host, dir, pocl, cache)
	stop()
	if got != "scale 1.0" && got != "scale 2.0" {
		t.Errorf("output %q", got)
	}
	if bins := entries(t, cache); len(bins) != 0 {
		t.Errorf("a binary built while its header was being saved was stored: %v", bins)
	}
}

// dayKernel writes the day of the month __DATE__ expands to.
const dayKernel = "__constant char day[] = __DATE__;\n" +
	"__kernel void scale(__global float *out) { out[0] = (day[4] == ' ' ? 0 : (day[4] - '0') * 10) + (day[5] - '0'); }\n"

// TestTZSetAtRunTime: an application that sets TZ after the layer started
// moves the day its compiler writes for __DATE__ (the C library's TZ),
// where the layer's scan keys the day in the zone it started with. Twenty
// six hours apart (Etc/GMT+12, Etc/GMT-14), the two days always differ: the
// build must give the day of the new zone, never the entry of the old.
func TestTZSetAtRunTime(t *testing.T) {
	host := buildScaleHost(t)
	for _, zone := range []string{"Etc/GMT+12", "Etc/GMT-14"} {
		_, err := os.Stat(filepath.Join("/usr/share/zoneinfo", zone))
		requireReal(t, "time zone data (tzdata)", err)
	}
	dir, pocl, cache := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "k.cl"), dayKernel)
	west, set := "TZ=Etc/GMT+12", "SCALE_SETENV=TZ=Etc/GMT-14"
	before := runScale(t, host, dir, pocl, "", west)
	after := runScale(t, host, dir, pocl, "", west, set)
	if before == after {
		t.Fatalf("without the layer, both zones give %q: the test's premise", before)
	}
	if got := runScale(t, host, dir, pocl, cache, west); got != before {
		t.Fatalf("first run through the layer: %q, want %q", got, before)
	}
	if got := runScale(t, host, dir, pocl, cache, west, set); got != after {
		t.Errorf("TZ set at run time through the layer: %q, want %q (the entry of the start's zone is stale)", got, after)
	}
}

// keepSaving rewrites header every few milliseconds, SCALE 1 and 2 in
// turn, until the returned function is called (which waits for the last
// save): whatever the scan and the compiler read is too new to trust.
func keepSaving(header string) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			case <-time.After(3 * time.Millisecond):
				// Saved as editors save: a new file renamed over the old,
				// so the compiler never reads half a header.
				tmp := header + ".tmp"
				os.WriteFile(tmp, []byte(fmt.Sprintf("#define SCALE %d\n", 1+i%2)), 0o644)
				os.Rename(tmp, header)
			}
		}
	}()
	return func() { close(quit); <-done }
}
