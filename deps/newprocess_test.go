package deps

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// TestNewProcessHit measures a new process's first hit end to end on
// the CPU side alone (no compiler, no device), the work a CUDA warm
// start does before the driver: open the disk tier, compute a key over
// a CUB-sized tree from its dependency record, and read a CUB-sized
// entry. Each phase is this test binary run again; the floor is the
// least an exact cache could do in a new process, the same stats in
// parallel and a read of the binary from a plain file. It reports, it
// does not judge: KCACHE_NEWPROC_MEASURE=N runs N rounds, hit and floor
// interleaved, and logs each phase's median; KCACHE_NEWPROC_HEADERS=N
// makes the tree N headers (650 by default).
func TestNewProcessHit(t *testing.T) {
	if raw := os.Getenv(newProcEnv); raw != "" {
		newProcChild(t, raw)
		return
	}
	rounds := 0
	fmt.Sscan(os.Getenv("KCACHE_NEWPROC_MEASURE"), &rounds)
	if rounds == 0 {
		t.Skip("a measurement: set KCACHE_NEWPROC_MEASURE=N")
	}
	headers := newProcHeaders
	fmt.Sscan(os.Getenv("KCACHE_NEWPROC_HEADERS"), &headers)
	_, in, paths := recordBenchTree(t, headers)
	job := newProcJob{Cache: t.TempDir(), In: in, Dir: t.TempDir()}
	settle(t, in.WorkDir)
	if err := os.WriteFile(filepath.Join(job.Dir, "paths"), []byte(strings.Join(paths, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runNewProc(t, job, "prime"); r.Outcome != kcache.OutcomeBuilt.String() {
		t.Fatalf("prime: outcome %s", r.Outcome)
	}
	phases := map[string][]newProcResult{}
	for range rounds {
		for _, ph := range []string{"hit", "floor"} {
			r := runNewProc(t, job, ph)
			if ph == "hit" && (r.Outcome != kcache.OutcomeDisk.String() || r.Reads != 0) {
				t.Fatalf("hit: outcome %s, %d headers read: the record was not used", r.Outcome, r.Reads)
			}
			phases[ph] = append(phases[ph], r)
		}
	}
	hit, floor := medianResult(phases["hit"]), medianResult(phases["floor"])
	t.Logf("%d files stat'd, a %d KiB entry; medians of %d rounds", len(paths), newProcEntrySize>>10, rounds)
	t.Logf("hit:   %s", mustJSON(hit))
	t.Logf("floor: %s", mustJSON(floor))
	t.Logf("hit/floor %.2fx", hit.Total/floor.Total)
}

// The size of TestNewProcessHit's case: the files of a CUB block-reduce
// kernel's key, and its CUBIN.
const (
	newProcHeaders   = 650
	newProcEntrySize = 200 << 10
)

// newProcEnv carries a newProcJob to a child of TestNewProcessHit.
const newProcEnv = "KCACHE_DEPS_NEWPROC_CHILD"

// newProcJob is what a child of TestNewProcessHit works on.
type newProcJob struct {
	Cache string // the disk tier
	In    Input
	Dir   string // the floor's binary and the list of paths to stat
	Phase string
}

// newProcResult is one child's figures, in milliseconds from the start
// of its work (the process, the runtime and the test framework already
// started).
type newProcResult struct {
	Phase   string
	Outcome string  `json:",omitempty"`
	Reads   int     `json:",omitempty"`
	Open    float64 // the disk tier and the cache opened
	Key     float64 // the stats done, the key prepared
	Total   float64 // the entry read and checked
	// KeyFaults counts the page faults of the key's part (the process's
	// minor faults, every thread's): a new process's heap is fresh
	// memory, and on a virtual machine a first touch of a page can cost
	// as much as a stat.
	KeyFaults float64
}

func runNewProc(t *testing.T, job newProcJob, phase string) newProcResult {
	t.Helper()
	job.Phase = phase
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNewProcessHit$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), newProcEnv+"="+string(raw))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", phase, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "NEWPROC "); ok {
			var r newProcResult
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("%s reported nothing:\n%s", phase, out)
	return newProcResult{}
}

// newProcChild is one phase of TestNewProcessHit.
func newProcChild(t *testing.T, raw string) {
	var job newProcJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		t.Fatal(err)
	}
	var r newProcResult
	if job.Phase == "floor" {
		r = newProcFloor(t, job)
	} else {
		r = newProcHit(t, job)
	}
	r.Phase = job.Phase
	fmt.Println("NEWPROC " + mustJSON(r))
}

// newProcHit opens the cache, keys the input and looks the key up; the
// prime phase stores an entry under it.
func newProcHit(t *testing.T, job newProcJob) newProcResult {
	ctx := context.Background()
	var r newProcResult
	start := time.Now()
	ms := func() float64 { return float64(time.Since(start).Nanoseconds()) / 1e6 }
	st, err := disk.Open(disk.Options{Dir: job.Cache})
	if err != nil {
		t.Fatal(err)
	}
	c := kcache.New(kcache.Config{}, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	s := NewScanner(nil, WithRecords(c))
	read := s.fs.readFile
	s.fs.readFile = func(p string) ([]byte, error) { r.Reads++; return read(p) }
	r.Open = ms()
	faults := minorFaults()
	// As the cuda and opencl caches key: the headers alone.
	headers, err := s.AppendHeaders(ctx, nil, job.In)
	if err != nil {
		t.Fatal(err)
	}
	key := &kcache.Key{Image: kcache.Image{Format: "test", Source: job.In.Source, Headers: headers}}
	p := key.Prepare()
	r.Key = ms()
	r.KeyFaults = minorFaults() - faults
	res, pending, err := c.LookupPrepared(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	r.Total = ms()
	if pending != nil {
		bin := make([]byte, newProcEntrySize)
		rand.Read(bin)
		pending.Commit(ctx, bin, time.Second)
		if err := os.WriteFile(filepath.Join(job.Dir, "bin"), bin, 0o644); err != nil {
			t.Fatal(err)
		}
		s.writes.Wait()
		r.Outcome = kcache.OutcomeBuilt.String()
		return r
	}
	if len(res.Binary) != newProcEntrySize {
		t.Fatalf("entry of %d bytes", len(res.Binary))
	}
	r.Outcome = res.Outcome.String()
	return r
}

// newProcFloor stats the paths the key holds, in parallel, and reads
// the binary from a plain file.
func newProcFloor(t *testing.T, job newProcJob) newProcResult {
	list, err := os.ReadFile(filepath.Join(job.Dir, "paths"))
	if err != nil {
		t.Fatal(err)
	}
	paths := strings.Split(string(list), "\n")
	start := time.Now()
	ms := func() float64 { return float64(time.Since(start).Nanoseconds()) / 1e6 }
	faults := minorFaults()
	statAll(paths)
	r := newProcResult{Key: ms(), KeyFaults: minorFaults() - faults}
	if _, err := os.ReadFile(filepath.Join(job.Dir, "bin")); err != nil {
		t.Fatal(err)
	}
	r.Total = ms()
	return r
}

// medianResult takes the median of each figure on its own.
func medianResult(rs []newProcResult) newProcResult {
	med := func(f func(newProcResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return newProcResult{
		Open:      med(func(r newProcResult) float64 { return r.Open }),
		Key:       med(func(r newProcResult) float64 { return r.Key }),
		Total:     med(func(r newProcResult) float64 { return r.Total }),
		KeyFaults: med(func(r newProcResult) float64 { return r.KeyFaults }),
	}
}

// minorFaults returns the process's minor page faults so far.
func minorFaults() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Minflt)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
