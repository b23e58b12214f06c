package opencl

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"sync"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// dependencies returns the headers of src's key: every file the compiler
// may read for it, found by the deps scanner with the working directory
// searched first, as PoCL searches it (a driver is given program text, not
// a path, and PoCL compiles it with "-I." ahead of the build options), on
// the platform named platform. With KCACHE_TRACE set, every dependency and
// the rule that found it is logged.
func (c *Cache) dependencies(platform string, src Source) ([]kcache.Header, error) {
	in := deps.Input{
		Source:        src.Code,
		Path:          src.Path,
		Args:          deps.SplitOptions(src.Options),
		Depends:       src.Depends,
		SearchWorkDir: true,
		Builtins:      builtinHeaders(),
		// PoCL searches no include directory of its own (its headers
		// come in by -include), and the working directory first; other
		// drivers may search directories of their own, and may or may
		// not search the working directory.
		CompleteSearchPath: platform == pocl,
		EveryCandidate:     platform != pocl,
	}
	headers, trace, err := c.headers.Scan(context.Background(), in)
	if err != nil {
		return nil, err
	}
	if c.bins.Config().Trace {
		for _, d := range trace {
			c.bins.Logger().Debug("kcache dependency", "source", src.Path, "dependency", d)
		}
	}
	return headers, nil
}

// pocl is PoCL's platform name.
const pocl = "Portable Computing Language"

// builtinHeaders lists the headers OpenCL compilers include on their own
// (PoCL's kernel headers, clang's opencl-c.h): their macros can take part
// in a computed include. Found once per process; the scanner reads them
// only for a source with a computed include.
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

// uncached builds src for dev without the binary tiers, for a source
// whose dependencies cannot be bounded (deps.ErrUncacheable): no key could
// be trusted to change with the files the compiler reads. The program
// gets a key of its own in the object tier, which forgets it as soon as
// it is made, so it is released with the caller's last hold and never
// served to anyone else.
func (c *Cache) uncached(ctx context.Context, dev Device, src Source) (*BuiltProgram, error) {
	var pk programKey
	rand.Read(pk.digest[:])
	pk.device = dev.Handle()
	h, err := c.programs.GetOrBuild(ctx, pk, func(ctx context.Context) (*programEntry, int64, error) {
		e, err := c.fromSource(ctx, dev, src, pk.digest, nil)
		if err != nil {
			return nil, 0, err
		}
		return e, e.size, nil
	})
	c.programs.Remove(pk)
	if err != nil {
		return nil, err
	}
	return &BuiltProgram{h: h, c: c, Outcome: kcache.OutcomeBuilt}, nil
}
