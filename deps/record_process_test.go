package deps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// The record tests across processes: each process is this test binary
// run again (TestRecordChild), with a Scanner over a kcache.Cache on a
// disk tier, as opencl, cuda and the layer configure theirs, and the real
// clock.

// childEnv carries a childJob to TestRecordChild.
const childEnv = "KCACHE_DEPS_RECORD_CHILD"

// childJob is what one child process does.
type childJob struct {
	Cache string // the disk tier's directory
	In    Input
	// Loop makes the child store its record over and over, after
	// printing childLooping, until it is killed.
	Loop bool
}

// childResult is what a child reports: its key and what it took.
type childResult struct {
	Headers             []kcache.Header
	Reads, Lists, Stats int64
	Err                 string
}

const (
	childResultPrefix = "RECORD-CHILD-RESULT "
	childLooping      = "RECORD-CHILD-LOOPING"
)

// TestRecordChild is the child process of the record tests.
func TestRecordChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("a child of the record process tests")
	}
	var job childJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(disk.Options{Dir: job.Cache})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	c := kcache.New(kcache.Config{}, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	s := NewScanner(nil, WithRecords(c))
	var r childResult
	read, list := s.fs.readFile, s.fs.readDir
	var mu sync.Mutex // stats run in parallel
	s.fs.stat = func(p string) (fs.FileInfo, error) { mu.Lock(); r.Stats++; mu.Unlock(); return os.Stat(p) }
	s.fs.readFile = func(p string) ([]byte, error) { r.Reads++; return read(p) }
	s.fs.readDir = func(p string) ([]os.DirEntry, error) { r.Lists++; return list(p) }
	ctx := context.Background()
	r.Headers, _, err = s.Scan(ctx, job.In)
	if err != nil {
		r.Err = err.Error()
	}
	s.writes.Wait() // a process that exits at once may lose its record; this one tests what it leaves
	if job.Loop {
		id := inputID(job.In, job.In.WorkDir)
		rec := encodeRecord(id, s.memos.get(id))
		os.Stdout.WriteString(childLooping + "\n")
		for {
			c.StoreRecord(ctx, id, rec)
		}
	}
	out, _ := json.Marshal(r)
	os.Stdout.WriteString(childResultPrefix + string(out) + "\n")
}

// child runs job in a new process and returns its result.
func child(t *testing.T, job childJob) childResult {
	t.Helper()
	out, err := childCmd(t, job).Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, childResultPrefix); ok {
			var r childResult
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			if r.Err != "" {
				t.Fatalf("child: %s", r.Err)
			}
			return r
		}
	}
	t.Fatalf("child reported nothing:\n%s", out)
	return childResult{}
}

func childCmd(t *testing.T, job childJob) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecordChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	return cmd
}

// settle waits until every file and directory under root is settled
// (older than a timestamp tick), as a file is once its writer is done:
// only then may a scan of it be recorded.
func settle(t *testing.T, root string) {
	t.Helper()
	var last time.Time
	window := fineTooNew
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		fi, err := os.Stat(p)
		if err != nil {
			return nil
		}
		id := identityOf(fi)
		if id.mtime%int64(time.Second) == 0 || id.ctime%int64(time.Second) == 0 {
			window = tooNew
		}
		if c := time.Unix(0, max(id.mtime, id.ctime)); c.After(last) {
			last = c
		}
		return nil
	})
	time.Sleep(time.Until(last.Add(window + 5*time.Millisecond)))
}

// freshKey is the key a Scanner without records or memory computes.
func freshKey(t *testing.T, in Input) []kcache.Header {
	t.Helper()
	h, _ := mustScan(t, NewScanner(nil), in)
	return h
}

// hitReadsNothing runs a child that must be served by the record.
func hitReadsNothing(t *testing.T, job childJob, want []kcache.Header) {
	t.Helper()
	r := child(t, job)
	if !slices.Equal(r.Headers, want) {
		t.Errorf("served key %v\nwant %v", r.Headers, want)
	}
	if r.Reads != 0 || r.Lists != 0 || r.Stats == 0 {
		t.Errorf("served by the record with %d reads, %d listings, %d stats; want stats only", r.Reads, r.Lists, r.Stats)
	}
}

// rescans runs a child that must not be served by the record, and must
// compute the exact key.
func rescans(t *testing.T, job childJob, stale []kcache.Header) {
	t.Helper()
	r := child(t, job)
	if want := freshKey(t, job.In); !slices.Equal(r.Headers, want) {
		t.Errorf("key %v\nwant %v", r.Headers, want)
	}
	if stale != nil && slices.Equal(r.Headers, stale) {
		t.Error("the key did not change")
	}
	if r.Reads == 0 {
		t.Error("the child read nothing: served by a record that no longer holds")
	}
}

func TestRecordAcrossProcesses(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a child")
	}
	// The tree expands __DATE__, and each subtest compares keys made in
	// several processes over seconds: run at midnight, a key made before
	// it differs from one made after (CI, 00:00 UTC). Midday in the zone
	// of __DATE__ keeps every key of the run on one day.
	middayZone(t)
	setup := func(t *testing.T) (string, childJob) {
		root, in := recordTree(t)
		settle(t, root)
		return root, childJob{Cache: t.TempDir(), In: in}
	}
	// record makes the first process scan and record, and checks that
	// the second reads nothing; it returns the key.
	record := func(t *testing.T, job childJob) []kcache.Header {
		t.Helper()
		first := child(t, job)
		want := freshKey(t, job.In)
		if !slices.Equal(first.Headers, want) || first.Reads == 0 {
			t.Fatalf("first process: key %v after %d reads\nwant %v", first.Headers, first.Reads, want)
		}
		hitReadsNothing(t, job, want)
		return want
	}
	t.Run("a new process reads no header", func(t *testing.T) {
		_, job := setup(t)
		record(t, job)
	})
	t.Run("edit of the same size with the mtime restored", func(t *testing.T) {
		root, job := setup(t)
		before := record(t, job)
		path := filepath.Join(root, "i2/c.h")
		fi, _ := os.Stat(path)
		write(t, path, "#define C 2\n")
		os.Chtimes(path, fi.ModTime(), fi.ModTime())
		settle(t, root)
		rescans(t, job, before)
		hitReadsNothing(t, job, freshKey(t, job.In))
	})
	t.Run("a file created in a place found empty", func(t *testing.T) {
		root, job := setup(t)
		before := record(t, job)
		a, _ := os.ReadFile(filepath.Join(root, "i2/a.h"))
		write(t, filepath.Join(root, "i1/a.h"), string(a)) // the same bytes, earlier in the search
		settle(t, root)
		rescans(t, job, before)
	})
	t.Run("a file created under a declared directory", func(t *testing.T) {
		root, job := setup(t)
		before := record(t, job)
		write(t, filepath.Join(root, "lib/x/three.cl"), "three\n")
		settle(t, root)
		rescans(t, job, before)
	})
	for _, damage := range []string{"truncated", "bit flip"} {
		t.Run("damaged record, "+damage, func(t *testing.T) {
			_, job := setup(t)
			want := record(t, job)
			n := damageFiles(t, job.Cache, damage)
			if n == 0 {
				t.Fatal("no record file found to damage")
			}
			rescans(t, job, nil)
			hitReadsNothing(t, job, want) // rewritten
		})
	}
	t.Run("concurrent processes write the same record", func(t *testing.T) {
		_, job := setup(t)
		want := freshKey(t, job.In)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := child(t, job); !slices.Equal(r.Headers, want) {
					t.Errorf("key %v\nwant %v", r.Headers, want)
				}
			}()
		}
		wg.Wait()
		hitReadsNothing(t, job, want)
	})
	t.Run("writer killed while storing", func(t *testing.T) {
		root, job := setup(t)
		want := freshKey(t, job.In)
		for range 6 {
			killWhileStoring(t, job)
		}
		r := child(t, job)
		if !slices.Equal(r.Headers, want) {
			t.Errorf("after the kills: key %v\nwant %v", r.Headers, want)
		}
		hitReadsNothing(t, job, want)
		// And the record, whatever the kills left, still follows an edit.
		write(t, filepath.Join(root, "i2/c.h"), "#define C 3\n")
		settle(t, root)
		rescans(t, job, want)
	})
}

// killWhileStoring starts a child that stores the record in a loop and
// kills it at a random moment of a write.
func killWhileStoring(t *testing.T, job childJob) {
	t.Helper()
	job.Loop = true
	cmd := childCmd(t, job)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != childLooping {
	}
	time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// damageFiles truncates, or flips a bit in, every file the disk tier
// under dir holds for its entries, and returns how many it damaged.
func damageFiles(t *testing.T, dir, how string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".src") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			return nil
		}
		switch how {
		case "truncated":
			data = data[:len(data)/2]
		default:
			data = bytes.Clone(data)
			data[len(data)/2] ^= 0x10
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
		return nil
	})
	return n
}

// middayZone sets TZ, for this process and the children it starts, to the
// whole-hour zone in which it is now nearest midday, where the system has
// the zone's file; __DATE__ is then the same day for the next hours.
func middayZone(t *testing.T) {
	offset := 12 - time.Now().UTC().Hour() // hours east of UTC
	name := "Etc/GMT"
	switch {
	case offset > 0:
		name += fmt.Sprintf("-%d", offset) // Etc/GMT-N lies east of UTC
	case offset < 0:
		name += fmt.Sprintf("+%d", -offset)
	}
	if _, err := os.Stat(filepath.Join("/usr/share/zoneinfo", name)); err != nil {
		t.Logf("no zone file %s (tzdata): TZ left as it is", name)
		return
	}
	t.Setenv("TZ", name)
}
