package disk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// testKey returns the i-th distinct test key.
func testKey(i int) *kcache.Key {
	return &kcache.Key{
		Device:   kcache.Device{Platform: "test platform", Name: "test device", Version: "OpenCL 3.0", Driver: "1.0"},
		Compiler: kcache.Compiler{Name: "fake", Version: "1"},
		Image: kcache.Image{
			Format:  "opencl-c",
			Source:  fmt.Appendf(nil, "kernel void k%d(global int *p) { p[0] = %d; }", i, i),
			Headers: []kcache.Header{kcache.HeaderOf("common.h", []byte("#define N 1"))},
		},
		Spec:    []kcache.SpecConstant{{ID: 1, Value: []byte{byte(i)}}},
		Options: kcache.BuildOptions{Compile: "-cl-std=CL3.0", Env: []kcache.EnvVar{{Name: "FAKE_OPT", Value: "1"}}},
	}
}

// keyIndex recovers i from a key made by testKey.
func keyIndex(k *kcache.Key) int {
	var i int
	fmt.Sscanf(string(k.Image.Source), "kernel void k%d(", &i)
	return i
}

// testBinary returns a deterministic binary of n bytes for key i.
func testBinary(i, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(i))
	h := sha256.Sum256(seed[:])
	for len(out) < n {
		out = append(out, h[:]...)
		h = sha256.Sum256(h[:])
	}
	return out[:n]
}

// testClock is a settable clock for Options.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock {
	return &testClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openTest opens a store in a fresh directory unless opts names one. It
// skips fsync: the tests kill processes, not machines.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "cache")
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.sync = false
	// Registered after the directory's own cleanup, so it runs first: the
	// background work must be done before the directory goes.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.Close(ctx)
	})
	return s
}

func mustPut(t testing.TB, s *Store, i, n int) {
	t.Helper()
	if err := s.Put(context.Background(), testKey(i), kcache.Entry{Binary: testBinary(i, n), BuildTime: time.Duration(i) * time.Millisecond}); err != nil {
		t.Fatalf("Put(%d): %v", i, err)
	}
}

// checkGet asserts that key i is a hit with the right binary.
func checkGet(t testing.TB, s *Store, i, n int) {
	t.Helper()
	e, err := s.Get(context.Background(), testKey(i))
	if err != nil {
		t.Fatalf("Get(%d): %v", i, err)
	}
	if !bytes.Equal(e.Binary, testBinary(i, n)) {
		t.Fatalf("Get(%d): wrong binary (%d bytes)", i, len(e.Binary))
	}
}

// isHit reports whether key i is a hit; a hit with wrong bytes fails t.
func isHit(t testing.TB, s *Store, i, n int) bool {
	t.Helper()
	e, err := s.Get(context.Background(), testKey(i))
	if err != nil {
		if !errors.Is(err, kcache.ErrMiss) {
			t.Fatalf("Get(%d): error does not wrap ErrMiss: %v", i, err)
		}
		return false
	}
	if !bytes.Equal(e.Binary, testBinary(i, n)) {
		t.Fatalf("Get(%d): WRONG BINARY served (%d bytes)", i, len(e.Binary))
	}
	return true
}

// fileState is what a snapshot records of one file.
type fileState struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

// snapshot records every file and directory under dir.
func snapshot(t testing.TB, dir string) map[string]fileState {
	t.Helper()
	m := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m[p] = fileState{info.Size(), info.ModTime(), info.Mode()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// files lists the paths under dir whose base name matches pattern.
func files(t testing.TB, dir, pattern string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if ok, _ := filepath.Match(pattern, d.Name()); ok {
				out = append(out, p)
			}
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// entrySize is what entry i with an n-byte binary occupies on disk.
func entrySize(t testing.TB, s *Store, i int) int64 {
	t.Helper()
	var size int64 = -1
	want := s.leafDir(s.digests(testKey(i)))
	s.Walk(context.Background(), func(in Info) error {
		if in.Dir == want {
			size = in.Size
		}
		return nil
	})
	if size < 0 {
		t.Fatalf("entry %d not found", i)
	}
	return size
}

// walkSum sums Walk's sizes of sound entries and counts them.
func walkSum(t testing.TB, s *Store) (n int, total int64) {
	t.Helper()
	settle(t, s)
	err := s.Walk(context.Background(), func(in Info) error {
		if in.OK() {
			n++
		}
		total += in.Size
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, total
}

func writeRaw(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// settle waits until the store's background work is done.
func settle(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if err := s.wait(ctx); err != nil {
			t.Fatalf("background work still running: %v", err)
		}
		s.bg.mu.Lock()
		running := s.bg.running
		s.bg.mu.Unlock()
		if !running {
			return
		}
	}
}

// shardOf returns the shard of test key i.
func shardOf(s *Store, i int) int { return idFor(s.digests(testKey(i))).shard() }

// putSettled puts entry i and waits for the background work it started,
// for tests that move the clock and need each pass to run at its time.
func putSettled(t testing.TB, s *Store, i, n int) {
	t.Helper()
	mustPut(t, s, i, n)
	settle(t, s)
}

// putLegacy writes key i's entry as version 1 of the format wrote it: a
// record (recordVersion) in <n>.src and the binary in <n>.bin beside it,
// so that tests check what a cache written before entry version 2 holds
// is still read, checked and evicted. Totals are not updated: tests that
// count call settle or Verify.
func putLegacy(t testing.TB, s *Store, i, n int) {
	t.Helper()
	key, _ := testKey(i).MarshalBinary()
	bin := testBinary(i, n)
	raw := newRawRecord(key, bin, time.Duration(i)*time.Millisecond, s.now())
	leaf := s.leafDir(s.digests(testKey(i)))
	if err := os.MkdirAll(leaf, privateModes.dir); err != nil {
		t.Fatal(err)
	}
	writeRaw(t, binPath(leaf, 0), bin)
	writeRaw(t, srcPath(leaf, 0), raw.marshal())
}

// binaryOffset returns where the binary starts in the version 2 entry
// file at path.
func binaryOffset(t testing.TB, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, bin, err := parseEntry(data)
	if err != nil || !raw.embedded {
		t.Fatalf("%s: not an entry of version 2: %v", path, err)
	}
	return len(data) - len(bin)
}
