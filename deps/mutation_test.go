package deps_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// Mutation of real trees: the differential tests ask whether every file
// clang reads is in the key; these change the trees and ask whether the
// key follows. For each program, every file `clang-15 -M` lists (as PoCL
// compiles) is edited, and a file is created at every place clang probed
// in vain (an earlier search directory, a __has_include target, PoCL's
// temporary directory) and every place the key holds as absent, and each
// file clang found that -M does not list is removed; wherever
// clang's preprocessed output (-E) changes, the key must change too, on a
// scanner warm from the unchanged tree (a long-lived process) and on a new
// one given the unchanged tree's dependency record (a new process, which
// checks the record by stat and scans anew where it no longer holds), or
// the scan must refuse the source. A change clang's output does
// not show (a file in a skipped branch, a probe clang reads no further)
// is not asked about. The trees are copies, so the edits stay in the test.
//
//	KCACHE_MUT_ALL=1     every program of each tree (default: a few)
//	KCACHE_MUT_HASHCAT=N N hashcat kernels, spread over all of them

// mutProgram is one program of a copied tree.
type mutProgram struct {
	name    string
	text    string
	wd      string // the application's working directory
	options string
}

// mutTree is a tree to copy and the programs that build against the copy.
type mutTree struct {
	name, dir, pkg string
	// optional says the tree's package is not one CI installs
	// (darktable's, as for TestDifferentialDarktable): missing, it skips.
	optional bool
	keep     func(rel string) bool // the files of dir to copy; nil: all
	programs func(root, wd string) []mutProgram
}

// mutCounts sums what the mutations of a tree did.
type mutCounts struct {
	edits, removes, creates, unseen, refused int
	// recorded counts the changes a new scanner saw through the
	// dependency record of the tree before the change.
	recorded int
}

func TestMutationRealTrees(t *testing.T) {
	clang := requireClang(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatal("KCACHE_REQUIRE_REAL=1 but strace is missing (apt-get install strace)")
		}
		t.Skip("no strace: the places clang probes cannot be listed")
	}
	all := os.Getenv("KCACHE_MUT_ALL") == "1"
	if n := envInt(t, "KCACHE_MUT_HASHCAT", 0); n > 0 {
		files, _ := filepath.Glob(filepath.Join(hashcatDir, "OpenCL", "m*.cl"))
		hashcatMutKernels = nil
		for i := 0; i < n && len(files) > 0; i++ {
			hashcatMutKernels = append(hashcatMutKernels, filepath.Base(files[i*len(files)/n]))
		}
		all = true
	}
	for _, tr := range mutTrees(all) {
		t.Run(tr.name, func(t *testing.T) {
			if _, err := os.Stat(tr.dir); err != nil && tr.optional {
				t.Skipf("%s is missing (apt-get install %s)", tr.dir, tr.pkg)
			}
			requireTree(t, tr.dir, tr.pkg)
			tmp := t.TempDir()
			root := filepath.Join(tmp, filepath.Base(tr.dir))
			if err := copyTree(tr.dir, root, tr.keep); err != nil {
				t.Fatal(err)
			}
			wd := filepath.Join(tmp, "wd")
			if err := os.Mkdir(wd, 0o755); err != nil {
				t.Fatal(err)
			}
			var sum mutCounts
			for _, p := range tr.programs(root, wd) {
				c := mutateProgram(t, clang, strace, p, root, filepath.Join(tmp, "run"))
				sum.edits += c.edits
				sum.creates += c.creates
				sum.removes += c.removes
				sum.recorded += c.recorded
				sum.unseen += c.unseen
				sum.refused += c.refused
			}
			t.Logf("%s: %d files edited, %d removed, %d places created, each seen by the key (%d of them through a dependency record); %d changes clang's output did not show; %d refused",
				tr.name, sum.edits, sum.removes, sum.creates, sum.recorded, sum.unseen, sum.refused)
		})
	}
}

// mutTrees returns the trees, each with a few programs (all of them with
// all set).
func mutTrees(all bool) []mutTree {
	sample := func(n int) int {
		if all {
			return 1 << 30
		}
		return n
	}
	return []mutTree{
		{name: "pyopencl", dir: pyopenclCL, pkg: "python3-pyopencl", programs: func(root, wd string) []mutProgram {
			inc := "-I " + root
			const kern = "\n__kernel void k(__global float *o) { o[0] = 1.0f; }\n"
			cd := "#define PYOPENCL_DEFINE_CDOUBLE\n"
			progs := []mutProgram{
				{"random123", "#include <pyopencl-random123/philox.cl>\n#include <pyopencl-random123/threefry.cl>\n" + kern, wd, inc},
				{"hankel", cd + "#include <pyopencl-complex.h>\n#include <pyopencl-hankel-complex.cl>\n" + kern, wd, inc},
				{"bessel-j", cd + "#include <pyopencl-bessel-j.cl>\n" + kern, wd, inc},
				{"ranlux", "#include <pyopencl-ranluxcl.cl>\n" + kern, wd, inc},
			}
			return progs[:min(len(progs), sample(2))]
		}},
		// Not a real tree: PoCL's device macros come after the options
		// (TestPoCLDefinesAfterOptions), and a key that took the option's
		// -D held big.h where clang reads 1.h.
		{name: "device-macro", dir: "testdata/devicemacro", programs: func(root, wd string) []mutProgram {
			const text = "#define S(x) #x\n#define XS(x) S(x)\n#include XS(__ENDIAN_LITTLE__.h)\n__kernel void k(__global int *o) { o[0] = SCALE; }\n"
			return []mutProgram{{"device-macro", text, wd, "-D__ENDIAN_LITTLE__=big -I " + root}}
		}},
		{name: "random123", dir: random123Dir, pkg: "librandom123-dev", programs: func(root, wd string) []mutProgram {
			inc := "-I " + filepath.Dir(root)
			const kern = "\n__kernel void k(__global uint *o) { o[0] = 1u; }\n"
			progs := []mutProgram{
				{"philox", "#include <Random123/philox.h>\n" + kern, wd, inc},
				{"threefry", "#include \"Random123/threefry.h\"\n" + kern, wd, inc + " -DR123_USE_64BIT=0"},
				{"u01", "#include <Random123/u01fixedpt.h>\n" + kern, wd, inc},
			}
			return progs[:min(len(progs), sample(1))]
		}},
		{name: "hashcat", dir: filepath.Join(hashcatDir, "OpenCL"), pkg: "hashcat-data",
			keep: func(rel string) bool {
				return strings.HasPrefix(rel, "inc_") || slices.Contains(hashcatMutKernels, rel)
			},
			programs: func(root, wd string) []mutProgram {
				var progs []mutProgram
				for i, k := range hashcatMutKernels[:min(len(hashcatMutKernels), sample(1))] {
					text, err := os.ReadFile(filepath.Join(root, k))
					if err != nil {
						continue
					}
					// hashcat runs in its shared folder, whose OpenCL/ the
					// options name relative or absolute (hashcatOptions).
					opts := hashcatOptions(k, i%2 == 1, []int{64, 32}[i%2])
					opts = strings.ReplaceAll(opts, filepath.Join(hashcatDir, "OpenCL"), root)
					progs = append(progs, mutProgram{k, string(text), filepath.Dir(root), opts})
				}
				return progs
			}},
		{name: "piglit", dir: piglitRoot(), pkg: "piglit (scripts/setup extracts its OpenCL tests)",
			keep: func(rel string) bool {
				return slices.ContainsFunc(piglitTrees, func(tr string) bool { return strings.HasPrefix(rel, tr+"/") })
			},
			programs: func(root, wd string) []mutProgram {
				// include-directories.cl first: its relative -I finds
				// include_test.h (which the copy needs, as for
				// TestDifferentialPiglit) from piglit's root.
				if err := os.WriteFile(filepath.Join(root, piglitIncludeTest), []byte("#define BUILD_OPT 1\n"), 0o644); err != nil {
					return nil
				}
				var progs []mutProgram
				for _, k := range piglitMutPrograms[:min(len(piglitMutPrograms), sample(2))] {
					text, err := os.ReadFile(filepath.Join(root, k.file))
					if err != nil {
						continue
					}
					progs = append(progs, mutProgram{filepath.Base(k.file), string(text), root, k.options})
				}
				return progs
			}},
		// Cacheable since a pasting macro needs a piece of _Pragma to
		// make definitions uncertain (TestDifferentialLibclc): each
		// header defines __CLC_BODY and includes gentype.inc, which
		// includes __CLC_BODY once per type. (clc.h whole, 277 files, takes
		// over 20 minutes here: TestDifferentialLibclc checks it.)
		{name: "libclc", dir: libclcDir, pkg: "libclc-15-dev", programs: func(root, wd string) []mutProgram {
			inc := "-I " + filepath.Dir(root) + " -Dcl_clang_storage_class_specifiers"
			const kern = "\n__kernel void k(__global float *o) { o[0] = 1.0f; }\n"
			progs := []mutProgram{
				{"fabs", "#include <clc/clcfunc.h>\n#include <clc/clctypes.h>\n#include <clc/math/fabs.h>\n" + kern, wd, inc},
				{"dot", "#include <clc/clcfunc.h>\n#include <clc/clctypes.h>\n#include <clc/geometric/dot.h>\n" + kern, wd, inc},
				{"isequal", "#include <clc/clcfunc.h>\n#include <clc/clctypes.h>\n#include <clc/relational/isequal.h>\n" + kern, wd, inc},
			}
			return progs[:min(len(progs), sample(1))]
		}},
		{name: "darktable", dir: darktableKernels, pkg: "darktable", optional: true, programs: func(root, wd string) []mutProgram {
			var progs []mutProgram
			for _, k := range []string{"basic.cl", "demosaic_markesteijn.cl", "bilateral.cl", "colorspace.cl"}[:min(4, sample(1))] {
				text, err := os.ReadFile(filepath.Join(root, k))
				if err != nil {
					continue
				}
				progs = append(progs, mutProgram{k, string(text), wd, "-w -cl-fast-relaxed-math -DNVIDIA=1 -DNVIDIA_SM_20=1 -I" + root})
			}
			return progs
		}},
	}
}

// piglitMutPrograms are the piglit programs mutated, with the options
// piglit builds them with on PoCL (piglitOptions).
var piglitMutPrograms = []struct{ file, options string }{
	{"tests/cl/program/build/include-directories.cl", "-I . -I tests/cl/program/build -cl-std=CL1.2"},
	{"tests/cl/program/execute/scalar-load.inc", "-D SCALAR_TYPE=int -D OUT_TYPE=int -cl-std=CL1.2"},
	{"tests/cl/program/build/version-declaration.cl", "-cl-std=CL1.1"},
	{"tests/cl/program/build/mixed-macro-definitions.cl", "-D BUILD_OPT1 -D BUILD_OPT2=2 -cl-std=CL1.2"},
}

// hashcatMutKernels are the hashcat kernels mutated: one of the optimized
// kernels and pure ones, with the include trees of most hashes.
var hashcatMutKernels = []string{"m01000_a3-optimized.cl", "m22000-pure.cl", "m00500-pure.cl"}

// copyTree copies the regular files of src that keep accepts to dst.
func copyTree(src, dst string, keep func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || (keep != nil && !keep(rel)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// mutRun is one program set up for mutation.
type mutRun struct {
	t     *testing.T
	clang string
	run   clangRun
	in    deps.Input
	warm  *deps.Scanner
	tmp   string
	// records holds the dependency record of the unchanged tree, which
	// a new process's scanner checks by stat instead of scanning.
	records  *memRecords
	recorder *deps.Scanner // writes records, warm across the changes
}

// memRecords is a deps.RecordStore in memory. Loads counts the records
// found.
type memRecords struct {
	mu    sync.Mutex
	m     map[kcache.Digest][]byte
	loads int
}

func (r *memRecords) LoadRecord(_ context.Context, id kcache.Digest) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.m[id]
	if !ok {
		return nil, kcache.ErrMiss
	}
	r.loads++
	return slices.Clone(b), nil
}

func (r *memRecords) StoreRecord(_ context.Context, id kcache.Digest, b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[id] = slices.Clone(b)
	return nil
}

// readOnly is a view of r that stores nothing: the scanner of a changed
// tree must not replace the unchanged tree's record.
type readOnly struct{ *memRecords }

func (readOnly) StoreRecord(context.Context, kcache.Digest, []byte) error { return nil }

// record stores the dependency record of the tree as it is now, once its
// files are past the scanner's too-new window (a record holds only
// settled stats).
func (m *mutRun) record() {
	time.Sleep(30 * time.Millisecond)
	m.key(m.recorder)
	m.recorder.WaitRecords(context.Background())
}

// preprocess returns clang's preprocessed output as PoCL compiles, and
// false where clang fails.
func (m *mutRun) preprocess() ([]byte, bool) {
	args := append(deps.PoCLFrontEndMust(m.run.options), "-E", "-w", m.run.main)
	cmd := exec.Command(m.clang, args...)
	cmd.Dir = m.run.wd
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, false
	}
	return out.Bytes(), true
}

// key returns the key's headers from s, and whether the source was
// refused.
func (m *mutRun) key(s *deps.Scanner) ([]kcache.Header, bool) {
	h, _, err := s.Scan(context.Background(), m.in)
	if errors.Is(err, deps.ErrUncacheable) {
		return nil, true
	}
	if err != nil {
		m.t.Fatalf("%s: scan: %v", m.run.main, err)
	}
	return h, false
}

// check compares the keys after a change with base: a change clang's
// output shows must change the key of a warm and of a new scanner.
func (m *mutRun) check(what string, base []kcache.Header, before []byte, c *mutCounts, seen *int) {
	after, ok := m.preprocess()
	if !ok || bytes.Equal(after, before) {
		c.unseen++
		return
	}
	loads := m.records.loads
	// A new scanner given the record scans the tree anew where the record
	// no longer holds, as one without a record would.
	for _, s := range []*deps.Scanner{m.warm, deps.NewScanner(nil, deps.WithRecords(readOnly{m.records}))} {
		h, refused := m.key(s)
		if refused {
			c.refused++
			return
		}
		if slices.Equal(h, base) {
			m.t.Errorf("%s: %s changes clang's output, not the key", m.run.main, what)
			return
		}
	}
	if m.records.loads > loads {
		c.recorded++
	}
	*seen++
}

// mutateProgram edits each file clang lists for p and creates each place
// it probed in vain, one at a time, checking the key after each.
func mutateProgram(t *testing.T, clang, strace string, p mutProgram, root, tmp string) mutCounts {
	var c mutCounts
	os.RemoveAll(tmp)
	main := filepath.Join(tmp, "pocl-cache", "tempfile.cl")
	if err := os.MkdirAll(filepath.Dir(main), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte(p.text), 0o644); err != nil {
		t.Fatal(err)
	}
	run := clangRun{clang: clang, wd: p.wd, options: p.options, main: main, strace: strace}
	files, absent, seen, err := poclDeps(run, tmp)
	if err != nil {
		t.Fatalf("%s: clang: %v", p.name, err)
	}
	in, err := keyparts.OpenCLScan([]byte(p.text), p.options, keyparts.PoCL)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	in.WorkDir, in.MainDir = p.wd, filepath.Dir(main)
	m := &mutRun{t: t, clang: clang, run: run, in: in, warm: deps.NewScanner(nil), tmp: tmp, records: &memRecords{m: map[kcache.Digest][]byte{}}}
	m.recorder = deps.NewScanner(nil, deps.WithRecords(m.records))
	base, refused := m.key(m.warm)
	if refused {
		t.Logf("%s: uncacheable, not mutated", p.name)
		return c
	}
	before, ok := m.preprocess()
	if !ok {
		t.Fatalf("%s: clang -E fails", p.name)
	}
	_, trace, _ := m.warm.Scan(context.Background(), in)
	m.record()
	mine := func(f string) bool {
		return strings.HasPrefix(f, root+"/") || strings.HasPrefix(f, p.wd+"/") || strings.HasPrefix(f, tmp+"/")
	}
	for _, f := range files {
		if f == main || !mine(f) {
			continue
		}
		old, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, edit := range [][]byte{append(slices.Clip(old), "\nint kcache_mutated;\n"...), append([]byte("int kcache_mutated;\n"), old...)} {
			if err := os.WriteFile(f, edit, 0o644); err != nil {
				t.Fatal(err)
			}
			n := c.edits + c.refused
			m.check("an edit of "+f, base, before, &c, &c.edits)
			if c.edits+c.refused > n {
				break
			}
		}
		if err := os.WriteFile(f, old, 0o644); err != nil {
			t.Fatal(err)
		}
		m.record()
	}
	// A file clang found and -M does not list (a __has_include target):
	// removed, clang's output may change.
	for _, f := range seen {
		if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() || !mine(f) || f == main || slices.Contains(files, f) {
			continue
		}
		aside := f + ".kcache-aside"
		if err := os.Rename(f, aside); err != nil {
			continue
		}
		m.check("removing "+f, base, before, &c, &c.removes)
		if err := os.Rename(aside, f); err != nil {
			t.Fatal(err)
		}
		m.record()
	}
	places := slices.Clone(absent)
	for _, d := range trace {
		if d.Rule == deps.RuleAbsent {
			places = append(places, d.Path)
		}
	}
	slices.Sort(places)
	for _, a := range slices.Compact(places) {
		if !mine(a) || filepath.Ext(a) == ".pch" || filepath.Ext(a) == ".gch" {
			continue
		}
		if _, err := os.Lstat(a); err == nil {
			continue
		}
		made, err := mkdirs(filepath.Dir(a))
		if err != nil {
			continue // under a file: nothing can be created there
		}
		if err := os.WriteFile(a, []byte("int kcache_created;\n"), 0o644); err == nil {
			m.check("creating "+a, base, before, &c, &c.creates)
			os.Remove(a)
		}
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i])
		}
		m.record()
	}
	if h, _ := m.key(m.warm); !slices.Equal(h, base) {
		t.Errorf("%s: the key did not come back with the tree", p.name)
	}
	return c
}

// poclDeps is clangRun.deps with strace always: the files clang reads,
// the places it probed in vain, and those where it found something,
// absolute.
func poclDeps(c clangRun, tmp string) (files, absent, seen []string, err error) {
	depfile := filepath.Join(tmp, "clang.d")
	trace := filepath.Join(tmp, "strace.txt")
	argv := append([]string{c.strace, "-f", "-qq", "-e", "trace=open,openat,stat,lstat,newfstatat,statx,access,faccessat", "-o", trace}, c.command(depfile)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.wd
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	rule, err := os.ReadFile(depfile)
	if err != nil {
		return nil, nil, nil, err
	}
	probed, err := os.ReadFile(trace)
	if err != nil {
		return nil, nil, nil, err
	}
	abs := func(f string) string {
		if !filepath.IsAbs(f) {
			f = c.wd + "/" + f // through links, as the kernel resolves it
		}
		return f
	}
	for _, f := range makePrereqs(string(rule)) {
		files = append(files, abs(f))
	}
	for _, f := range probes(string(probed)) {
		absent = append(absent, abs(f))
	}
	for _, f := range opened(string(probed)) {
		seen = append(seen, abs(f))
	}
	return files, absent, seen, nil
}

// openedLine matches a system call of strace's output that found a path:
// newfstatat(AT_FDCWD, "inc/x.h", {...}, 0) = 0, openat(...) = 3.
var openedLine = regexp.MustCompile(`^\d+\s+\w+\((?:AT_FDCWD, )?"([^"]*)".*= \d+$`)

// opened returns the paths of strace's output that clang found: a file
// among them that -M does not list (one a __has_include found) is one
// whose removal may change what clang compiles.
func opened(trace string) []string {
	var out []string
	for _, line := range strings.Split(trace, "\n") {
		if m := openedLine.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// mkdirs makes dir and the directories above it that are missing, and
// returns those it made, outermost first.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
	}
	slices.Reverse(missing)
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil {
			return missing, fmt.Errorf("making %s: %w", d, err)
		}
	}
	return missing, nil
}
