package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSpecializeRebuildOfOtherHeaders: `kcache build --specialize` on a
// cached entry builds the source again and replaces the entry of the key
// it computed. The build read the header as it was then, edited since the
// key (SCALE 1 to SCALE 7): the entry of SCALE 1's key was replaced by a
// build of SCALE 7's header. The rebuild is now taken only where its own
// key is the entry's and its files held through it; here it is refused,
// and the entry stays.
//
// It runs in a child process of the test binary: PoCL reads POCL_CACHE_DIR
// and POCL_KERNEL_CACHE once per process, and later tests of this one set
// their own.
func TestSpecializeRebuildOfOtherHeaders(t *testing.T) {
	requireOpenCL(t)
	const child = "KCACHE_TEST_SPECIALIZE_CHILD"
	if os.Getenv(child) == "" {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v")
		cmd.Env = append(os.Environ(), child+"="+dir, "KCACHE_DIR="+filepath.Join(dir, "cache"),
			"POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR="+filepath.Join(dir, "pocl"))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("in a child process: %v\n%s", err, out)
		}
		return
	}
	dir := os.Getenv(child)
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	header := filepath.Join(src, "scale.h")
	if err := os.WriteFile(header, []byte("#define SCALE 1.0f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(src, "k.cl")
	code := []byte("#include \"scale.h\"\n__kernel void scale(__global float *v) { v[get_global_id(0)] *= SCALE; }\n")
	if err := os.WriteFile(file, code, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the files' ctimes settle, as after any edit
	ctx := context.Background()
	sess, err := openSession(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	s := fileSource(file, code, buildInput{})
	p, err := sess.cache.Program(ctx, sess.dev, s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	p.Commit(ctx)
	key, err := sess.cache.Key(sess.dev, s)
	if err != nil {
		t.Fatal(err)
	}
	old, err := sess.bins.Get(ctx, key)
	if err != nil {
		t.Fatalf("the first build was not stored: %v", err)
	}
	if err := os.WriteFile(header, []byte("#define SCALE 7.0f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // settled: the rebuild stores, under SCALE 7's key
	added, err := specializeEntry(ctx, sess, p, key, s, "8-1-1")
	if err == nil {
		t.Errorf("specialized with a build of the edited header (added %v), want a refusal", added)
	}
	now, err := sess.bins.Get(ctx, key)
	if err != nil || !bytes.Equal(now.Binary, old.Binary) {
		t.Fatalf("the entry of SCALE 1's key was replaced (%v): with a build of SCALE 7's header", err)
	}
}
