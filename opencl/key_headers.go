package opencl

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// dependencies returns the headers and the options of src's key (see
// scanInput for the options). The headers are every file the compiler
// may read for it, found by the deps scanner as the driver of the platform
// named platform searches for them (keyparts.OpenCLScan). With
// KCACHE_TRACE set, every dependency and the rule that found it is logged.
func (c *Cache) dependencies(platform string, src Source) ([]kcache.Header, string, error) {
	in, options, err := c.scanInput(platform, src)
	if err != nil {
		return nil, "", err
	}
	if !c.bins.Config().Trace {
		// No copy of the trace: a warm key of hundreds of headers made
		// one on every lookup.
		headers, err := c.headers.AppendHeaders(context.Background(), nil, in)
		return headers, options, err
	}
	headers, trace, err := c.headers.Scan(context.Background(), in)
	if err != nil {
		return nil, "", err
	}
	for _, d := range trace {
		c.bins.Logger().Debug("kcache dependency", "source", src.Path, "dependency", d)
	}
	return headers, options, nil
}

// scanInput is the dependency scanner's input for src on the platform
// named platform, and the build options as its key holds them: as given,
// or, under CacheOptions.BaseDir where that is exact, with the places
// under it relocated (deps.RelocateArgs).
func (c *Cache) scanInput(platform string, src Source) (deps.Input, string, error) {
	in, err := keyparts.OpenCLScan(src.Code, src.Options, platform)
	in.Path, in.Depends = src.Path, src.Depends
	if in.MainDir != "" {
		// PoCL chose its temporary directory at device init.
		in.MainDir = keyparts.PoCLTempDir(lookupIn(deviceInitEnv()))
	}
	in = keyparts.WithPrivateDir(in, c.private)
	if err != nil || c.baseDir == "" {
		return in, src.Options, err
	}
	args, ok := deps.RelocateArgs(in.Args, c.baseDir)
	if !ok {
		return in, src.Options, nil
	}
	in.BaseDir = c.baseDir
	return in, relocatedOptions(args), nil
}

// relocatedOptions writes options relocated under a base directory for a
// key, one quoted argument each, after a mark that no options string the
// driver is given can start with a quote as the mark does: they never
// equal the options of a key made without a base directory.
func relocatedOptions(args []string) string {
	var b strings.Builder
	b.WriteString("\"$BASE\"")
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(a))
	}
	return b.String()
}

// inputsUnchanged reports whether every file src's key was computed from
// is as the scan saw it, and was settled then, and the day the key holds
// (headers, for a source that expands __DATE__) is still today's: only
// then may a binary built after the scan be stored under that key (a
// header saved during the build would otherwise be served, stale, once
// the edit is reverted; a build begun before midnight may hold the next
// day).
func (c *Cache) inputsUnchanged(dev Device, src Source, headers []kcache.Header) bool {
	in, _, err := c.scanInput(c.identity(dev).dev.Platform, src)
	return err == nil && c.headers.Holds([]deps.Input{in}, nil, headers) && c.headers.DayUnchanged(headers)
}

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
		e, err := c.fromSource(ctx, dev, src, pk.digest, nil, nil)
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
