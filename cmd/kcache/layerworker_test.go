package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache/internal/layerstore"
)

// TestOrderEnv: an order's process gets PoCL's kernel cache as the
// application had it (on when it did not say, PoCL's default, which the
// command would otherwise turn off), and with it off a PoCL directory of
// its own, never the application's private one; and PWD names the
// order's directory, not the worker starter's.
func TestOrderEnv(t *testing.T) {
	base := []string{"PATH=/bin", "PWD=/starter", "POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR=/dev/shm/kcache-pocl-1", "KCACHE_DIR=/elsewhere"}
	for _, c := range []struct {
		name  string
		order []string
		want  []string
	}{
		{"unset", []string{"KCACHE_DIR=/c", "HOME=/h"}, []string{"PATH=/bin", "KCACHE_DIR=/c", "HOME=/h", "PWD=/w", "POCL_KERNEL_CACHE=1"}},
		{"on", []string{"KCACHE_DIR=/c", "POCL_KERNEL_CACHE=1", "POCL_CACHE_DIR=/p"}, []string{"PATH=/bin", "KCACHE_DIR=/c", "POCL_KERNEL_CACHE=1", "POCL_CACHE_DIR=/p", "PWD=/w"}},
		{"off", []string{"KCACHE_DIR=/c", "POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR=/tmp/kcache-pocl-0/42"}, []string{"PATH=/bin", "KCACHE_DIR=/c", "POCL_KERNEL_CACHE=0", "PWD=/w"}},
	} {
		got := orderEnv(slices.Clone(base), layerstore.Order{Env: c.order, Dir: "/w"})
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: orderEnv = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestWorkerLogPlanted plants a symbolic link, to a file outside the
// cache and to one that does not exist, and a FIFO where the worker's log
// goes: the worker's log then goes nowhere, and it neither waits for a
// reader nor writes to, or creates, a file outside the cache. Before, it
// appended its log to the file the link named.
func TestWorkerLogPlanted(t *testing.T) {
	for _, kind := range []string{"link", "dangling link", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			q := layerstore.NewQueue(t.TempDir())
			if err := os.MkdirAll(q.Dir(), 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(q.Dir(), "worker.log")
			outside := filepath.Join(t.TempDir(), "victim")
			switch kind {
			case "link":
				if err := os.WriteFile(outside, []byte("precious\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				fallthrough
			case "dangling link":
				if err := os.Symlink(outside, path); err != nil {
					t.Fatal(err)
				}
			case "fifo":
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan *os.File)
			go func() { done <- openWorkerLog(q) }()
			var f *os.File
			select {
			case f = <-done:
			case <-time.After(30 * time.Second): // no speed measured: a FIFO's open never returns
				t.Fatal("openWorkerLog waited for a reader of a FIFO")
			}
			fmt.Fprintln(f, "a line of the worker's log")
			f.Close()
			b, err := os.ReadFile(outside)
			switch {
			case kind == "link" && string(b) != "precious\n":
				t.Errorf("the file outside the cache now holds %q", b)
			case kind == "dangling link" && err == nil:
				t.Error("the worker created the file its log's link names")
			}
		})
	}
}
