package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache/internal/killtest"
)

// stuckWriterEnv makes the test binary a process that writes a bundle
// through writeAtomically and stops in the middle, for the kill test.
const stuckWriterEnv = "KCACHE_TEST_STUCK_WRITER"

// stuckWriter writes half a bundle to file, says so on stdout, and waits
// to be killed.
func stuckWriter(file string) {
	writeAtomically(file, nil, func(w io.Writer) (int, error) {
		w.Write(make([]byte, 64<<10))
		fmt.Println("writing")
		select {}
	})
	os.Exit(1)
}

// TestKilledExportLeavesNothing kills a process in the middle of
// writeAtomically (kcache export's write) with SIGKILL: the directory
// holds what it held before, the earlier bundle untouched, and no
// temporary file.
func TestKilledExportLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cache.kcb")
	if err := os.WriteFile(file, []byte("the earlier bundle"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stuckWriterEnv+"="+file)
	if line, err := killtest.AfterLine(t, cmd); err != nil || line != "writing\n" {
		t.Fatalf("child said %q (%v)", line, err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"cache.kcb"}) {
		t.Errorf("after the kill the directory holds %q, want only the earlier bundle", got)
	}
	if b, _ := os.ReadFile(file); string(b) != "the earlier bundle" {
		t.Errorf("the earlier bundle now holds %d bytes", len(b))
	}
}

// TestWriteAtomically: the bundle replaces an earlier one whole; a write
// that fails leaves the earlier one and nothing beside it.
func TestWriteAtomically(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "b.kcb")
	os.WriteFile(file, []byte("old"), 0o644)
	if _, err := writeAtomically(file, nil, func(w io.Writer) (int, error) {
		if got := dirNames(t, dir); !slices.Equal(got, []string{"b.kcb"}) && unnamedFiles() {
			t.Errorf("while writing, the directory holds %q", got)
		}
		return w.Write([]byte("new bundle"))
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "new bundle" {
		t.Errorf("bundle holds %q", b)
	}
	failed := errors.New("write failed")
	if _, err := writeAtomically(file, nil, func(w io.Writer) (int, error) {
		w.Write([]byte("partial"))
		return 0, failed
	}); !errors.Is(err, failed) {
		t.Errorf("err = %v, want the write's", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "new bundle" {
		t.Errorf("after a failed write the bundle holds %q", b)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"b.kcb"}) {
		t.Errorf("after a failed write the directory holds %q", got)
	}
}

// unnamedFiles says the system gives the tests' directories files without
// names (O_TMPFILE).
func unnamedFiles() bool {
	f, err := createUnnamed(os.TempDir())
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
