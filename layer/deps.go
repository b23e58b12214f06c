package main

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// scanner finds the files a program's source depends on, for the key.
type scanner interface {
	headers(ctx context.Context, src []byte, options, cwd, platform string) ([]kcache.Header, error)
}

// pocl is PoCL's platform name.
const pocl = "Portable Computing Language"

// depsScanner finds them with the project's scanner, the way PoCL's
// compiler does: the driver is given text, not a path, and searches the
// application's working directory first, then the -I directories, and no
// directory of its own. For another driver, whose search order is not
// known, every file an include could name is keyed. What the scanner
// cannot see widens the key (deps's manifest rule); what cannot be bounded
// at all (deps.ErrUncacheable) is built by the driver and not stored.
type depsScanner struct {
	s     *deps.Scanner
	trace bool
	log   interface{ Debug(string, ...any) }
}

func (d depsScanner) headers(ctx context.Context, src []byte, options, cwd, platform string) ([]kcache.Header, error) {
	headers, trace, err := d.s.Scan(ctx, deps.Input{
		Source:             src,
		WorkDir:            cwd,
		Args:               deps.SplitOptions(options),
		SearchWorkDir:      true,
		Builtins:           builtinHeaders(),
		CompleteSearchPath: platform == pocl,
		EveryCandidate:     platform != pocl,
	})
	if err != nil {
		return nil, err
	}
	if d.trace {
		for _, dep := range trace {
			d.log.Debug("kcache dependency", "dependency", dep)
		}
	}
	return headers, nil
}

// builtinHeaders lists the headers OpenCL compilers include on their own
// (PoCL's kernel headers, clang's opencl-c.h), whose macros can take part
// in a computed include.
var builtinHeaders = sync.OnceValue(func() []string {
	var out []string
	for _, pattern := range []string{
		"/usr/share/pocl/include/*.h",
		"/usr/local/share/pocl/include/*.h",
		"/usr/lib/llvm-*/lib/clang/*/include/opencl-c*.h",
		"/usr/lib/clang/*/include/opencl-c*.h",
	} {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	return out
})
