package deps_test

// Differential testing of the scanner against the compiler's own
// preprocessor (issue 17, "How it is proven"). clang-15 is the LLVM of
// PoCL 3.1: for each program, every file `clang -M` lists (compiled as
// PoCL compiles: -x cl, -I. ahead of the application's options, from a
// temporary file of PoCL's cache directory, in the application's working
// directory) must be among the scanner's dependencies for the Input the
// OpenCL cache gives it (keyparts.OpenCLScan), compared by device and
// inode; or the scanner must have refused the program (ErrUncacheable);
// a file found only by a widened key (RuleManifest) counts, as "widened".
// A file clang read that the scanner missed is a FAILURE: a key that does
// not change when that file does, a stale binary. Two more verdicts count
// against the scanner: two files keyed under one name (name-clash: their
// contents can swap under the same key), and, for programs run under
// strace too, a place clang looked for a file in vain that the key does
// not hold (unkeyed-probe: creating a file there changes what clang
// compiles and not the key).
//
// The programs come from deps/internal/gentree, which draws include trees
// by feature class. The bounded run (in go test ./deps) runs each class
// alone on top of the base class, then everything at once. Knobs, all
// environment variables so that go test ./... passes them through:
//
//	KCACHE_DIFF_N=10000      programs in all (default 300)
//	KCACHE_DIFF_SEED=7       first seed (default 1)
//	KCACHE_DIFF_FOR=70m      stop starting programs after this long (the
//	                         modes are interleaved, so all are covered)
//	KCACHE_DIFF_CLASSES=cr,bom  one run with just these classes ("all")
//	KCACHE_DIFF_REPLAY=SEED/CLASSES  run one program, e.g. 17/base,lone-cr
//	KCACHE_DIFF_OUT=dir      where minimized reproducers go
//	KCACHE_DIFF_MINIMIZE=3   failures minimized per run (default 1)
//	KCACHE_DIFF_LOG_ONLY=1   log failures without failing the test
//	KCACHE_DIFF_PROBE=1      run every program (default every 4th; 0: none)
//	                         under strace too, and require that every
//	                         place clang looked in vain is in the key
//	KCACHE_DIFF_REAL=all     hashcat kernels checked (default 24; "all")
//	KCACHE_DARKTABLE_KERNELS=dir  darktable's kernels elsewhere than
//	                         /usr/share/darktable/kernels
//
// clang-15 missing skips these tests, and fails them under
// KCACHE_REQUIRE_REAL=1.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/deps/internal/gentree"
	"github.com/kcache/kcache/internal/keyparts"
)

// requireClang returns clang-15's path, or skips (fails under
// KCACHE_REQUIRE_REAL=1).
func requireClang(t *testing.T) string {
	t.Helper()
	clang, err := exec.LookPath("clang-15")
	if err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatal("KCACHE_REQUIRE_REAL=1 but clang-15 is missing (apt-get install clang-15)")
		}
		t.Skip("no clang-15 (apt-get install clang-15)")
	}
	return clang
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// verdict is what one program's comparison found.
type verdict int

const (
	exact    verdict = iota // every file clang read is a dependency; nothing widened
	widened                 // the same, with the key widened by a manifest
	refused                 // the scanner returned ErrUncacheable
	failure                 // clang read a file the scanner missed
	clash                   // two files keyed under one name: swapping their contents keeps the key
	unseen                  // clang looked for a file where the key does not look: creating one there keeps the key
	rejected                // clang failed: the program does not build (not counted against the scanner)
	scanErr                 // the scanner failed otherwise
	numVerdicts
)

var verdictNames = [numVerdicts]string{"exact", "widened", "refused", "FAILURES", "name-clash", "unkeyed-probe", "clang-rejected", "scan-errors"}

// outcome is one comparison.
type outcome struct {
	v      verdict
	missed []string // failure: clang's files the trace lacks
	detail string   // clang's or the scanner's error
	trace  []deps.Dependency
	// keyed and listed count the files under the tree that the key holds
	// and that clang -M lists (the program text left out), for precision.
	keyed, listed int
}

// clangRun is one compile as PoCL runs it.
type clangRun struct {
	clang   string
	wd      string // the application's working directory
	options string // the application's build options, as it passes them
	main    string // PoCL's temporary file holding the program text
	// strace, when set, runs clang under it to record the places clang
	// looked for a file and found none (see probes).
	strace string
}

// command returns the clang command line that writes depfile: PoCL 3.1's
// front end (deps.PoCLFrontEnd), which lists every file it reads, system
// headers (-isystem) included, and writes the preprocessed text nowhere.
func (c clangRun) command(depfile string) []string {
	args := append([]string{c.clang}, deps.PoCLFrontEndMust(c.options)...)
	return append(args, "-E", "-o", os.DevNull, "-dependency-file", depfile, "-MT", "k", "-sys-header-deps", "-Wno-everything", c.main)
}

// deps runs clang -M and returns the files it lists, absolute, and
// under strace the places it probed in vain.
func (c clangRun) deps(tmp string) (files, absent []string, err error) {
	depfile := filepath.Join(tmp, "clang.d")
	argv := c.command(depfile)
	straceOut := filepath.Join(tmp, "strace.txt")
	if c.strace != "" {
		argv = append([]string{c.strace, "-f", "-qq", "-e", "trace=open,openat,stat,lstat,newfstatat,statx,access,faccessat", "-o", straceOut}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.wd
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("%v: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	rule, err := os.ReadFile(depfile)
	if err != nil {
		return nil, nil, err
	}
	abs := func(f string) string {
		if !filepath.IsAbs(f) {
			// Not filepath.Join: "lnk/../x.h" is resolved by the
			// kernel through the link, not lexically.
			f = c.wd + "/" + f
		}
		return f
	}
	for _, f := range makePrereqs(string(rule)) {
		files = append(files, abs(f))
	}
	if c.strace != "" {
		trace, err := os.ReadFile(straceOut)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range probes(string(trace)) {
			absent = append(absent, abs(f))
		}
	}
	return files, absent, nil
}

// probeLine matches a system call of strace's output that looked for a
// path and found nothing: openat(AT_FDCWD, "inc/x.h", ...) = -1 ENOENT.
var probeLine = regexp.MustCompile(`^\d+\s+\w+\((?:AT_FDCWD, )?"([^"]*)".*= -1 ENOENT`)

// probes returns the paths of strace's output that clang looked for in
// vain: each is a place where creating a file would change what clang
// compiles, so each must be in the key (an absent place, or under a
// widened search directory).
func probes(trace string) []string {
	var out []string
	for _, line := range strings.Split(trace, "\n") {
		if m := probeLine.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// physPath returns where path p is, following links as the kernel does,
// for a path that need not exist: the part that exists is resolved, the
// rest appended.
func physPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	// Split without cleaning: "lnk/../x" is not "x" when lnk is a link.
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return filepath.Clean(p)
	}
	return filepath.Clean(physPath(p[:i]) + "/" + p[i+1:])
}

// makePrereqs parses the prerequisites of clang -M's one make rule
// (escaped blanks kept in names).
func makePrereqs(rule string) []string {
	rule = strings.ReplaceAll(rule, "\\\n", " ")
	rule = strings.ReplaceAll(rule, "\\ ", "\x00")
	_, prereqs, _ := strings.Cut(rule, ": ")
	var out []string
	for _, f := range strings.Fields(prereqs) {
		out = append(out, strings.ReplaceAll(f, "\x00", " "))
	}
	return out
}

// fileID is a file's device and inode: clang and the scanner may name one
// file by different paths (through links, "..", relative or not).
type fileID struct{ dev, ino uint64 }

func idOf(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}

// compare runs clang and the scanner on one program and judges. Only
// clang's files under within count (the compiler's own headers are
// covered by its identity in the key); the program text is not a
// dependency.
func compare(s *deps.Scanner, run clangRun, src []byte, options, within, tmp string) outcome {
	files, absent, err := run.deps(tmp)
	if err != nil {
		return outcome{v: rejected, detail: err.Error()}
	}
	in, err := keyparts.OpenCLScan(src, options, keyparts.PoCL)
	if err != nil {
		return outcome{v: refused, detail: err.Error()}
	}
	in.WorkDir = run.wd
	in.MainDir = filepath.Dir(run.main) // where this run's "PoCL" put the text
	_, trace, err := s.Scan(context.Background(), in)
	switch {
	case errors.Is(err, deps.ErrUncacheable):
		return outcome{v: refused, detail: err.Error()}
	case err != nil:
		return outcome{v: scanErr, detail: err.Error()}
	}
	have := map[fileID]bool{}
	wide := false
	var missed []string
	names := map[string]fileID{} // the key's names, and the file under each
	var clashes []string
	for _, d := range trace {
		if d.Rule == deps.RuleAbsent {
			continue
		}
		wide = wide || d.Rule == deps.RuleManifest
		id, ok := idOf(d.Path)
		if !ok {
			continue
		}
		// The digest must be of the file the path names: a scanner
		// that resolves a path one way and reads another keys the
		// wrong content.
		if b, err := os.ReadFile(d.Path); err == nil && sha256.Sum256(b) != d.Digest {
			missed = append(missed, d.Path+" (keyed with another file's digest)")
			continue
		}
		have[id] = true
		// The key holds names and digests: two files under one name
		// can swap contents without changing it (issue 17, class 1).
		if other, ok := names[d.Name]; ok && other != id {
			clashes = append(clashes, d.Name+" names two files, one at "+d.Path)
		}
		names[d.Name] = id
	}
	realWithin, err := filepath.EvalSymlinks(within)
	if err != nil {
		return outcome{v: scanErr, detail: err.Error()}
	}
	mainID, _ := idOf(run.main)
	for _, f := range files {
		rp, err := filepath.EvalSymlinks(f)
		if err != nil {
			missed = append(missed, f+" (unresolvable: "+err.Error()+")")
			continue
		}
		if !strings.HasPrefix(rp, realWithin+string(filepath.Separator)) {
			continue
		}
		id, ok := idOf(rp)
		if !ok || id == mainID || have[id] {
			continue
		}
		rel, _ := filepath.Rel(realWithin, rp)
		missed = append(missed, rel)
	}
	unkeyed := unkeyedProbes(absent, trace, realWithin, run.main)
	o := outcome{v: exact, trace: trace}
	o.keyed, o.listed = precision(trace, files, realWithin, mainID)
	switch {
	case len(missed) > 0:
		o.v, o.missed = failure, missed
	case len(clashes) > 0:
		o.v, o.missed = clash, clashes
	case len(unkeyed) > 0:
		o.v, o.missed = unseen, unkeyed
	case wide:
		o.v = widened
	}
	return o
}

// precision counts the distinct files under within that trace keys and
// that clang listed, leaving out the program's own text.
func precision(trace []deps.Dependency, files []string, within string, mainID fileID) (keyed, listed int) {
	count := func(paths []string) int {
		seen := map[fileID]bool{}
		for _, p := range paths {
			rp, err := filepath.EvalSymlinks(p)
			if err != nil || !strings.HasPrefix(rp, within+string(filepath.Separator)) {
				continue
			}
			if id, ok := idOf(rp); ok && id != mainID {
				seen[id] = true
			}
		}
		return len(seen)
	}
	var have []string
	for _, d := range trace {
		if d.Rule != deps.RuleAbsent {
			have = append(have, d.Path)
		}
	}
	return count(have), count(files)
}

// unkeyedProbes returns the places under within that clang probed in
// vain and the trace neither holds (as an absent place or a dependency)
// nor covers by a widened search directory, relative to within. Places
// beside PoCL's temporary file are left out (the application cannot
// know PoCL's cache directory; issue 17 class 6), and so are clang's own
// opencl-c-base.h and opencl-c.h, which clang's driver (not PoCL) includes
// through the search path, and the driver's precompiled-header probes.
func unkeyedProbes(absent []string, trace []deps.Dependency, within, main string) []string {
	if len(absent) == 0 {
		return nil
	}
	keyed := map[string]bool{}
	var roots []string
	for _, d := range trace {
		keyed[physPath(d.Path)] = true
		if d.Rule == deps.RuleManifest || (d.Rule == deps.RuleAbsent && strings.HasPrefix(d.Name, "manifest:")) {
			// A manifest entry's name is manifest:N/REL: its root is
			// its path less REL.
			_, rel, _ := strings.Cut(d.Name, "/")
			roots = append(roots, physPath(strings.TrimSuffix(strings.TrimSuffix(d.Path, rel), "/")))
		}
	}
	mainDir := physPath(filepath.Dir(main))
	var out []string
	seen := map[string]bool{}
	for _, a := range absent {
		p := physPath(a)
		if seen[p] || keyed[p] || !strings.HasPrefix(p, within+"/") || p == mainDir || strings.HasPrefix(p, mainDir+"/") {
			continue
		}
		seen[p] = true
		if b := filepath.Base(p); b == "opencl-c-base.h" || b == "opencl-c.h" {
			continue
		}
		if ext := filepath.Ext(p); ext == ".pch" || ext == ".gch" {
			// clang's driver looks for a precompiled -include
			// FILE.pch or FILE.gch; PoCL calls the frontend, which
			// does not.
			continue
		}
		covered := false
		for _, r := range roots {
			covered = covered || strings.HasPrefix(p, r+"/")
		}
		// clang looks a directory up before the file in it
		// ("inc/inc/sub" for "inc/sub/x.h" from inc/): a directory
		// probed in vain is keyed by any absent place beneath it.
		for k := range keyed {
			covered = covered || strings.HasPrefix(k, p+"/")
		}
		if !covered {
			rel, _ := filepath.Rel(within, p)
			out = append(out, rel+" (probed, not keyed)")
		}
	}
	return out
}

// checkProgram writes p (without the lexical classes of off) under dir
// and compares.
func checkProgram(clang, strace string, p *gentree.Program, off gentree.Set, dir string) outcome {
	root := filepath.Join(dir, "root")
	if err := p.Write(root, off); err != nil {
		return outcome{v: scanErr, detail: "writing the program: " + err.Error()}
	}
	src, err := os.ReadFile(filepath.Join(root, p.Main))
	if err != nil {
		return outcome{v: scanErr, detail: err.Error()}
	}
	run := clangRun{clang: clang, wd: root, options: p.OptionString(root), main: filepath.Join(root, p.Main), strace: strace}
	// A scanner per program: a failure must not depend on what an
	// earlier program left in the caches.
	return compare(deps.NewScanner(nil), run, src, p.OptionString(root), root, dir)
}

// mode is one run of the generator: a set of classes and a number of
// programs.
type mode struct {
	name    string
	classes gentree.Set
	n       int
}

// modes splits n programs between the base class, each class alone on
// top of it, and all classes together (half of them).
func modes(t *testing.T, n int) []mode {
	if list := os.Getenv("KCACHE_DIFF_CLASSES"); list != "" {
		set, err := gentree.ParseSet(list)
		if err != nil {
			t.Fatal(err)
		}
		return []mode{{list, set, n}}
	}
	all := max(1, n/2)
	classes := gentree.Classes()
	per := max(4, (n-all)/(len(classes)+1))
	out := []mode{{"base", gentree.Of(), per}}
	for _, c := range classes {
		out = append(out, mode{c.String(), gentree.Of(c), per})
	}
	return append(out, mode{"all", gentree.All(), all})
}

// job is one program of one mode.
type job struct {
	mode int
	seed int64
}

// finding is a failing program kept for minimization.
type finding struct {
	p      *gentree.Program
	o      outcome
	strace string // strace's path where the program was run under it
}

// TestDifferentialClang generates programs and checks each against clang.
func TestDifferentialClang(t *testing.T) {
	clang := requireClang(t)
	if testing.Short() && os.Getenv("KCACHE_DIFF_N") == "" {
		t.Skip("short mode")
	}
	if r := os.Getenv("KCACHE_DIFF_REPLAY"); r != "" {
		replay(t, clang, r)
		return
	}
	n := envInt(t, "KCACHE_DIFF_N", 300)
	seed0 := int64(envInt(t, "KCACHE_DIFF_SEED", 1))
	ms := modes(t, n)

	// Jobs interleave the modes in proportion, so that a run stopped by
	// KCACHE_DIFF_FOR has covered every mode alike.
	var jobs []job
	for i, m := range ms {
		for k := 0; k < m.n; k++ {
			jobs = append(jobs, job{i, seed0 + int64(k)})
		}
	}
	frac := func(j job) float64 { return float64(j.seed-seed0) / float64(ms[j.mode].n) }
	sort.SliceStable(jobs, func(a, b int) bool { return frac(jobs[a]) < frac(jobs[b]) })
	var stopAt time.Time // zero: run every job
	if v := os.Getenv("KCACHE_DIFF_FOR"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("KCACHE_DIFF_FOR=%q: %v", v, err)
		}
		stopAt = time.Now().Add(d)
	}
	tmp := t.TempDir()
	counts := make([][numVerdicts]int, len(ms))
	seeds := make([][]int64, len(ms))   // failing seeds, by mode
	found := make([][]finding, len(ms)) // failing programs kept, by mode
	rejects := make([]string, len(ms))  // one clang error, by mode
	missedFiles := make([]map[string]int, len(ms))
	for i := range missedFiles {
		missedFiles[i] = map[string]int{}
	}
	keep := envInt(t, "KCACHE_DIFF_MINIMIZE", 1)
	// Every probeEvery-th seed also runs clang under strace, to check
	// the places it probed in vain (KCACHE_DIFF_PROBE: a number, 0 for
	// none; default every 4th program where strace is installed).
	strace, _ := exec.LookPath("strace")
	probeEvery := envInt(t, "KCACHE_DIFF_PROBE", 4)
	if strace == "" {
		probeEvery = 0
	}
	// Minimizing costs a compile per step: bounded by time, so that a
	// failing bounded run still ends soon.
	minimizeFor := time.Duration(envInt(t, "KCACHE_DIFF_MINIMIZE_S", 40)) * time.Second
	var mu sync.Mutex
	done := 0 // programs checked, for progress on long runs
	next := make(chan job)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				p := gentree.Generate(j.seed, ms[j.mode].classes)
				dir := filepath.Join(tmp, fmt.Sprintf("m%d-s%d", j.mode, j.seed))
				st := ""
				if probeEvery > 0 && j.seed%int64(probeEvery) == 0 {
					st = strace
				}
				o := checkProgram(clang, st, p, 0, dir)
				os.RemoveAll(dir)
				mu.Lock()
				counts[j.mode][o.v]++
				if done++; done%1000 == 0 {
					t.Logf("%d of %d programs, %v", done, len(jobs), time.Since(start).Round(time.Second))
				}
				switch o.v {
				case failure, clash, unseen:
					seeds[j.mode] = append(seeds[j.mode], j.seed)
					if len(found[j.mode]) < keep {
						found[j.mode] = append(found[j.mode], finding{p, o, st})
					}
					for _, f := range o.missed {
						missedFiles[j.mode][filepath.Base(f)]++
					}
				case rejected, scanErr:
					if rejects[j.mode] == "" {
						rejects[j.mode] = fmt.Sprintf("seed %d: %s", j.seed, o.detail)
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		if !stopAt.IsZero() && time.Now().After(stopAt) {
			t.Logf("KCACHE_DIFF_FOR is up: stopping after %d of %d programs", done, len(jobs))
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	t.Logf("%d programs in %v", done, time.Since(start).Round(time.Millisecond))

	// The table, one row per mode.
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %8s", "classes", "programs")
	for _, name := range verdictNames {
		fmt.Fprintf(&b, " %9s", name)
	}
	b.WriteString("  failing seeds\n")
	failed := 0
	for i, m := range ms {
		total := 0
		for _, c := range counts[i] {
			total += c
		}
		ms[i].n = total // fewer than asked where KCACHE_DIFF_FOR stopped the run
		fmt.Fprintf(&b, "%-16s %8d", m.name, total)
		for _, c := range counts[i] {
			fmt.Fprintf(&b, " %9d", c)
		}
		s := seeds[i]
		slices.Sort(s)
		if len(s) > 0 {
			fmt.Fprintf(&b, "  %v", s[:min(len(s), 8)])
		}
		b.WriteString("\n")
		failed += counts[i][failure] + counts[i][clash] + counts[i][unseen]
	}
	t.Logf("differential results (seeds from %d):\n%s", seed0, b.String())
	for i, m := range ms {
		if rejects[i] != "" {
			t.Logf("%s: %d programs clang rejected or the scanner failed on; first: %s", m.name, counts[i][rejected]+counts[i][scanErr], firstLine(rejects[i]))
		}
		if counts[i][scanErr] > 0 {
			t.Errorf("%s: %d scanner errors: %s", m.name, counts[i][scanErr], firstLine(rejects[i]))
		}
	}
	if failed == 0 {
		return
	}

	// Reproducers: the first failures of each mode, minimized.
	out := os.Getenv("KCACHE_DIFF_OUT")
	if out == "" {
		out = filepath.Join(os.TempDir(), "kcache-difftest-"+time.Now().UTC().Format("20060102-150405"))
	}
	attributed := map[string]int{}
	deadline := time.Now().Add(minimizeFor)
	for i, m := range ms {
		for _, f := range found[i] {
			dir, classes := minimizeAndWrite(t, clang, f, out, m.name, deadline)
			attributed[classes]++
			t.Logf("%s seed %d: missed %v; minimized reproducer (classes %s) in %s", m.name, f.p.Seed, f.o.missed, classes, dir)
		}
		if bad := counts[i][failure] + counts[i][clash] + counts[i][unseen]; bad > 0 {
			var files []string
			for f, n := range missedFiles[i] {
				files = append(files, fmt.Sprintf("%s×%d", f, n))
			}
			sort.Strings(files)
			report := t.Errorf
			if os.Getenv("KCACHE_DIFF_LOG_ONLY") == "1" {
				report = t.Logf
			}
			report("%s: %d of %d programs read files the scanner missed, keyed two files under one name or probed places the key does not hold (replay: KCACHE_DIFF_REPLAY=%d/%s); missed names: %s",
				m.name, bad, m.n, seeds[i][0], m.classes, strings.Join(files[:min(len(files), 12)], " "))
		}
	}
	t.Logf("reproducers in %s; minimized failures by the classes left in them: %v", out, attributed)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// replay runs one program (SEED/CLASSES), keeps its tree and logs the
// comparison.
func replay(t *testing.T, clang, spec string) {
	seedText, list, _ := strings.Cut(spec, "/")
	seed, err := strconv.ParseInt(seedText, 10, 64)
	if err != nil {
		t.Fatalf("KCACHE_DIFF_REPLAY=%q: want SEED/CLASSES", spec)
	}
	set, err := gentree.ParseSet(list)
	if err != nil {
		t.Fatal(err)
	}
	p := gentree.Generate(seed, set)
	dir := os.Getenv("KCACHE_DIFF_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, fmt.Sprintf("replay-s%d", seed))
	os.RemoveAll(dir)
	strace, _ := exec.LookPath("strace")
	o := checkProgram(clang, strace, p, 0, dir)
	t.Logf("%s\n%s: missed %v %s\ntree in %s", p.Describe(), verdictNames[o.v], o.missed, o.detail, dir)
	for _, d := range o.trace {
		t.Logf("  %-18s %s (%s)", d.Rule, d.Path, d.Name)
	}
	if o.v == failure || o.v == clash || o.v == unseen || o.v == scanErr {
		t.Errorf("%s", verdictNames[o.v])
	}
}

// minimizeAndWrite shrinks a failing program while it still fails (first
// turning lexical classes off, then deleting lines, halves first, then
// empty files) until deadline, writes it under out, and returns its
// directory and the classes it still holds.
func minimizeAndWrite(t *testing.T, clang string, f finding, out, modeName string, deadline time.Time) (string, string) {
	tmp := t.TempDir()
	evals := 0
	budget := 120
	fails := func(p *gentree.Program, off gentree.Set) (outcome, bool) {
		evals++
		if time.Now().After(deadline) {
			budget = 0 // the rest is written as it stands
			return outcome{}, false
		}
		dir := filepath.Join(tmp, strconv.Itoa(evals))
		o := checkProgram(clang, f.strace, p, off, dir)
		os.RemoveAll(dir)
		return o, o.v == f.o.v
	}
	p, off, o := f.p, gentree.Set(0), f.o
	for _, c := range p.Classes.List() {
		if c.Lexical() && evals < budget {
			if o2, ok := fails(p, off.With(c)); ok {
				off, o = off.With(c), o2
			}
		}
	}
	ids := p.LineIDs()
	for chunk := len(ids) / 2; chunk >= 1 && evals < budget; chunk /= 2 {
		for i := 0; i < len(ids) && evals < budget; {
			end := min(i+chunk, len(ids))
			drop := map[int]bool{}
			for _, id := range ids[i:end] {
				drop[id] = true
			}
			q := p.WithoutLines(drop)
			if o2, ok := fails(q, off); ok {
				p, o = q, o2
				ids = slices.Delete(ids, i, end)
			} else {
				i = end
			}
		}
	}
	if empty := p.EmptyFiles(); len(empty) > 0 && evals < budget {
		all := map[string]bool{}
		for _, f := range empty {
			all[f] = true
		}
		if q := p.WithoutEmptyFiles(all); evals < budget {
			if o2, ok := fails(q, off); ok {
				p, o = q, o2
			} else {
				for _, f := range empty {
					if evals >= budget {
						break
					}
					q := p.WithoutEmptyFiles(map[string]bool{f: true})
					if o2, ok := fails(q, off); ok {
						p, o = q, o2
					}
				}
			}
		}
	}
	// Attribution: the lexical classes still on, and the classes of the
	// lines left.
	var classes []string
	for _, c := range p.Classes.List() {
		if c != gentree.Base && ((c.Lexical() && !off.Has(c)) || (!c.Lexical() && p.LineClasses().Has(c))) {
			classes = append(classes, c.String())
		}
	}
	if len(classes) == 0 {
		classes = []string{"base"}
	}
	attr := strings.Join(classes, "+")
	dir := filepath.Join(out, fmt.Sprintf("%s-seed%d", modeName, f.p.Seed))
	os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	// Checked once more where it stays, so the trace names its files
	// (and clang.d, strace.txt lie beside it).
	if o2 := checkProgram(clang, f.strace, p, off, dir); o2.v != rejected && o2.v != scanErr {
		o = o2
	}
	run := clangRun{clang: "clang-15", wd: root, options: p.OptionString(root), main: filepath.Join(root, p.Main)}
	var b strings.Builder
	fmt.Fprintf(&b, "A file clang reads that the kcache scanner misses (issue 17, differential test).\n\n")
	fmt.Fprintf(&b, "%s", p.Describe())
	fmt.Fprintf(&b, "lexical classes turned off while minimizing: %s\nclasses left: %s\n", off, attr)
	fmt.Fprintf(&b, "regenerate the unminimized program: KCACHE_DIFF_REPLAY=%d/%s go test ./deps -run TestDifferentialClang -v\n\n", f.p.Seed, f.p.Classes)
	fmt.Fprintf(&b, "clang, in root/ (PoCL's -I. first):\n  %s\n\n", shellJoin(run.command("/dev/stdout")))
	fmt.Fprintf(&b, "build options as the application passes them: %s\n\n", p.OptionString(root))
	fmt.Fprintf(&b, "missed: %v\n\nscanner trace:\n", o.missed)
	for _, d := range o.trace {
		fmt.Fprintf(&b, "  %-20s %s (%s)\n", d.Rule, d.Path, d.Name)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.txt"), []byte(b.String()), 0o644); err != nil {
		t.Errorf("writing the reproducer: %v", err)
	}
	return dir, attr
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./=:,+-]+$`)

func shellJoin(args []string) string {
	var out []string
	for _, a := range args {
		if shellSafe.MatchString(a) {
			out = append(out, a)
		} else {
			out = append(out, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
	}
	return strings.Join(out, " ")
}
