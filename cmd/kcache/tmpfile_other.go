//go:build !linux

package main

import (
	"errors"
	"os"
)

// createUnnamed is Linux's O_TMPFILE: elsewhere the caller writes a named
// temporary file.
func createUnnamed(dir string) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

// publish is never called where createUnnamed returns no file.
func publish(f *os.File, file string) error { return errors.ErrUnsupported }
