package main

import (
	"context"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/layerstore"
)

// depsScanner finds the files a program's source depends on, for the key,
// with the project's scanner, by the rules the background worker keys by
// too (layerstore.Headers). With the headers it returns unchanged, which
// reports after the build whether every file the key was computed from is
// still as the scan saw it (and was settled then): only then may the
// binary be stored under that key.
type depsScanner struct {
	s       *deps.Scanner
	trace   bool
	log     interface{ Debug(string, ...any) }
	private string // the process's own PoCL directory, if it has one
}

func (d depsScanner) headers(ctx context.Context, src []byte, options, cwd, platform string) ([]kcache.Header, func() bool, error) {
	headers, unchanged, trace, err := layerstore.Headers(ctx, d.s, src, options, cwd, platform, d.private, d.trace)
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

// waitRecords waits for the dependency records being written, for the
// process's exit; it reports whether they were all written.
func (d depsScanner) waitRecords(ctx context.Context) bool { return d.s.WaitRecords(ctx) }
