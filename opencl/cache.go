package opencl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/ctxwait"
	"github.com/kcache/kcache/internal/keyparts"
	"github.com/kcache/kcache/objcache"
)

// CacheOptions configures a Cache.
type CacheOptions struct {
	// NoRecords keeps the dependency records of this cache's scans out
	// of the binary tiers. A process whose PoCL directory is its own
	// (kcache's commands give PoCL one) sets it: PoCL searches that
	// directory first, so every scan names it, and its records could
	// serve no other process.
	NoRecords bool
	// PrivateDir names PoCL's directory (POCL_CACHE_DIR) when it is this
	// process's own: kcache's commands give PoCL a new one in every
	// process. PoCL searches it first, so every scan names it; the
	// dependency records of this cache's scans name it by a placeholder
	// instead (deps.Input.PrivateDir), and serve the next process, whose
	// own directory takes its place.
	PrivateDir string
	// BaseDir, when set, makes keys name the places under it relative to
	// it, so checkouts of a project in different places, built with
	// absolute paths, share entries (ccache's base_dir); "" takes the
	// configuration's (KCACHE_BASE_DIR).
	// It applies only where exact: not for options that write places
	// into the binary (debug information) or that the scanner does not
	// know, nor for sources expanding __FILE__ (see deps.RelocateArgs).
	BaseDir string
	// CommitDelay is how long after a build from source the program's
	// binary is read and stored in the binary tiers, unless Commit comes
	// first. PoCL compiles each kernel's work-group function at its first
	// launch and includes it in the binary only if the binary is read
	// afterwards; reading it after the first launches makes the stored
	// binary complete, so a warm start compiles nothing. Zero means
	// DefaultCommitDelay.
	//
	// Negative means commit right after the build, for a process that
	// launches nothing (kcache build). Such a cache also leaves as they are
	// the entries that lack launch-time code, which any other cache
	// rebuilds once to complete them (see Cache.Program).
	CommitDelay time.Duration
	// Environ is the environment whose compiler-relevant variables enter
	// the key; nil means os.Environ(). The driver reads the process's
	// environment: where its variables differ from Environ's, Program
	// builds without the binary tiers.
	Environ []string
}

// DefaultCommitDelay leaves a program's first launches, which on PoCL
// compile its work-group functions, time to happen before its binary is
// stored. A second covers a runtime's warm-up; a program whose kernels
// first run later is still stored complete on an explicit Commit, and
// otherwise without the late functions, which then compile at first launch.
const DefaultCommitDelay = time.Second

// Cache caches built programs and their kernels for one OpenCL context:
// the object tier of the spec's runtime (programs by image, options and
// device; kernels by program and name, with a lock-free fast path) over
// kcache's binary tiers. A Cache is safe for concurrent use.
type Cache struct {
	cl       *Context
	bins     *kcache.Cache
	programs *objcache.Cache[programKey, *programEntry]
	kernels  *objcache.Cache[kernelKey, *SafeKernel]
	headers  *deps.Scanner
	private  string   // see CacheOptions.PrivateDir
	environ  []string // CacheOptions.Environ; nil: the process's, read per key
	delay    time.Duration
	baseDir  string // see CacheOptions.BaseDir

	idMu sync.Mutex           // guards ids
	ids  map[uintptr]identity // device identities, by cl_device_id
}

type identity struct {
	dev  kcache.Device
	comp kcache.Compiler
}

// programKey identifies a program in the object tier: the build's key
// digest (image, headers, options, device identity) and the device.
type programKey struct {
	digest kcache.Digest
	device uintptr
}

// kernelKey identifies a kernel in the object tier: its program object and
// its name. It is comparable without allocation, which keeps kernel hits,
// the hottest lookup, free of garbage.
type kernelKey struct {
	program uintptr
	name    string
}

// NewCache returns a cache of programs for cl over the binary tiers of
// bins. The in-memory settings of bins's configuration (InMemory,
// InMemoryThreshold) apply to the object tier.
func NewCache(cl *Context, bins *kcache.Cache, opts CacheOptions) *Cache {
	cfg := bins.Config()
	delay := opts.CommitDelay
	if delay == 0 {
		delay = DefaultCommitDelay
	}
	var scanOpts []deps.Option
	if !opts.NoRecords {
		scanOpts = append(scanOpts, deps.WithRecords(bins))
	}
	c := &Cache{cl: cl, bins: bins, headers: deps.NewScanner(bins.Logger(), scanOpts...), environ: slices.Clone(opts.Environ), delay: delay, ids: map[uintptr]identity{}, baseDir: cmp.Or(opts.BaseDir, cfg.BaseDir), private: opts.PrivateDir}
	// Kernels are released with their program (releaseProgram), not by
	// the kernel tier: a caller holding a program may use its kernels.
	c.kernels = objcache.New[kernelKey, *SafeKernel](objcache.Options[*SafeKernel]{Logger: bins.Logger()})
	c.programs = objcache.New[programKey, *programEntry](objcache.Options[*programEntry]{
		Logger:    bins.Logger(),
		Threshold: cfg.InMemoryThreshold,
		Disabled:  !cfg.InMemory,
		Release:   c.releaseProgram,
	})
	// Device identities take a dozen runtime queries and a read of the
	// process's memory map, and the scan's list of the compiler's own
	// headers a search of /usr/lib: pay both with the context, not on the
	// first program.
	keyparts.PrefetchBuiltinHeaders()
	// So is what a process's first dependency record costs once: the
	// scanner's build (deps.PrepareProcess).
	go deps.PrepareProcess(deps.Input{})
	for _, d := range cl.Devices() {
		c.identity(d)
	}
	return c
}

// Context returns the OpenCL context the cache belongs to.
func (c *Cache) Context() *Context { return c.cl }

// Close commits every pending binary, releases every program and kernel
// no caller still holds, and waits, for at most 5 s (ctxwait.CloseWait),
// for the dependency records still being written: a process that exits past
// them would leave its next process to scan its sources again.
func (c *Cache) Close() {
	c.kernels.Close()
	c.programs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ctxwait.CloseWait)
	defer cancel()
	c.headers.WaitRecords(ctx)
}

// Key returns the kcache key of src built for dev: device and driver
// identity, source, every header it includes, options and the compiler's
// environment. An error wrapping deps.ErrUncacheable says no key can be
// trusted to change with the files the compiler reads; Program then builds
// without storing.
func (c *Cache) Key(dev Device, src Source) (*kcache.Key, error) {
	id := c.identity(dev)
	headers, options, err := c.dependencies(id.dev.Platform, src)
	if err != nil {
		return nil, err
	}
	return &kcache.Key{
		Device:   id.dev,
		Compiler: id.comp,
		Image:    kcache.Image{Format: FormatOpenCLC, Source: src.Code, Headers: headers},
		Options:  kcache.BuildOptions{Compile: options, Env: c.compilerEnv()},
	}, nil
}

// compilerEnv returns the variables of the environment that enter a key:
// CacheOptions.Environ's, or the process's own as it is now. A variable
// the application sets after making the cache (os.Setenv reaches the C
// library, whose environment the driver reads, PoCL its extra build
// flags at each build) keys the builds it changes.
func (c *Cache) compilerEnv() []kcache.EnvVar {
	if c.environ != nil {
		// The caller's environment: the process's history is not its.
		return keyparts.OpenCLEnv.Select(c.environ)
	}
	return processEnv()
}

// processEnv returns the variables of the process's environment that
// enter a key, as its driver sees them: now, with PoCL's extra build
// flags as PoCL holds them (keyparts.PoCLKeptExtraFlags: fixed by the first
// build that found them set), and each variable that differs from its
// value at device init a second time, as it was then.
func processEnv() []kcache.EnvVar {
	now := keyparts.OpenCLEnv.Select(os.Environ())
	if v, ok := keyparts.PoCLKeptExtraFlags(); ok {
		now = slices.DeleteFunc(now, func(e kcache.EnvVar) bool { return e.Name == "POCL_EXTRA_BUILD_FLAGS" })
		now = append(now, kcache.EnvVar{Name: "POCL_EXTRA_BUILD_FLAGS", Value: v})
	}
	return withInitEnv(now, keyparts.OpenCLEnv.Select(deviceInitEnv()))
}

// sameEnv reports whether a and b hold the same variables, in any order.
func sameEnv(a, b []kcache.EnvVar) bool {
	byName := func(x, y kcache.EnvVar) int {
		return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Value, y.Value))
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, byName)
	slices.SortFunc(b, byName)
	return slices.Equal(a, b)
}

// driverSeesKeyEnv reports whether the driver builds with the variables
// the key holds. The driver in this process reads the process's
// environment, whatever CacheOptions.Environ says: a key made from
// another environment may name a program only where the process's
// variables, now and at device init, are the same, or a build with the
// process's POCL_EXTRA_BUILD_FLAGS would be stored under a key without
// them.
func (c *Cache) driverSeesKeyEnv(key *kcache.Key) bool {
	if c.environ == nil {
		return true // the key holds the process's
	}
	return sameEnv(processEnv(), key.Options.Env)
}

func (c *Cache) identity(d Device) identity {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	id, ok := c.ids[d.Handle()]
	if !ok {
		id.dev, id.comp = deviceIdentity(d)
		c.ids[d.Handle()] = id
	}
	return id
}

// Program returns src built for dev, from the first place that has it:
// this context's live programs, the binary tiers, or the compiler. A build
// error is a *BuildError carrying the compiler's log; it is kept for this
// context, so a broken program is not recompiled on every call, and is
// never stored in the binary tiers. The caller must Release the result.
//
// A binary stored before any launch (by kcache build, a pre-warming
// command, an imported bundle) makes every process that loads it compile
// work-group functions at its kernels' first launches, and PoCL never adds
// them to a binary it was given. So the first process that finds such an
// entry, claiming it through the tiers so that only one does, builds the
// program from source instead; once its first launches have happened (on
// Commit, after CommitDelay, or on release) it replaces the entry with
// its binary, which holds the launch-time code. A rebuild whose program
// was not launched by then leaves the entry as it was. Program reports
// such a rebuild as built.
func (c *Cache) Program(ctx context.Context, dev Device, src Source) (*BuiltProgram, error) {
	key, err := c.Key(dev, src)
	if errors.Is(err, deps.ErrUncacheable) || err == nil && !c.driverSeesKeyEnv(key) {
		return c.uncached(ctx, dev, src)
	}
	if err != nil {
		return nil, err
	}
	// Prepared once: the object tier needs the digest, and the binary
	// tiers the digests and the encoding.
	prep := key.Prepare()
	pk := programKey{digest: prep.Digests().Key, device: dev.Handle()}
	if h, ok := c.programs.Get(pk); ok {
		c.bins.RecordMemory(true, h.Value().buildTime)
		return &BuiltProgram{h: h, c: c, Outcome: kcache.OutcomeMemory}, nil
	}
	c.bins.RecordMemory(false, 0)
	var outcome kcache.Outcome = kcache.OutcomeMemory // unless this call loads or builds it
	// A binary in the disk tier is loaded on this goroutine; only what
	// needs more (a remote tier, a cross-process lock, a rebuild, the
	// compiler) runs on a goroutine of the object tier's. Handing a load
	// to another goroutine woke another thread and put this one to sleep,
	// twice per program: on the 2-core machine that was a good part of a
	// warm start's time over the floor.
	h, err := c.programs.GetOrLoad(ctx, pk, func(ctx context.Context) (*programEntry, int64, bool) {
		e, ok := c.loadLocal(ctx, dev, src, prep)
		if ok {
			outcome = e.outcome
			return e, e.size, true
		}
		return nil, 0, false
	}, func(ctx context.Context) (*programEntry, int64, error) {
		e, err := c.load(ctx, dev, src, prep)
		if err != nil {
			return nil, 0, err
		}
		outcome = e.outcome
		return e, e.size, nil
	})
	if err != nil {
		return nil, err
	}
	return &BuiltProgram{h: h, c: c, Outcome: outcome}, nil
}

// load brings a program into this context from the binary tiers, or builds
// it from source. A binary the runtime refuses (a driver changed in place)
// is deleted from the tiers and the program built from source instead.
func (c *Cache) load(ctx context.Context, dev Device, src Source, prep *kcache.Prepared) (*programEntry, error) {
	key := prep.Key()
	r, pending, err := c.bins.LookupPrepared(ctx, prep)
	if err != nil {
		return nil, err
	}
	if pending == nil {
		if c.delay >= 0 && lacksLaunchCode(r.Binary) && c.claimRebuild(ctx, key) {
			e, err := c.fromSource(ctx, dev, src, r.Digest, key.Image.Headers, nil)
			if err == nil {
				if !e.unkept { // the build read what the key names: it may replace the entry
					e.arm(c.delay, &rebuild{bins: c.bins, key: key, old: len(r.Binary)})
				}
				return e, nil
			}
			c.bins.Logger().Warn("kcache: rebuilding an entry that lacks launch-time code failed; loading it", "key", r.Digest, "err", err)
		}
		p, err := c.fromBinary(dev, r.Binary, src.Options)
		if err == nil {
			return c.loadedEntry(p, dev, r, prep), nil
		}
		c.bins.Logger().Warn("kcache: runtime rejected a cached binary; rebuilding", "key", r.Digest, "err", err)
		if _, pending, err = c.bins.Discard(ctx, key); err != nil {
			return nil, err
		}
	}
	return c.fromSource(ctx, dev, src, r.Digest, key.Image.Headers, pending)
}

// loadLocal loads a program from the local binary tiers, where one has
// it, it is complete, and the runtime takes it. Anything else is left to
// load, which reads the tiers again and knows what each case calls for
// (the rebuild of an entry that lacks launch-time code, deleting a binary
// the runtime refuses).
func (c *Cache) loadLocal(ctx context.Context, dev Device, src Source, prep *kcache.Prepared) (*programEntry, bool) {
	r, err := c.bins.GetLocal(ctx, prep)
	if err != nil || c.delay >= 0 && lacksLaunchCode(r.Binary) {
		return nil, false
	}
	p, err := c.fromBinary(dev, r.Binary, src.Options)
	if err != nil {
		return nil, false
	}
	return c.loadedEntry(p, dev, r, prep), true
}

// loadedEntry is the object tier's entry of p, made from r's binary. It
// keeps no copy of the binary: the driver holds its own, and a copy per
// live program cost the Go heap its size and a warm start a page fault per
// page of every entry read, as the heap grew to hold them (PoCL's binaries
// are 50-500 KB). Blob reads the entry again.
func (c *Cache) loadedEntry(p *Program, dev Device, r kcache.Result, prep *kcache.Prepared) *programEntry {
	return &programEntry{prog: p, device: dev.Handle(), digest: r.Digest, outcome: r.Outcome,
		size: int64(len(r.Binary)), buildTime: r.BuildTime, stored: func(ctx context.Context) (kcache.Result, error) {
			return c.bins.ReadLocal(ctx, prep)
		}}
}

func (c *Cache) fromBinary(dev Device, bin []byte, options string) (*Program, error) {
	p, err := c.cl.ProgramWithBinary([]Device{dev}, [][]byte{bin})
	if err != nil {
		return nil, err
	}
	if err := p.Build([]Device{dev}, options); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// fromSource runs the compiler. pending, when not nil, is committed with
// the program's binary after the commit delay (see CacheOptions), unless
// the inputs of the key, whose headers are headers, changed meanwhile.
func (c *Cache) fromSource(ctx context.Context, dev Device, src Source, digest kcache.Digest, headers []kcache.Header, pending *kcache.Pending) (*programEntry, error) {
	start := time.Now()
	p, err := c.compile(dev, src, pending)
	took := time.Since(start)
	if err != nil {
		if pending != nil {
			pending.Abort(err)
		}
		return nil, c.classify(err)
	}
	// A file the key was computed from that changed during the build (or
	// was too new to trust), or a day that turned since the key's, makes
	// the program what the compiler read, not what the key names: it is
	// neither stored nor kept in the object tier, where a later request
	// with the file changed back would find it.
	exact := c.inputsUnchanged(dev, src, headers)
	if pending != nil && !exact {
		pending.Drop("a file the key was computed from changed during the build, or was too new to trust, or the day of __DATE__ turned")
		pending = nil
	}
	e := &programEntry{prog: p, device: dev.Handle(), digest: digest, outcome: kcache.OutcomeBuilt, pending: pending,
		buildTime: took, size: int64(len(src.Code)), unkept: !exact}
	if pending != nil {
		if c.delay < 0 {
			e.commit(ctx)
		} else {
			e.arm(c.delay, nil)
		}
	}
	return e, nil
}

// errCompileInterrupted aborts a pending build whose compile neither
// returned nor failed: a panic or runtime.Goexit inside it.
var errCompileInterrupted = errors.New("opencl: the compile panicked or its goroutine exited")

// testHookBeforeCompile, when set by a test, runs after the key was
// computed and before the compiler reads the sources.
var testHookBeforeCompile func()

// compile builds src from source for dev. If the compile panics or its
// goroutine exits, pending is aborted on the way out, so that the build
// lock it holds (other processes wait on it) goes with it.
func (c *Cache) compile(dev Device, src Source, pending *kcache.Pending) (p *Program, err error) {
	returned := false
	if pending != nil {
		defer func() {
			if !returned {
				pending.Abort(errCompileInterrupted)
			}
		}()
	}
	if testHookBeforeCompile != nil {
		testHookBeforeCompile()
	}
	p, err = c.cl.ProgramWithSource(string(src.Code))
	if err == nil {
		err = p.Build([]Device{dev}, src.Options)
		if err != nil {
			p.Release()
		}
	}
	returned = true
	return p, err
}

// arm schedules the delayed commit, of e's pending build or of the
// rebuild r. The timer is set under e.mu, which its callback takes first:
// a delay that expires at once must not see the fields half written.
func (e *programEntry) arm(delay time.Duration, r *rebuild) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rebuild = r
	e.timer = time.AfterFunc(delay, func() { e.commit(context.Background()) })
}

// FormatRebuildClaim is the image format of a claim, stored in the tiers
// beside an entry, that one process has rebuilt the entry to complete it
// (see Cache.Program). Its binary is a marker, not a program. The claim
// stays after the rebuild: whether or not the rebuild completed the
// entry, no other process need try again.
const FormatRebuildClaim = FormatOpenCLC + "+rebuilt"

// claimRebuild reports whether this process is the one to rebuild key's
// entry. The claim is a build of its own key: the first process to miss it
// stores it at once, and processes that miss it meanwhile wait on the
// first tier's build lock for that instant, then find it. A claim the
// tiers would not store (a read-only cache) is no claim: every process
// would rebuild, and none could replace the entry.
func (c *Cache) claimRebuild(ctx context.Context, key *kcache.Key) bool {
	claim := *key
	claim.Image.Format = FormatRebuildClaim
	_, pending, err := c.bins.Lookup(ctx, &claim)
	if err != nil || pending == nil {
		return false
	}
	pending.Commit(ctx, []byte("kcache: rebuilt to add launch-time code\n"), 0)
	_, err = c.bins.Get(ctx, &claim)
	return err == nil
}

// rebuild is what a program rebuilt to complete a tier's entry needs to
// replace that entry.
type rebuild struct {
	bins *kcache.Cache
	key  *kcache.Key
	old  int // the size of the binary it replaces
}

// replace stores bin in place of the entry, if bin holds launch-time code
// and the entry still lacks it. The tiers keep the first binary stored
// under a key, so the entry is deleted first; a process that looks the key
// up in between misses and waits on the build lock or builds, as it would
// on a cold cache.
func (r *rebuild) replace(ctx context.Context, bin []byte, buildTime time.Duration) {
	log := r.bins.Logger()
	if lacksLaunchCode(bin) || len(bin) <= r.old {
		log.Debug("kcache: rebuilt program was not launched before its binary was read; entry left as it was", "key", r.key.Digest())
		return
	}
	if cur, err := r.bins.Get(ctx, r.key); err == nil && (!lacksLaunchCode(cur.Binary) || len(cur.Binary) >= len(bin)) {
		return // completed meanwhile, by a build of another process
	}
	if err := r.bins.Delete(ctx, r.key); err != nil {
		log.Warn("kcache: replacing an entry that lacks launch-time code", "key", r.key.Digest(), "err", err)
		return
	}
	if err := r.bins.Put(ctx, r.key, kcache.Entry{Binary: bin, BuildTime: buildTime}); err != nil {
		log.Warn("kcache: storing a rebuilt binary", "key", r.key.Digest(), "err", err)
	}
}

// classify marks errors for the object tier: a compile error is a property
// of the input and is kept; running out of memory makes the tier evict and
// retry; anything else might not recur and is not kept.
func (c *Cache) classify(err error) error {
	var be *BuildError
	switch {
	case IsOutOfMemory(err): // before BuildError: a build can fail for want of memory
		return fmt.Errorf("%w: %w", objcache.ErrOutOfMemory, err)
	case errors.As(err, &be):
		return err
	default:
		return objcache.Transient(err)
	}
}

// releaseProgram runs once the object tier has dropped a program and no
// caller holds it. Its kernels, and the errors kept for names it lacks,
// leave the kernel tier first: their keys name the program's handle, which
// the runtime may give to a new program once this one is released.
func (c *Cache) releaseProgram(e *programEntry) {
	e.commit(context.Background())
	e.mu.Lock()
	kernels, failed := e.kernels, e.failed
	e.kernels, e.failed = nil, nil
	e.mu.Unlock()
	h := e.prog.Handle()
	for _, k := range kernels {
		c.kernels.Remove(kernelKey{program: h, name: k.Name()})
		k.k.Release()
	}
	for _, name := range failed {
		c.kernels.Remove(kernelKey{program: h, name: name})
	}
	e.prog.Release()
}

// programEntry is a live program in the object tier.
type programEntry struct {
	prog      *Program
	device    uintptr // the cl_device_id it was built for
	digest    kcache.Digest
	outcome   kcache.Outcome // how this process obtained it
	buildTime time.Duration  // what a build cost, for the time-saved count
	size      int64          // bytes counted toward the in-memory threshold
	// unkept: built from files that changed during the build; the object
	// tier hands it to the build's callers only (Keep).
	unkept bool
	// stored reads the binary the program was loaded from again, for
	// Blob; nil where the program was not loaded from the tiers.
	stored func(context.Context) (kcache.Result, error)

	mu      sync.Mutex      // guards the fields below
	pending *kcache.Pending // the binary tiers' build slot, until committed
	rebuild *rebuild        // the entry this program replaces, until committed
	timer   *time.Timer     // the delayed commit
	binary  []byte          // the stored binary, once known
	kernels []*SafeKernel   // kernels made from prog, released with it
	failed  []string        // names whose Kernel failed: their kept errors leave with prog
}

// Keep tells the object tier whether it may keep the program under its
// key: not one built from files that changed during the build.
func (e *programEntry) Keep() bool { return !e.unkept }

// commit reads the program's binary and stores it, once.
func (e *programEntry) commit(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
	}
	p, r := e.pending, e.rebuild
	e.pending, e.rebuild = nil, nil
	if p == nil && r == nil {
		return
	}
	bin, err := e.deviceBinary()
	switch {
	case err != nil && p != nil:
		p.Abort(err)
	case err != nil:
		r.bins.Logger().Warn("kcache: reading a rebuilt binary", "key", r.key.Digest(), "err", err)
	case p != nil:
		e.binary = bin
		p.Commit(ctx, bin, e.buildTime)
	default:
		e.binary = bin
		r.replace(ctx, bin, e.buildTime)
	}
}

// deviceBinary reads the program's binary for its device. A program made
// from source belongs to every device of its context, built or not, so
// the binaries come one per context device.
func (e *programEntry) deviceBinary() ([]byte, error) {
	devs, err := e.prog.Devices()
	if err != nil {
		return nil, fmt.Errorf("opencl: reading program devices: %w", err)
	}
	bins, err := e.prog.Binaries()
	if err != nil {
		return nil, fmt.Errorf("opencl: reading program binary: %w", err)
	}
	for i, d := range devs {
		if d.Handle() == e.device && i < len(bins) && len(bins[i]) > 0 {
			return bins[i], nil
		}
	}
	return nil, fmt.Errorf("opencl: program has no binary for its device")
}

// blob returns the program's binary, committing it first if need be.
func (e *programEntry) blob(ctx context.Context) ([]byte, error) {
	e.commit(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.binary == nil && e.stored != nil {
		// The entry it was loaded from: the same bytes, unless evicted
		// since, when the driver's binary of the program stands in.
		if r, err := e.stored(ctx); err == nil && r.Digest == e.digest {
			e.binary = r.Binary
		}
	}
	if e.binary == nil {
		bin, err := e.deviceBinary()
		if err != nil {
			return nil, err
		}
		e.binary = bin
	}
	return e.binary, nil
}

// BuiltProgram is a caller's hold on a cached program.
type BuiltProgram struct {
	h        *objcache.Handle[*programEntry]
	c        *Cache
	released atomic.Bool // this hold was given back
	// Outcome says where the program came from: built, waited, disk,
	// remote, or memory (a live program of this context).
	Outcome kcache.Outcome
}

// Program returns the OpenCL program. It stays valid until Release.
func (p *BuiltProgram) Program() *Program { return p.h.Value().prog }

// BlobID returns the key digest that identifies the program's binary: with
// Blob, what a user who keeps binaries in storage of their own needs.
func (p *BuiltProgram) BlobID() kcache.Digest { return p.h.Value().digest }

// Blob returns the program's binary, for storage of the caller's own.
// ProgramFromBlob turns it back into a program.
func (p *BuiltProgram) Blob(ctx context.Context) ([]byte, error) { return p.h.Value().blob(ctx) }

// Commit stores the program's binary in the binary tiers now, if it was
// built from source and not stored yet. Call it after the program's first
// launches to store a binary that a warm start needs to compile nothing
// more; see CacheOptions.CommitDelay.
func (p *BuiltProgram) Commit(ctx context.Context) { p.h.Value().commit(ctx) }

// Release lets go of the program. Release is idempotent: the holds of one
// program share one counted handle, so a second Release must not give back
// a reference that another holder's hold stands for.
func (p *BuiltProgram) Release() {
	if p.released.CompareAndSwap(false, true) {
		p.h.Release()
	}
}

// Kernel returns the program's kernel name, made once per program and
// shared: a hit takes no lock and allocates nothing. The kernel stays
// valid while the caller holds the program.
func (p *BuiltProgram) Kernel(name string) (*SafeKernel, error) {
	k := kernelKey{program: p.h.Value().prog.Handle(), name: name}
	if h, ok := p.c.kernels.Get(k); ok {
		h.Release() // the program's hold keeps the kernel alive
		return h.Value(), nil
	}
	e := p.h.Value()
	h, err := p.c.kernels.GetOrBuild(context.Background(), k, func(context.Context) (*SafeKernel, int64, error) {
		kern, err := e.prog.NewKernel(name)
		if err != nil {
			e.mu.Lock()
			e.failed = append(e.failed, name)
			e.mu.Unlock()
			return nil, 0, err
		}
		sk := &SafeKernel{k: kern}
		e.mu.Lock()
		e.kernels = append(e.kernels, sk)
		e.mu.Unlock()
		return sk, 0, nil
	})
	if err != nil {
		return nil, err
	}
	h.Release()
	return h.Value(), nil
}

// ProgramFromBlob makes a program of src for dev from a blob saved by
// Blob, and places it in the object tier under src's key. The runtime
// verifies the blob; a foreign or damaged one is an error.
func (c *Cache) ProgramFromBlob(ctx context.Context, dev Device, src Source, blob []byte) (*BuiltProgram, error) {
	key, err := c.Key(dev, src)
	if err != nil {
		return nil, err
	}
	pk := programKey{digest: key.Digest(), device: dev.Handle()}
	h, err := c.programs.GetOrBuild(ctx, pk, func(context.Context) (*programEntry, int64, error) {
		p, err := c.fromBinary(dev, blob, src.Options)
		if err != nil {
			return nil, 0, objcache.Transient(err)
		}
		e := &programEntry{prog: p, device: dev.Handle(), digest: pk.digest, outcome: kcache.OutcomeMemory, binary: blob, size: int64(len(blob))}
		return e, e.size, nil
	})
	if err != nil {
		return nil, err
	}
	return &BuiltProgram{h: h, c: c, Outcome: kcache.OutcomeMemory}, nil
}

// SafeKernel is a cached kernel that many goroutines may launch at once.
// An OpenCL kernel's arguments are state of the kernel object, so setting
// them and enqueuing must not interleave between goroutines; SafeKernel
// serializes the two. The enqueue captures the arguments, so the lock is
// held only for the calls, not for the kernel's execution.
type SafeKernel struct {
	mu sync.Mutex // serializes argument setting and enqueue
	k  *Kernel
}

// Name returns the kernel's function name.
func (k *SafeKernel) Name() string { return k.k.Name() }

// Run sets args (a *Buffer, a Local size, or a scalar SetArg accepts) and
// enqueues the kernel on q over global work items in work-groups of local
// (nil lets the runtime choose).
func (k *SafeKernel) Run(q *Queue, global, local []int, args ...any) (*Event, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, a := range args {
		var err error
		if b, ok := a.(*Buffer); ok {
			err = k.k.SetArgBuffer(i, b)
		} else {
			err = k.k.SetArg(i, a)
		}
		if err != nil {
			return nil, fmt.Errorf("opencl: %s argument %d: %w", k.k.Name(), i, err)
		}
	}
	return q.Run(k.k, global, local)
}

// Raw returns the underlying kernel, for a caller that launches it from
// one goroutine only; concurrent callers use Run or Use.
func (k *SafeKernel) Raw() *Kernel { return k.k }

// Use runs f with exclusive use of the underlying kernel, for callers that
// set arguments themselves.
func (k *SafeKernel) Use(f func(*Kernel) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return f(k.k)
}
