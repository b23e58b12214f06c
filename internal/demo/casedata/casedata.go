// Package casedata is what the kernel suites of every backend share about
// a case's data, whatever launches its kernels: its device buffers, their
// little-endian contents, the headers its source includes, and the checks
// of the buffers a run leaves against references computed in Go.
//
// It is a fixture: the suites build on it, and the opencl and cuda
// packages' tests use its byte conversions; no library code may import
// it. It knows no backend (it neither launches nor allocates), so that
// both suites can share it, and imports no package of the module.
package casedata

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Buffer is one device buffer: Init is its initial contents (len = Size),
// or nil for a buffer that starts zero-filled, such as an output.
type Buffer struct {
	Name string
	Init []byte
	Size int
}

// CheckOutputs reports whether a run left one slice per buffer, before a
// case's check reads them.
func CheckOutputs(out [][]byte, buffers []Buffer) error {
	if len(out) != len(buffers) {
		return fmt.Errorf("%d output buffers, want %d", len(out), len(buffers))
	}
	return nil
}

// WriteHeaders writes headers, name → content, into dir, which must
// exist.
func WriteHeaders(dir string, headers map[string]string) error {
	for name, text := range headers {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return fmt.Errorf("write header: %w", err)
		}
	}
	return nil
}

// Distinct returns the distinct names, in order of first appearance: the
// kernels a case's launches use.
func Distinct(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// MustRead returns the file name of a suite's embedded sources. A missing
// one is a programming error that every test of the suite catches, so it
// panics.
func MustRead(fsys fs.FS, name string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic("casedata: missing kernel source " + name)
	}
	return string(b)
}
