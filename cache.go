package kcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kcache/kcache/internal/flight"
)

// Tier is one binary tier of a Cache: a Store and the outcome its hits
// report (OutcomeDisk or OutcomeRemote).
type Tier struct {
	Kind  Outcome
	Store Store
}

// BuildFunc runs the compiler for a key and returns the binary. Its context
// is detached from any one caller's cancellation: other callers may be
// waiting for the same build.
type BuildFunc func(ctx context.Context) ([]byte, error)

// Result is what GetOrBuild hands back.
type Result struct {
	Binary  []byte
	Outcome Outcome
	Digest  Digest
	// BuildTime is what the binary cost to build, where that is known (a
	// build of this process or one recorded with the entry).
	BuildTime time.Duration
}

// Cache composes the binary tiers (disk, then remote) over a builder, with
// single-flight builds in this process and, where the first tier is a
// Locker, across processes. It never makes a build fail: a tier that errs
// is logged once, counted, and treated as a miss.
type Cache struct {
	cfg    Config
	tiers  []Tier
	log    *slog.Logger
	flight flight.Group[Digest, Result] // builds under way, by key digest
	stats  counters
	warned sync.Map // "kind/op" -> struct{}: warnings already logged
	merge  merger   // counts already merged into the tiers that keep them
}

// New returns a Cache over tiers, searched in order. With no tiers (the
// persistent tier off, or none could be opened) every GetOrBuild builds,
// still once per key at a time. logger may be nil to discard diagnostics.
func New(cfg Config, logger *slog.Logger, tiers ...Tier) *Cache {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Cache{cfg: cfg, tiers: tiers, log: logger}
	c.flight.Log = logger
	return c
}

// Config returns the configuration the cache was made with.
func (c *Cache) Config() Config { return c.cfg }

// Logger returns the cache's logger, for backends that report through it.
func (c *Cache) Logger() *slog.Logger { return c.log }

// Stats returns a snapshot of the cache's counters, with those the tiers'
// stores keep themselves (StatsReporter).
func (c *Cache) Stats() Stats {
	s := c.stats.snapshot()
	for _, t := range c.tiers {
		if r, ok := t.Store.(StatsReporter); ok {
			s.tier(t.Kind).add(r.TierStats())
		}
	}
	return s
}

// RecordMemory lets an object tier above the cache count its lookups:
// a hit that avoided a build of cost saved, or a miss.
func (c *Cache) RecordMemory(hit bool, saved time.Duration) {
	if !hit {
		c.stats.memory.misses.Add(1)
		return
	}
	c.stats.memory.hits.Add(1)
	c.stats.saved(saved, 0)
}

// RecordLocalHit counts a hit of the local tier of kind kind that a
// backend served from a record of its own (the cuda package's direct
// records keep a binary beside the digest of the key it is stored under):
// a build of buildTime avoided, in took.
func (c *Cache) RecordLocalHit(kind Outcome, buildTime, took time.Duration) {
	c.stats.tier(kind).hits.Add(1)
	c.stats.saved(buildTime, took)
}

// GetOrBuild returns the binary for key from the first tier that has it,
// filling the tiers above, or builds it once: concurrent callers in this
// process share one build, and callers in other processes wait on the
// first tier's lock. If ctx ends while waiting, GetOrBuild returns ctx's
// error and the build goes on for the others. A builder that panics or
// calls runtime.Goexit is an error for every caller of that build (wrapping
// ErrBuildPanic for a panic, with the builder's stack), logged, and never
// kept: the next caller builds again.
func (c *Cache) GetOrBuild(ctx context.Context, key *Key, build BuildFunc) (Result, error) {
	p := key.Prepare()
	c.trace(p)
	d := p.digests.Key
	r, err := c.flight.Do(ctx, d, func(ctx context.Context) (Result, error) {
		return c.lookupOrBuild(ctx, p, build)
	})
	if err != nil {
		return Result{Digest: d}, err
	}
	return r, nil
}

// trace logs a prepared key's digests when asked to: the trace is how a
// user finds out why a lookup missed.
func (c *Cache) trace(p *Prepared) {
	if c.cfg.Trace {
		d, key := p.digests, p.key
		c.log.Debug("kcache key", "key", d.Key, "device", d.Device, "image", d.Image,
			"spec", d.Spec, "options", d.Options, "device_name", key.Device.Name,
			"compiler", key.Compiler.Version, "compile_options", key.Options.Compile,
			"headers", len(key.Image.Headers), "env", key.Options.Env)
	}
}

// Get looks key up in the binary tiers only, filling the tiers above a hit.
// It returns an error wrapping ErrMiss when no tier has it.
func (c *Cache) Get(ctx context.Context, key *Key) (Result, error) {
	return c.get(ctx, key.Prepare(), true)
}

// GetLocal looks a prepared key up in the cache's local tiers only: those
// of kind OutcomeDisk before any other, filling those above a hit. It
// counts a hit but no miss, since a caller that misses goes on to
// LookupPrepared, which counts it. It never waits for a network or for
// another process's build: it is the part of a lookup short enough to run
// on the caller's goroutine (see objcache.GetOrLoad). It returns an error
// wrapping ErrMiss when none has the key.
func (c *Cache) GetLocal(ctx context.Context, p *Prepared) (Result, error) {
	n := 0
	for n < len(c.tiers) && c.tiers[n].Kind == OutcomeDisk {
		n++
	}
	r, err := c.getIn(ctx, p, c.tiers[:n], false)
	if err == nil {
		c.trace(p)
	}
	return r, err
}

// ReadLocal reads p's entry again from the local tiers, as GetLocal finds
// it, for a caller that holds its program and kept no copy of the binary
// (the driver holds its own): it counts nothing and fills no tier, since
// the request that first read the entry counted it. It returns an error
// wrapping ErrMiss when none has the key (evicted since).
func (c *Cache) ReadLocal(ctx context.Context, p *Prepared) (Result, error) {
	for _, t := range c.tiers {
		if t.Kind != OutcomeDisk {
			break
		}
		if e, err := getFrom(ctx, t.Store, p); err == nil {
			return Result{Binary: e.Binary, Outcome: t.Kind, Digest: p.digests.Key, BuildTime: e.BuildTime}, nil
		}
	}
	return Result{Digest: p.digests.Key}, fmt.Errorf("kcache: %s: %w", p.digests.Key, ErrMiss)
}

// get searches the tiers. countMiss is false for the second look after
// taking the build lock, so one request counts at most one miss per tier.
func (c *Cache) get(ctx context.Context, p *Prepared, countMiss bool) (Result, error) {
	return c.getIn(ctx, p, c.tiers, countMiss)
}

// getIn is get over tiers, a prefix of c.tiers.
func (c *Cache) getIn(ctx context.Context, p *Prepared, tiers []Tier, countMiss bool) (Result, error) {
	key, digest := p.key, p.digests.Key
	for i, t := range tiers {
		start := time.Now()
		e, err := getFrom(ctx, t.Store, p)
		if err != nil {
			if countMiss {
				c.missed(t, "get", err)
			}
			continue
		}
		c.stats.tier(t.Kind).hits.Add(1)
		c.stats.saved(e.BuildTime, time.Since(start))
		c.fill(ctx, key, e, c.tiers[:i])
		if c.cfg.Debug { // checked here: the arguments allocate on every hit
			c.debug("hit", "tier", t.Kind, "key", digest)
		}
		return Result{Binary: e.Binary, Outcome: t.Kind, Digest: digest, BuildTime: e.BuildTime}, nil
	}
	return Result{Digest: digest}, fmt.Errorf("kcache: %s: %w", digest, ErrMiss)
}

// getFrom asks a store for a prepared key, through GetPrepared where the
// store has it.
func getFrom(ctx context.Context, s Store, p *Prepared) (Entry, error) {
	if g, ok := s.(PreparedGetter); ok {
		return g.GetPrepared(ctx, p)
	}
	return s.Get(ctx, p.key)
}

// missed counts a miss in tier t, and warns once per tier and operation
// when the cause was a failure rather than an absent entry.
func (c *Cache) missed(t Tier, op string, err error) {
	tc := c.stats.tier(t.Kind)
	tc.misses.Add(1)
	if errors.Is(err, ErrRejected) {
		tc.rejected.Add(1)
	}
	if errors.Is(err, ErrMiss) || errors.Is(err, context.Canceled) {
		return
	}
	if isTimeout(err) {
		tc.timeouts.Add(1)
	}
	tc.errors.Add(1)
	c.warn(t, op, err)
}

// isTimeout reports whether err is a tier that did not answer in time: a
// deadline of the caller's or of the connection.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// warn logs a tier failure once per tier and operation: a read-only or
// full disk fails every call, and one clear line says all there is to say.
func (c *Cache) warn(t Tier, op string, err error) {
	if _, dup := c.warned.LoadOrStore(t.Kind.String()+"/"+op, struct{}{}); dup {
		c.debug("tier failure", "tier", t.Kind, "op", op, "err", err)
		return
	}
	c.log.Warn("kcache: tier failed; building without it", "tier", t.Kind, "op", op, "err", err)
}

func (c *Cache) debug(msg string, args ...any) {
	if c.cfg.Debug {
		c.log.Debug("kcache: "+msg, args...)
	}
}

// fill copies an entry found in a lower tier into the tiers above it, or
// a new build into every tier. The caller's cancellation does not reach
// the stores: the binary is in hand, every store's wait is bounded, and a
// build dropped because its caller gave up during the compile would cost
// every later process of the machine that compile again.
func (c *Cache) fill(ctx context.Context, key *Key, e Entry, above []Tier) {
	ctx = context.WithoutCancel(ctx)
	for _, t := range above {
		if err := t.Store.Put(ctx, key, e); err != nil {
			c.stats.tier(t.Kind).errors.Add(1)
			c.warn(t, "put", err)
		}
	}
}

// lookupOrBuild runs once per key at a time in this process.
func (c *Cache) lookupOrBuild(ctx context.Context, p *Prepared, build BuildFunc) (Result, error) {
	r, pending, err := c.lookup(ctx, p)
	if pending == nil {
		return r, err
	}
	return pending.build(ctx, build)
}

// Lookup looks key up in the tiers. On a hit it returns the result and a
// nil Pending. On a miss it returns a Pending that holds the key's
// cross-process build lock (where the first tier has one): the caller
// builds, then calls Commit with the binary or Abort. Other processes
// that miss the same key wait, bounded, for that Commit.
//
// Lookup is for builders that can only produce a complete binary some time
// after the build: PoCL, for one, compiles work-group functions at a
// kernel's first launch and includes them in the binary only if it is read
// afterwards. GetOrBuild is Lookup, build, Commit in one call.
func (c *Cache) Lookup(ctx context.Context, key *Key) (Result, *Pending, error) {
	return c.LookupPrepared(ctx, key.Prepare())
}

// LookupPrepared is Lookup for a key already prepared: a caller that needs
// the key's digest itself (an object tier above the cache) prepares the
// key once for both.
func (c *Cache) LookupPrepared(ctx context.Context, p *Prepared) (Result, *Pending, error) {
	c.trace(p)
	return c.lookup(ctx, p)
}

func (c *Cache) lookup(ctx context.Context, p *Prepared) (Result, *Pending, error) {
	if r, err := c.get(ctx, p, true); err == nil {
		return r, nil, nil
	}
	digest := p.digests.Key
	unlock, r, hit := c.lockKey(ctx, p)
	if hit {
		return r, nil, nil
	}
	return Result{Digest: digest}, &Pending{c: c, key: p.key, digest: digest, unlock: unlock, start: time.Now()}, nil
}

// Pending is a build in progress after a miss. Exactly one of Commit,
// Drop and Abort must be called; later calls do nothing.
type Pending struct {
	c      *Cache
	key    *Key
	digest Digest
	start  time.Time
	once   sync.Once
	unlock func()
}

// Digest returns the digest of the key being built.
func (p *Pending) Digest() Digest { return p.digest }

// Commit stores bin, built in buildTime, in every tier and releases the
// build lock. buildTime <= 0 means the time since Lookup. ctx having ended
// does not stop the stores: the binary is kept.
func (p *Pending) Commit(ctx context.Context, bin []byte, buildTime time.Duration) {
	p.once.Do(func() {
		defer p.unlock()
		if buildTime <= 0 {
			buildTime = time.Since(p.start)
		}
		p.c.stats.builds.Add(1)
		p.c.stats.buildNanos.Add(int64(buildTime))
		p.c.fill(ctx, p.key, Entry{Binary: bin, BuildTime: buildTime}, p.c.tiers)
		p.c.flushIfDue(ctx)
		p.c.debug("built", "key", p.digest, "took", buildTime, "bytes", len(bin))
	})
}

// Abort records a failed build and releases the build lock; nothing is
// stored, so the next lookup builds again.
func (p *Pending) Abort(err error) {
	p.once.Do(func() {
		defer p.unlock()
		p.c.stats.failed.Add(1)
		p.c.stats.buildNanos.Add(int64(time.Since(p.start)))
		p.c.debug("build failed", "key", p.digest, "err", err)
	})
}

// Drop records a build that succeeded but must not be stored, and
// releases the build lock: an input the key was computed from changed
// while the compiler ran (or was too new to trust), so the binary may
// not be what the key names. The caller uses the binary; processes
// waiting on the lock find no entry and build for themselves.
func (p *Pending) Drop(reason string) {
	p.once.Do(func() {
		defer p.unlock()
		p.c.stats.builds.Add(1)
		p.c.stats.unstored.Add(1)
		p.c.stats.buildNanos.Add(int64(time.Since(p.start)))
		p.c.debug("built, not stored", "key", p.digest, "reason", reason)
	})
}

// errBuildAborted is what Abort records for a builder that panicked or
// called runtime.Goexit; the callers get the error that says which.
var errBuildAborted = errors.New("kcache: build panicked or called runtime.Goexit")

// build runs the compiler and commits what it made. A builder that panics
// or calls runtime.Goexit aborts the build on its way out, so that the
// build lock is released at once rather than when the process exits.
func (p *Pending) build(ctx context.Context, build BuildFunc) (Result, error) {
	start := time.Now()
	defer p.Abort(errBuildAborted) // does nothing once Commit or Abort ran
	bin, err := build(ctx)
	took := time.Since(start)
	if err != nil {
		p.Abort(err)
		return Result{Digest: p.digest, BuildTime: took}, err
	}
	p.Commit(ctx, bin, took)
	return Result{Binary: bin, Outcome: OutcomeBuilt, Digest: p.digest, BuildTime: took}, nil
}

// lockKey takes the cross-process build lock of every tier that has one,
// in order: the machine's (disk), then the fleet's (remote), so that at
// most one process of a machine contends for the fleet's. After each it
// looks again: whoever held the lock may have built the key meanwhile, and
// a miss costs a failed open or a round trip, nothing next to a compile.
// On such a hit it releases what it holds and returns the result as
// waited. A lock that cannot be had is a warning, not a failure: the build
// goes on without it. A lock whose last holder failed (ErrLastBuildFailed)
// is no failure either: the build goes on without any lock.
func (c *Cache) lockKey(ctx context.Context, p *Prepared) (unlock func(), r Result, hit bool) {
	var held []func()
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	for _, t := range c.tiers {
		l, ok := t.Store.(Locker)
		if !ok {
			continue
		}
		u, err := l.Lock(ctx, p.key)
		if errors.Is(err, ErrLastBuildFailed) {
			// Holding the locks above, this process would make the others
			// of its machine wait for its build, one after another, where
			// every process of the fleet is to build at once.
			release()
			c.debug("last builder left no entry; building without locks", "tier", t.Kind, "key", p.digests.Key)
			return func() {}, Result{}, false
		}
		if errors.Is(err, context.Canceled) {
			continue // the caller's doing, as in missed
		}
		if err != nil {
			c.stats.tier(t.Kind).errors.Add(1)
			c.warn(t, "lock", err)
			continue
		}
		held = append(held, u)
		if r, err := c.get(ctx, p, false); err == nil {
			release()
			c.stats.waited.Add(1)
			c.stats.tier(r.Outcome).waited.Add(1)
			r.Outcome = OutcomeWaited
			return func() {}, r, true
		}
	}
	return release, Result{}, false
}

// Put stores a binary built elsewhere in every tier.
func (c *Cache) Put(ctx context.Context, key *Key, e Entry) error {
	var errs []error
	for _, t := range c.tiers {
		if err := t.Store.Put(ctx, key, e); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.Kind, err))
		}
	}
	return errors.Join(errs...)
}

// Delete removes key from every tier. A backend calls it when the runtime
// rejects a binary the tiers handed back (a driver that changed without
// changing its version string), so the next lookup builds afresh.
func (c *Cache) Delete(ctx context.Context, key *Key) error {
	var errs []error
	for _, t := range c.tiers {
		if err := t.Store.Delete(ctx, key); err != nil && !errors.Is(err, ErrMiss) {
			errs = append(errs, fmt.Errorf("%s: %w", t.Kind, err))
		}
	}
	return errors.Join(errs...)
}

// Discard deletes key's entry, one the caller could not use (a binary its
// runtime refused, an image that does not decode), and looks the key up
// again, so that the caller builds afresh: it gets the build lock to store
// a fresh entry, or another process's, stored meanwhile. A tier that fails
// to delete is logged, not returned: the lookup then finds the old entry
// again, and the caller, holding no lock, builds without storing.
func (c *Cache) Discard(ctx context.Context, key *Key) (Result, *Pending, error) {
	if err := c.Delete(ctx, key); err != nil {
		c.log.Warn("kcache: removing an unusable entry", "key", key.Digest(), "err", err)
	}
	return c.Lookup(ctx, key)
}

// Close merges this process's counts into every tier that keeps shared
// counters (a StatsMerger) and then closes every tier whose Store has a
// Close(ctx) method, so that work a tier defers (the remote tier's queued
// writes, the disk tier's background maintenance) is done before the
// process exits. A process calls it before it exits, with a deadline: a
// tier that cannot finish in time drops what is left. It returns every
// error, joined.
func (c *Cache) Close(ctx context.Context) error {
	errs := []error{c.FlushStats(ctx)}
	for _, t := range c.tiers {
		if cl, ok := t.Store.(interface{ Close(context.Context) error }); ok {
			if err := cl.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("kcache: close %s tier: %w", t.Kind, err))
			}
		}
	}
	return errors.Join(errs...)
}
