package main

import (
	"context"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// scanner finds the files a program's source depends on, for the key. With
// the headers it returns unchanged, which reports after the build whether
// every file the key was computed from is still as the scan saw it (and
// was settled then): only then may the binary be stored under that key.
type scanner interface {
	headers(ctx context.Context, src []byte, options, cwd, platform string) (headers []kcache.Header, unchanged func() bool, err error)
}

// depsScanner finds them with the project's scanner, the way PoCL's
// compiler does: the driver is given text, not a path, and searches the
// application's working directory first, then the -I directories, and no
// directory of its own. For another driver, whose search order is not
// known, every file an include could name is keyed. What the scanner
// cannot model exactly (deps.ErrUncacheable) is built by the driver and
// not stored.
type depsScanner struct {
	s     *deps.Scanner
	trace bool
	log   interface{ Debug(string, ...any) }
}

func (d depsScanner) headers(ctx context.Context, src []byte, options, cwd, platform string) ([]kcache.Header, func() bool, error) {
	in, err := keyparts.OpenCLScan(src, options, platform)
	if err != nil {
		return nil, nil, err
	}
	in.WorkDir = cwd
	headers, trace, err := d.s.Scan(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	if d.trace {
		for _, dep := range trace {
			d.log.Debug("kcache dependency", "dependency", dep)
		}
	}
	return headers, func() bool { return d.s.Unchanged(in) }, nil
}
