package deps_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The differential check of difftest_real_test.go on piglit's OpenCL
// programs (Debian's piglit): 664 programs that nobody here wrote,
// each built with the options of its own [config] block, as piglit's
// cl-program-tester passes them on PoCL 3.1's CPU device.

// piglitDirs are where piglit's tree may be, first found first: the
// directory scripts/setup extracts the package's OpenCL tests to (the
// whole package installs 2 GB), then the installed package.
var piglitDirs = []string{"/usr/local/share/kcache-test/piglit", "/usr/lib/x86_64-linux-gnu/piglit"}

// piglitTrees are the folders of piglit's tree that hold its OpenCL
// programs.
var piglitTrees = []string{"tests/cl", "generated_tests/cl"}

// piglitSearch returns the places piglit's root may be: KCACHE_PIGLIT,
// else piglitDirs.
func piglitSearch() []string {
	if d := os.Getenv("KCACHE_PIGLIT"); d != "" {
		return []string{d}
	}
	return piglitDirs
}

// piglitRoot returns the first place of piglitSearch that holds piglit's
// OpenCL tests, else the first place.
func piglitRoot() string {
	dirs := piglitSearch()
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "tests", "cl", "program")); err == nil {
			return d
		}
	}
	return dirs[0]
}

// requirePiglit returns piglitRoot, or skips (fails under
// KCACHE_REQUIRE_REAL=1) when it holds no OpenCL tests.
func requirePiglit(t *testing.T) string {
	t.Helper()
	dirs := piglitSearch()
	d := piglitRoot()
	if _, err := os.Stat(filepath.Join(d, "tests", "cl", "program")); err == nil {
		return d
	}
	if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
		t.Fatalf("KCACHE_REQUIRE_REAL=1 but piglit's OpenCL tests are in none of %v (scripts/setup extracts them)", dirs)
	}
	t.Skipf("piglit's OpenCL tests are in none of %v (scripts/setup extracts them, or KCACHE_PIGLIT=dir)", dirs)
	return ""
}

// piglitConfig is what piglit's program tester reads from a [config]
// section.
type piglitConfig struct {
	options    string // build_options
	sourceFile string // program_source_file, relative to the test file
	clcMax     int    // clc_version_max (0: none)
}

// piglitKeyValue is the tester's REGEX_KEY_VALUE: a key, a colon and a
// value without '#', blanks trimmed.
var piglitKeyValue = regexp.MustCompile(`^\s*(\w+)\s*:\s*([^\s#]+[^#]*[^\s#]+|[^\s#]+)\s*$`)

// piglitSection is the tester's REGEX_SECTION.
var piglitSection = regexp.MustCompile(`^\s*\[\s*([\w][\w\s]*[\w]|[\w]+)\s*\]\s*$`)

// parsePiglitConfig reads the [config] section of text as the tester's
// parse_config does: a '#' begins a comment, a line ending in a
// backslash goes on on the next; it also returns the text of a [program
// source] section, if any.
func parsePiglitConfig(text string) (c piglitConfig, source string, hasSource bool) {
	lines := strings.Split(text, "\n")
	section := ""
	for i := 0; i < len(lines); i++ {
		line, _, _ := strings.Cut(lines[i], "#")
		for strings.HasSuffix(strings.TrimRight(line, " \t"), "\\") && i+1 < len(lines) {
			i++
			next, _, _ := strings.Cut(lines[i], "#")
			line = strings.TrimSuffix(strings.TrimRight(line, " \t"), "\\") + next
		}
		if m := piglitSection.FindStringSubmatch(line); m != nil {
			section = m[1]
			if section == "program source" {
				return c, piglitSectionText(lines[i+1:]), true
			}
			continue
		}
		m := piglitKeyValue.FindStringSubmatch(line)
		if m == nil || section != "config" {
			continue
		}
		switch m[1] {
		case "build_options":
			c.options = m[2]
		case "program_source_file":
			c.sourceFile = m[2]
		case "clc_version_max":
			c.clcMax, _ = strconv.Atoi(m[2])
		}
	}
	return c, "", false
}

// piglitSectionText returns lines up to the next section, joined.
func piglitSectionText(lines []string) string {
	for i, l := range lines {
		if piglitSection.MatchString(l) {
			lines = lines[:i]
			break
		}
	}
	return strings.Join(lines, "\n")
}

// piglitCommentConfig is the tester's REGEX_COMMENT_CONFIG: the config of
// a .cl file is in a /*! ... !*/ comment (greedy, across lines).
var piglitCommentConfig = regexp.MustCompile(`(?s)/\*!(.*)!\*/`)

// piglitDeviceCLC is the OpenCL C version PoCL 3.1's CPU device reports
// (CL_DEVICE_OPENCL_C_VERSION "OpenCL C 1.2 PoCL"), as piglit counts it.
const piglitDeviceCLC = 12

// piglitOptions returns the build options piglit's framework passes for
// c (piglit_cl_program_test_run): the test's build_options and, where the
// OpenCL C version it tests is above 1.0 and the options name no -cl-std,
// " -cl-std=CLx.y" of that version (the device's, lowered to
// clc_version_max).
func piglitOptions(c piglitConfig) string {
	clc := piglitDeviceCLC
	if c.clcMax > 0 && clc > c.clcMax {
		clc = c.clcMax
	}
	opts := c.options
	if clc > 10 && !strings.Contains(opts, "-cl-std") {
		opts += fmt.Sprintf(" -cl-std=CL%d.%d", clc/10, clc%10)
	}
	return opts
}

// piglitPrograms returns every program of piglit's OpenCL tests under
// root, each with the options piglit builds it with, run from root (the
// tests' -I options, "-I tests/cl/program/build", are relative to
// piglit's root, where its runner is started). A [program source] text
// is written under src.
func piglitPrograms(t *testing.T, root, src string) []realKernel {
	var files []string
	for _, tree := range piglitTrees {
		filepath.WalkDir(filepath.Join(root, tree), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".cl") || strings.HasSuffix(p, ".program_test")) {
				files = append(files, p)
			}
			return nil
		})
	}
	sort.Strings(files)
	var kernels []realKernel
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".cl") {
			var c piglitConfig
			if m := piglitCommentConfig.FindSubmatch(b); m != nil {
				c, _, _ = parsePiglitConfig(string(m[1]))
			}
			kernels = append(kernels, realKernel{path: f, wd: root, options: piglitOptions(c)})
			continue
		}
		c, text, ok := parsePiglitConfig(string(b))
		switch {
		case ok:
			p := filepath.Join(src, strings.ReplaceAll(strings.TrimPrefix(f, root+"/"), "/", "_")+".cl")
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			kernels = append(kernels, realKernel{path: p, wd: root, options: piglitOptions(c)})
		case c.sourceFile != "":
			kernels = append(kernels, realKernel{path: filepath.Join(filepath.Dir(f), c.sourceFile), wd: root, options: piglitOptions(c)})
		}
	}
	return kernels
}

// piglitIncludeTest is the header piglit's include-directories.cl finds
// through "-I tests/cl/program/build": piglit's source tree has it, the
// Debian package leaves it out, so the copy gets one that defines the
// macro the program uses.
const piglitIncludeTest = "tests/cl/program/build/include_test.h"

// copyPiglit copies piglit's OpenCL tests to dst, with the header the
// package lacks.
func copyPiglit(t *testing.T, root, dst string) {
	t.Helper()
	for _, tree := range piglitTrees {
		if err := copyTree(filepath.Join(root, tree), filepath.Join(dst, tree), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, piglitIncludeTest)); err != nil {
		if err := os.WriteFile(filepath.Join(dst, piglitIncludeTest), []byte("#define BUILD_OPT 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDifferentialPiglit checks every OpenCL program of piglit, each with
// its own build options as piglit passes them, against clang-15 run as
// PoCL runs it, from a copy of piglit's tree (its root the working
// directory, as for piglit's runner).
func TestDifferentialPiglit(t *testing.T) {
	clang := requireClang(t)
	root := filepath.Join(t.TempDir(), "piglit")
	copyPiglit(t, requirePiglit(t), root)
	kernels := piglitPrograms(t, root, t.TempDir())
	// Debian's piglit 0~git20220119 has 664: 552 .cl files, 111
	// .program_test files that name a source file and one that holds
	// its source; fewer says the parse lost some.
	if len(kernels) < 664 {
		t.Fatalf("%d piglit programs found under %s, want at least 664", len(kernels), root)
	}
	var withInclude bool
	for _, k := range kernels {
		withInclude = withInclude || strings.HasSuffix(k.path, "/include-directories.cl") && strings.Contains(k.options, "-I tests/cl/program/build")
	}
	if !withInclude {
		t.Fatal("include-directories.cl is missing, or its build_options were not read")
	}
	sum := checkReal(t, clang, kernels, root)
	// include-directories.cl reads include_test.h through its relative
	// -I: clang finding none would mean the tree was not reproduced.
	if sum.listed == 0 || sum.keyed < sum.listed {
		t.Errorf("clang listed %d files under the tree and the keys held %d: want include_test.h in both", sum.listed, sum.keyed)
	}
}

// TestPiglitConfig pins the parse of piglit's [config] blocks, which
// decides the options every program above is checked with.
func TestPiglitConfig(t *testing.T) {
	for _, tc := range []struct {
		text string
		want piglitConfig
		opts string
	}{
		{"[config]\nname: x\nbuild_options: -I . -I tests/cl/program/build\n", piglitConfig{options: "-I . -I tests/cl/program/build"}, "-I . -I tests/cl/program/build -cl-std=CL1.2"},
		{"[config]\nbuild_options: -D DEF        # Build options\nclc_version_max: 12 # max\n", piglitConfig{options: "-D DEF", clcMax: 12}, "-D DEF -cl-std=CL1.2"},
		{"[config]\nbuild_options: -cl-std=CL1.1\n", piglitConfig{options: "-cl-std=CL1.1"}, "-cl-std=CL1.1"},
		{"[config]\nclc_version_max: 10\nbuild_options: -D A \\\n  -D B\n", piglitConfig{options: "-D A   -D B", clcMax: 10}, "-D A   -D B"},
		{"[config]\nprogram_source_file: scalar-load.inc\nbuild_options: -D SCALAR_TYPE=int\n[test]\nbuild_options: -D NOT\n", piglitConfig{options: "-D SCALAR_TYPE=int", sourceFile: "scalar-load.inc"}, "-D SCALAR_TYPE=int -cl-std=CL1.2"},
	} {
		c, _, _ := parsePiglitConfig(tc.text)
		if c != tc.want {
			t.Errorf("%q: parsed %+v, want %+v", tc.text, c, tc.want)
		}
		if o := piglitOptions(c); o != tc.opts {
			t.Errorf("%q: options %q, want %q", tc.text, o, tc.opts)
		}
	}
}
