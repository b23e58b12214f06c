package layerstore

import (
	"context"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// Image formats of the layer's entries. They hold a Record, not the
// library's bare binary, so they never share a key with the library's
// entries, nor an object with an executable.
const (
	FormatBuild    = "opencl-c/layer-record"
	FormatCompiled = "opencl-c/layer-record/compiled-object"
	FormatLinked   = "opencl-c/layer-record/linked"
)

// CompilerEnv is the rule for the variables that are part of a build's
// identity: the OpenCL binding's, less the loader's layer list, which
// always names the cache itself in the layer: its presence changes no code.
var CompilerEnv = keyparts.OpenCLEnv.Ignoring("OPENCL_LAYERS")

// Key is the key of source built with options, by the layer's rules, for
// the device whose identity is dev and comp, with headers as Headers found
// them and env the selected environment (CompilerEnv).
func Key(dev kcache.Device, comp kcache.Compiler, format string, source []byte, headers []kcache.Header, options string, env []kcache.EnvVar) *kcache.Key {
	return &kcache.Key{
		Device:   dev,
		Compiler: comp,
		Image:    kcache.Image{Format: format, Source: source, Headers: headers},
		Options:  kcache.BuildOptions{Compile: options, Env: env},
	}
}

// Headers finds the files src depends on, the way PoCL's compiler does:
// the driver is given text, not a path, and searches the working
// directory cwd first, then the -I directories, and no directory of its
// own. For another driver, whose search order is not known, every file an
// include could name is keyed. What the scanner cannot model exactly
// (deps.ErrUncacheable) must be built without storing. unchanged reports,
// after the build, whether every file the key was computed from is still
// as the scan saw it (and was settled then), and the day the key holds
// for __DATE__ still today's: only then may the binary be stored under
// that key. trace is the scan's trace, for KCACHE_TRACE, where withTrace
// asks for it (nil otherwise).
// privateDir names the process's own PoCL directory where it has one
// (deps.Input.PrivateDir): the scan's dependency record then serves other
// processes, each with its own.
func Headers(ctx context.Context, s *deps.Scanner, src []byte, options, cwd, platform, privateDir string, withTrace bool) (headers []kcache.Header, unchanged func() bool, trace []deps.Dependency, err error) {
	in, err := keyparts.OpenCLScan(src, options, platform)
	if err != nil {
		return nil, nil, nil, err
	}
	in.WorkDir = cwd
	in = keyparts.WithPrivateDir(in, privateDir)
	if withTrace {
		headers, trace, err = s.Scan(ctx, in)
	} else {
		// No copy of the trace: a warm key of hundreds of headers made
		// one on every lookup, for nothing but KCACHE_TRACE.
		headers, err = s.AppendHeaders(ctx, nil, in)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return headers, func() bool { return s.Holds([]deps.Input{in}, nil, headers) && s.DayUnchanged(headers) }, trace, nil
}
