package main

import (
	"context"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/layerstore"
)

// scanner finds the files a program's source depends on, for the key. With
// the headers it returns unchanged, which reports after the build whether
// every file the key was computed from is still as the scan saw it (and
// was settled then): only then may the binary be stored under that key.
type scanner interface {
	headers(ctx context.Context, src []byte, options, cwd, platform string) (headers []kcache.Header, unchanged func() bool, err error)
	// waitRecords waits for the dependency records being written, for
	// the process's exit; it reports whether they were all written.
	waitRecords(ctx context.Context) bool
}

// depsScanner finds them with the project's scanner, by the rules the
// background worker keys by too (layerstore.Headers).
type depsScanner struct {
	s     *deps.Scanner
	trace bool
	log   interface{ Debug(string, ...any) }
}

func (d depsScanner) headers(ctx context.Context, src []byte, options, cwd, platform string) ([]kcache.Header, func() bool, error) {
	headers, unchanged, trace, err := layerstore.Headers(ctx, d.s, src, options, cwd, platform)
	if err != nil {
		return nil, nil, err
	}
	if d.trace {
		for _, dep := range trace {
			d.log.Debug("kcache dependency", "dependency", dep)
		}
	}
	return headers, unchanged, nil
}

func (d depsScanner) waitRecords(ctx context.Context) bool { return d.s.WaitRecords(ctx) }
