package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// result is what a kcache process did.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the CLI with args on the cache under dir.
func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runCmd(t, kcacheCmd(t, dir, args...))
}

func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// runJSONOut runs the CLI, requires exit status 0, and decodes its stdout
// into v.
func runJSONOut(t *testing.T, dir string, v any, args ...string) {
	t.Helper()
	r := run(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("kcache %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("kcache %s: %v: %q", strings.Join(args, " "), err, r.stdout)
	}
}

// testStore opens the cache that kcacheCmd(t, dir) uses, from this process.
func testStore(t *testing.T, dir string) *disk.Store {
	t.Helper()
	st, err := disk.Open(disk.Options{Dir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// fakeKey returns a key as a device named dev would have for kernel i.
func fakeKey(dev string, i int) *kcache.Key {
	return &kcache.Key{
		Device:   kcache.Device{Platform: "Fake Platform", Name: dev, Version: "OpenCL 3.0", Driver: "9.9"},
		Compiler: kcache.Compiler{Name: "fake", Version: "1"},
		Image:    kcache.Image{Format: "opencl-c", Source: fmt.Appendf(nil, "__kernel void k%d(__global int *p) { p[0] = %d; }\n", i, i)},
		Options:  kcache.BuildOptions{Compile: fmt.Sprintf("-DN=%d", i)},
	}
}

// putFakes stores n small entries for device dev, the i-th with a binary of
// 100*(i+1) bytes, and returns their IDs.
func putFakes(t *testing.T, st *disk.Store, dev string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		k := fakeKey(dev, i)
		bin := bytes.Repeat([]byte{byte(i)}, 100*(i+1))
		if err := st.Put(context.Background(), k, kcache.Entry{Binary: bin, BuildTime: time.Duration(i+1) * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, k.Digest().String())
	}
	return ids
}

// ambiguousPrefix returns a one-digit prefix that several ids share.
func ambiguousPrefix(t *testing.T, ids []string) string {
	seen := map[byte]bool{}
	for _, id := range ids {
		if seen[id[0]] {
			return id[:1]
		}
		seen[id[0]] = true
	}
	t.Fatal("no shared first digit among the IDs")
	return ""
}

func TestListShowStats(t *testing.T) {
	dir := t.TempDir()
	st := testStore(t, dir)
	ids := putFakes(t, st, "Fake GPU", 20)
	putFakes(t, st, "Other GPU", 1)

	var stats statsJSON
	runJSONOut(t, dir, &stats, "stats", "--json")
	if stats.Entries != 21 || stats.Dir != st.Dir() || len(stats.Devices) != 2 || stats.Devices[0].Entries != 20 ||
		stats.Devices[0].Device != "Fake GPU (9.9)" || stats.MaxSize != 8<<30 {
		t.Errorf("stats %+v", stats)
	}
	var sum int64
	for _, d := range stats.Devices {
		sum += d.Bytes
	}
	if sum != stats.Bytes {
		t.Errorf("devices hold %d bytes, total %d", sum, stats.Bytes)
	}

	var all, fake, big, old []entryJSON
	runJSONOut(t, dir, &all, "ls", "--json", "--sort", "size")
	runJSONOut(t, dir, &fake, "ls", "--json", "--device", "fake gpu")
	runJSONOut(t, dir, &big, "ls", "--json", "--larger-than", "1KiB")
	runJSONOut(t, dir, &old, "ls", "--json", "--older-than", "1h")
	if len(all) != 21 || len(fake) != 20 || len(old) != 0 {
		t.Fatalf("ls: %d entries, %d for the fake GPU, %d old", len(all), len(fake), len(old))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Size > all[i-1].Size {
			t.Fatalf("--sort size: %d bytes after %d", all[i].Size, all[i-1].Size)
		}
	}
	for _, e := range big {
		if e.Size <= 1024 {
			t.Errorf("--larger-than 1KiB listed %d bytes", e.Size)
		}
	}
	if len(big) == 0 || len(big) == len(all) {
		t.Errorf("--larger-than 1KiB kept %d of %d", len(big), len(all))
	}
	if e := all[0]; e.ID != ids[19] || e.Device != "Fake GPU" || e.BinarySize != 2000 || e.Options != "-DN=19" ||
		len(e.Kernels) != 1 || e.Kernels[0] != "k19" || e.BuildMS != 20 || e.Compiler != "fake 1" {
		t.Errorf("largest entry %+v", e)
	}

	var show showJSON
	runJSONOut(t, dir, &show, "show", "--json", ids[3][:12])
	if show.ID != ids[3] || show.BinarySize != 400 || len(show.SHA256) != 64 || !strings.Contains(show.Source, "k3(") ||
		show.Platform != "Fake Platform" || show.DeviceVersion != "OpenCL 3.0" {
		t.Errorf("show %+v", show)
	}
	human := run(t, dir, "show", ids[3][:12])
	if human.code != 0 || !strings.Contains(human.stdout, ids[3]) || !strings.Contains(human.stdout, "-DN=3") {
		t.Errorf("show: %+v", human)
	}
}

func TestBadIDsAndUsage(t *testing.T) {
	dir := t.TempDir()
	ids := putFakes(t, testStore(t, dir), "Fake GPU", 20)
	amb := ambiguousPrefix(t, ids)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ambiguous", []string{"show", amb}, 2, "ambiguous"},
		{"unknown", []string{"show", "0000000000000000000000000000000000000000000000000000000000000000"[:20]}, 1, "kcache ls"},
		{"not hex", []string{"show", "xyz"}, 2, "not an entry ID"},
		{"no ID", []string{"show"}, 2, "accepts 1 arg"},
		{"two IDs", []string{"show", ids[0], ids[1]}, 2, "accepts 1 arg"},
		{"bad sort", []string{"ls", "--sort", "age"}, 2, "want used, size or built"},
		{"bad size", []string{"ls", "--larger-than", "lots"}, 2, "larger-than"},
		{"bad age", []string{"prune", "--older-than", "soon"}, 2, "older-than"},
		{"unknown flag", []string{"stats", "--frobnicate"}, 2, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"extra argument", []string{"stats", "now"}, 2, `stats takes no arguments, got "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, dir, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", r.code, r.stderr, tt.code, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("error wrote to stdout: %q", r.stdout)
			}
		})
	}
	// The ambiguity error names the entries it could mean.
	if r := run(t, dir, "show", amb); strings.Count(r.stderr, amb) < 3 {
		t.Errorf("ambiguity does not list the candidates: %q", r.stderr)
	}
}

// TestMissingPlatformExitsOne: no OpenCL platform is a failure of the
// command, not a mistake in its command line.
func TestMissingPlatformExitsOne(t *testing.T) {
	dir := t.TempDir()
	cmd := kcacheCmd(t, dir, "build", writeKernel(t, dir))
	vendors := t.TempDir() // an ICD directory naming no driver
	cmd.Env = append(cmd.Env, "OCL_ICD_VENDORS="+vendors, "OCL_ICD_FILENAMES=")
	r := runCmd(t, cmd)
	if r.code != 1 || r.stderr == "" {
		t.Errorf("exit %d, stderr %q; want 1 and a message", r.code, r.stderr)
	}
}

func TestVerifyRepair(t *testing.T) {
	dir := t.TempDir()
	st := testStore(t, dir)
	ids := putFakes(t, st, "Fake GPU", 5)
	var v verifyJSON
	runJSONOut(t, dir, &v, "verify", "--json")
	if v.Checked != 5 || v.OK != 5 || v.Corrupt != 0 || v.Repaired != 0 {
		t.Fatalf("clean cache: %+v", v)
	}
	// Flip one byte of a binary: same size, wrong checksum.
	in, err := st.Find(context.Background(), ids[2])
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := os.ReadFile(in.BinaryPath())
	bin[len(bin)/2] ^= 0x40
	os.WriteFile(in.BinaryPath(), bin, 0o600)

	r := run(t, dir, "verify", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 1 {
		t.Fatalf("exit %d, %v: %q", r.code, err, r.stdout)
	}
	if v.Checked != 5 || v.OK != 4 || v.Corrupt != 1 || v.Repaired != 0 || len(v.Problems) != 1 ||
		v.Problems[0].Path != in.RecordPath() || !strings.Contains(v.Problems[0].Error, "checksum") {
		t.Errorf("damaged cache: %+v", v)
	}
	if r := run(t, dir, "verify"); r.code != 1 || !strings.Contains(r.stderr, "verify --repair") {
		t.Errorf("human verify: exit %d, stderr %q", r.code, r.stderr)
	}
	runJSONOut(t, dir, &v, "verify", "--repair", "--json")
	if v.Corrupt != 1 || v.Repaired != 1 {
		t.Errorf("repair: %+v", v)
	}
	runJSONOut(t, dir, &v, "verify", "--json")
	if v.Checked != 4 || v.OK != 4 || v.Corrupt != 0 {
		t.Errorf("after repair: %+v", v)
	}
}

func TestPruneAndClear(t *testing.T) {
	dir := t.TempDir()
	st := testStore(t, dir)
	ids := putFakes(t, st, "Fake GPU", 6)
	var p pruneJSON
	runJSONOut(t, dir, &p, "prune", "--dry-run", "--max-size", "1B", "--json")
	if !p.DryRun || p.Removed != 6 || p.Entries != 0 || len(p.IDs) != 6 {
		t.Fatalf("dry run: %+v", p)
	}
	var ls []entryJSON
	runJSONOut(t, dir, &ls, "ls", "--json")
	if len(ls) != 6 {
		t.Fatalf("dry run removed entries: %d left", len(ls))
	}
	// Age the first three by their access time (the record's mtime).
	old := time.Now().Add(-48 * time.Hour)
	for _, id := range ids[:3] {
		in, _ := st.Find(context.Background(), id)
		os.Chtimes(in.RecordPath(), old, old)
	}
	runJSONOut(t, dir, &p, "prune", "--older-than", "1d", "--json")
	if p.DryRun || p.Removed != 3 || p.Entries != 3 || strings.Join(sorted(p.IDs), ",") != strings.Join(sorted(ids[:3]), ",") {
		t.Errorf("prune --older-than: %+v", p)
	}
	var stats statsJSON
	runJSONOut(t, dir, &stats, "stats", "--json")
	if stats.Entries != 3 || stats.Counters.Evictions != 3 || stats.Counters.EvictedBytes != p.Freed {
		t.Errorf("after prune: %+v", stats)
	}
	var c clearJSON
	runJSONOut(t, dir, &c, "clear", "--json")
	if c.Freed != stats.Bytes {
		t.Errorf("clear freed %d, cache held %d", c.Freed, stats.Bytes)
	}
	runJSONOut(t, dir, &stats, "stats", "--json")
	if stats.Entries != 0 || stats.Bytes != 0 || stats.Counters.Evictions != 3 {
		t.Errorf("after clear: %+v", stats)
	}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestCountersAcrossProcesses runs builds in several processes at once and
// after one another: the persistent counters add up to every lookup made.
func TestCountersAcrossProcesses(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	file := writeKernel(t, dir)
	const cold, warm = 3, 2
	var wg sync.WaitGroup
	for range cold {
		wg.Go(func() {
			if r := run(t, dir, "build", "--options", "-DFACTOR=7", file); r.code != 0 {
				t.Errorf("build: %+v", r)
			}
		})
	}
	wg.Wait()
	for range warm {
		if r := run(t, dir, "build", "--options", "-DFACTOR=7", file, file); r.code != 0 {
			t.Errorf("build: %+v", r)
		}
	}
	var stats statsJSON
	runJSONOut(t, dir, &stats, "stats", "--json")
	c := stats.Counters
	// Every process's first lookup was a build or a disk hit (some after
	// waiting for the build); the warm processes' second lookup of the
	// same file was a memory hit.
	if c.Builds != 1 || c.Builds+c.DiskHits != cold+warm || c.Waited > cold-1 || c.MemoryHits != warm || c.FailedBuilds != 0 {
		t.Errorf("counters %+v; want %d lookups in all, %d memory hits", c, cold+warm, warm)
	}
	if c.Misses != c.Builds || c.DiskHits < warm || c.BuildTime <= 0 || c.SavedTime <= 0 {
		t.Errorf("counters %+v", c)
	}
	human := run(t, dir, "stats")
	if !strings.Contains(human.stdout, "hit rate") || !strings.Contains(human.stdout, "build time saved") {
		t.Errorf("stats:\n%s", human.stdout)
	}
	runJSONOut(t, dir, &stats, "stats", "--zero", "--json")
	runJSONOut(t, dir, &stats, "stats", "--json")
	if stats.Counters != (disk.Counters{}) || stats.Entries != 1 {
		t.Errorf("after --zero: %+v", stats)
	}
}

// TestTerminalOutput runs ls, as a command's run function, once as if on
// a terminal and once as if piped.
func TestTerminalOutput(t *testing.T) {
	dir := t.TempDir()
	ids := putFakes(t, testStore(t, dir), "Fake GPU", 3)
	t.Setenv("KCACHE_DIR", filepath.Join(dir, "cache"))
	for _, tty := range []bool{true, false} {
		var out, errOut bytes.Buffer
		io := &streams{out: &out, errOut: &errOut, tty: tty}
		if err := runLs(context.Background(), io, lsOptions{sort: "used"}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if tty {
			if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "KERNELS") {
				t.Fatalf("terminal: %q", out.String())
			}
			if strings.Contains(out.String(), ids[0]) || !strings.Contains(out.String(), ids[0][:shortID]) ||
				!strings.Contains(out.String(), "B ") {
				t.Errorf("terminal: want short IDs and human sizes: %q", out.String())
			}
			continue
		}
		if len(lines) != 3 || strings.Count(lines[0], "\t") != 6 || !strings.Contains(out.String(), ids[0]) {
			t.Errorf("piped: want 3 tab-separated lines with full IDs: %q", out.String())
		}
	}
}

// TestCompletion asks cobra's completion for entry IDs as a shell would.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	ids := putFakes(t, testStore(t, dir), "Fake GPU", 8)
	r := run(t, dir, "__complete", "show", ids[5][:3])
	if r.code != 0 || !strings.Contains(r.stdout, ids[5]+"\t") || !strings.Contains(r.stdout, "Fake GPU") {
		t.Errorf("completion: %+v", r)
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, ids[5][:3]) && strings.Contains(r.stdout, id) {
			t.Errorf("completion offered %s for prefix %s", id, ids[5][:3])
		}
	}
	if r := run(t, dir, "completion", "bash"); r.code != 0 || !strings.Contains(r.stdout, "kcache") {
		t.Errorf("completion bash: exit %d", r.code)
	}
}
