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
	bin, err := buildUncached(ctx, sess, src, want)
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
// specializations list, storing nothing, and returns the binary as the
// runtime writes it out.
func buildUncached(ctx context.Context, sess *session, src opencl.Source, list string) ([]byte, error) {
	specializing.Lock()
	defer specializing.Unlock()
	prev := os.Getenv(specializeVar)
	os.Setenv(specializeVar, list)
	defer os.Setenv(specializeVar, prev)
	cache := opencl.NewCache(sess.cl, kcache.New(sess.bins.Config(), sess.bins.Logger()), opencl.CacheOptions{CommitDelay: -1})
	defer cache.Close()
	p, err := cache.Program(ctx, sess.dev, src)
	if err != nil {
		return nil, fmt.Errorf("building it again to specialize it: %w", err)
	}
	defer p.Release()
	bin, err := p.Blob(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the specialized binary: %w", err)
	}
	return bin, nil
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
