package deps

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hashcatDir is where Debian's hashcat-data puts hashcat's OpenCL kernels:
// about 1,200 real kernels that include their headers through macros.
const hashcatDir = "/usr/share/hashcat"

// hashcatArgs are the build options hashcat passes (KERNEL_STATIC makes
// each kernel include its headers; INCLUDE_PATH names their directory).
const hashcatOptions = `-D KERNEL_STATIC -I OpenCL -D INCLUDE_PATH=OpenCL -D "XM2S(x)=#x" -D "M2S(x)=XM2S(x)"`

var hashcatArgs = SplitOptions(hashcatOptions)

func requireHashcat(t *testing.T) []string {
	t.Helper()
	kernels, _ := filepath.Glob(filepath.Join(hashcatDir, "OpenCL", "*.cl"))
	if len(kernels) == 0 {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but %s holds no kernels (apt-get install hashcat-data)", hashcatDir)
		}
		t.Skipf("no hashcat kernels in %s (apt-get install hashcat-data)", hashcatDir)
	}
	return kernels
}

// TestHashcatKernelsResolve scans every hashcat kernel as PoCL would see it
// and checks that every include resolves exactly: none is missing, none
// needs the conservative key.
func TestHashcatKernelsResolve(t *testing.T) {
	kernels := requireHashcat(t)
	s := NewScanner(nil)
	builtins, _ := filepath.Glob("/usr/share/pocl/include/*.h") // as the opencl backend passes them
	computed := 0
	for _, k := range kernels {
		src, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		sc := newScan(context.Background(), s, Input{Source: src, Path: k, WorkDir: hashcatDir, Args: hashcatArgs, SearchWorkDir: true, CompleteSearchPath: true, Builtins: builtins}, hashcatDir)
		if err := sc.run(); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if len(sc.roots) > 0 {
			t.Errorf("%s: the key widened to %q", k, sc.roots)
		}
		for _, m := range sc.missing {
			// Apple's Metal header sits in a branch for Metal only.
			if m != "metal_stdlib" {
				t.Errorf("%s: include %q not found", k, m)
			}
		}
		for _, d := range sc.trace {
			if d.Rule == RuleComputedInclude {
				computed++
			}
		}
	}
	t.Logf("%d kernels, %d computed includes resolved", len(kernels), computed)
	if computed < len(kernels) {
		t.Errorf("only %d computed includes in %d kernels: hashcat's are not being followed", computed, len(kernels))
	}
}

// TestHashcatSupersetOfClang checks a sample of hashcat kernels against the
// compiler itself: every file clang's preprocessor reads (clang -M, with
// "-I ." first as PoCL compiles) is among the scan's dependencies. clang
// comes with PoCL.
func TestHashcatSupersetOfClang(t *testing.T) {
	kernels := requireHashcat(t)
	clang, err := exec.LookPath("clang-15")
	if err != nil {
		if clang, err = exec.LookPath("clang"); err != nil {
			if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
				t.Fatal("KCACHE_REQUIRE_REAL=1 but clang, which PoCL depends on, is missing")
			}
			t.Skip("no clang")
		}
	}
	s := NewScanner(nil)
	const sample = 12
	step := max(1, len(kernels)/sample)
	for i := 0; i < len(kernels); i += step {
		k := kernels[i]
		rel, _ := filepath.Rel(hashcatDir, k)
		// As PoCL 3.1 runs clang (PoCLFrontEnd), its dependencies to
		// stdout.
		args := append(PoCLFrontEndMust(hashcatOptions), "-E", "-o", os.DevNull, "-dependency-file", "-", "-MT", "k", "-sys-header-deps", rel)
		cmd := exec.Command(clang, args...)
		cmd.Dir = hashcatDir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("clang -M %s: %v\n%s", rel, err, stderr.String())
		}
		src, _ := os.ReadFile(k)
		_, tr, err := s.Scan(context.Background(), Input{Source: src, Path: k, WorkDir: hashcatDir, Args: hashcatArgs, SearchWorkDir: true, CompleteSearchPath: true})
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, d := range tr {
			if d.Rule != RuleAbsent {
				have[filepath.Clean(d.Path)] = true
			}
		}
		for _, f := range makeDeps(string(out))[1:] { // the first is the kernel itself
			if !filepath.IsAbs(f) {
				f = filepath.Join(hashcatDir, f)
			}
			if strings.Contains(f, "/lib/clang/") || strings.HasPrefix(f, poclIncludeDir()+"/") {
				continue // the compiler's own headers: its identity covers them
			}
			if !have[filepath.Clean(f)] {
				t.Errorf("%s: clang reads %s, the scan missed it", rel, f)
			}
		}
	}
}

// makeDeps parses the prerequisites of clang -M's make rule.
func makeDeps(rule string) []string {
	_, prereqs, _ := strings.Cut(strings.ReplaceAll(rule, "\\\n", " "), ":")
	return strings.Fields(prereqs)
}
