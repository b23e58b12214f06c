package main

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestKernelFilesRegularOnly: kcache warm reads only regular files. A FIFO
// named like a kernel in a directory is left out (its read would wait for
// a writer for ever), a link to a kernel is kept, and a FIFO given by name
// is an error.
func TestKernelFilesRegularOnly(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.cl")
	if err := os.WriteFile(a, []byte("__kernel void k() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "f.cl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.cl")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	got, err := kernelFiles([]string{dir})
	if want := []string{a, link}; err != nil || !slices.Equal(got, want) {
		t.Errorf("kernelFiles(dir) = %q, %v; want %q", got, err, want)
	}
	if got, err := kernelFiles([]string{fifo}); err == nil {
		t.Errorf("kernelFiles(fifo) = %q, want an error", got)
	}
}
