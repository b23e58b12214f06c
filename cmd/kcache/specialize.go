package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/opencl"
)

// specializeEntry gives an entry that was already cached the
// specializations in list that it lacks. PoCL compiles the shapes that
// specializeVar names only into the binary of a program built from
// source, never into one made from a binary (p, the hit): so src is
// built again, through a program cache of its own with no tiers, which
// compiles exactly as the session's does, and its binary replaces the
// entry. It returns the shapes added; none when the entry held them all.
func specializeEntry(ctx context.Context, sess *session, p *opencl.BuiltProgram, key *kcache.Key, src opencl.Source, list string) ([]string, error) {
	old, err := p.Blob(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cached binary: %w", err)
	}
	missing := missingShapes(old, list)
	if len(missing) == 0 {
		return nil, nil
	}
	// The new binary must keep the shapes the entry has as well.
	want := strings.Join(append(opencl.Specializations(old), strings.Split(list, ",")...), ",")
	start := time.Now()
	bin, err := buildUncached(ctx, sess, src, want, key)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	if still := missingShapes(bin, want); len(still) > 0 {
		return nil, fmt.Errorf("the runtime did not compile %s into the binary (is it PoCL?)", strings.Join(still, ", "))
	}
	// The disk tier keeps a sound entry that is already there, so the old
	// one goes first. A process that looks the key up in between misses
	// and builds: no worse than before the entry existed.
	if err := sess.bins.Delete(ctx, key); err != nil {
		return nil, fmt.Errorf("removing the entry to replace it: %w", err)
	}
	if err := sess.bins.Put(ctx, key, kcache.Entry{Binary: bin, BuildTime: took}); err != nil {
		return nil, fmt.Errorf("storing the specialized binary: %w", err)
	}
	return missing, nil
}

// specializing serialises the builds of specializeEntry, which set
// specializeVar for the process. Other builds running meanwhile (warm
// --jobs) may see the longer list: they then store more shapes, never
// fewer.
var specializing sync.Mutex

// buildUncached builds src from source on the session's device with the
// specializations list, storing nothing in the session's tiers, and
// returns the binary as the runtime writes it out, where it is of key.
//
// The build reads the files as they are now, which need not be as they
// were when key was computed (a header edited since), nor stay so while
// it runs: the binary is taken only from what the build's cache stores,
// which it does only where every file its key was computed from held
// through the build, and only under key. Otherwise the entry of key would
// be replaced by a build of other headers.
func buildUncached(ctx context.Context, sess *session, src opencl.Source, list string, key *kcache.Key) ([]byte, error) {
	specializing.Lock()
	defer specializing.Unlock()
	prev, had := os.LookupEnv(specializeVar)
	os.Setenv(specializeVar, list)
	defer func() {
		if had {
			os.Setenv(specializeVar, prev)
		} else {
			os.Unsetenv(specializeVar)
		}
	}()
	var got captured
	bins := kcache.New(sess.bins.Config(), sess.bins.Logger(), kcache.Tier{Kind: kcache.OutcomeDisk, Store: &got})
	cache := opencl.NewCache(sess.cl, bins, opencl.CacheOptions{CommitDelay: -1})
	defer cache.Close()
	p, err := cache.Program(ctx, sess.dev, src)
	if err != nil {
		return nil, fmt.Errorf("building it again to specialize it: %w", err)
	}
	defer p.Release()
	p.Commit(ctx)
	bin, ok := got.binary(key.Digest())
	if !ok {
		return nil, fmt.Errorf("building it again to specialize it: a file it depends on changed since its key was computed, or during the build, or is too new to trust; run the command again")
	}
	return bin, nil
}

// captured is the one tier of the cache buildUncached builds through,
// which keeps what that cache stores.
type captured struct {
	mu   sync.Mutex
	bins map[kcache.Digest][]byte // guarded by mu
}

func (c *captured) Get(context.Context, *kcache.Key) (kcache.Entry, error) {
	return kcache.Entry{}, kcache.ErrMiss
}

func (c *captured) Put(_ context.Context, key *kcache.Key, e kcache.Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bins == nil {
		c.bins = map[kcache.Digest][]byte{}
	}
	c.bins[key.Digest()] = e.Binary
	return nil
}

func (c *captured) Delete(context.Context, *kcache.Key) error { return nil }

// binary returns the binary stored under the key whose digest is d.
func (c *captured) binary(d kcache.Digest) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.bins[d]
	return b, ok
}

// missingShapes returns the shapes of list that bin holds no work-group
// function for.
func missingShapes(bin []byte, list string) []string {
	have := opencl.Specializations(bin)
	var missing []string
	for _, s := range strings.Split(list, ",") {
		if !slices.Contains(have, s) && !slices.Contains(missing, s) {
			missing = append(missing, s)
		}
	}
	return missing
}
