package cuda

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/trace"
	"slices"
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
	// Environ is the environment whose CUDA_* and NVRTC_* variables enter
	// the key; nil means os.Environ().
	Environ []string
	// JIT holds the driver's JIT options for loading modules (they matter
	// only for PTX). They are part of the key.
	JIT map[JITOption]int
	// PrefetchBytes bounds the direct records a new Cache reads ahead, on
	// a goroutine of its own, from the list of those its identity's
	// processes wrote last (prefetch.go): 0 means DefaultPrefetchBytes, a
	// negative number none.
	PrefetchBytes int
}

// Cache caches compiled modules and their functions for one context: the
// object tier (live modules by key, functions by name with a lock-free
// fast path) over kcache's binary tiers, with NVRTC as the builder. A
// Cache is safe for concurrent use.
type Cache struct {
	ctx     *Context
	bins    *kcache.Cache
	baseDir string // the configuration's base directory (kcache.Config.BaseDir)
	modules *objcache.Cache[kcache.Digest, *moduleEntry]
	scanner *deps.Scanner
	keys    *keyMemo // the last key of each source
	// uncached builds modules whose dependencies cannot be bounded: they
	// are never stored, nor kept once released.
	uncached *objcache.Cache[uint64, *moduleEntry]
	nextID   atomic.Uint64
	env      []kcache.EnvVar
	jit      map[JITOption]int
	id       identity
	warnPTX  sync.Once
	// directOnce computes directDigest, the part of every direct
	// record's name that the cache's identity makes (direct.go).
	directOnce   sync.Once
	directDigest kcache.Digest
	// ahead holds the direct records read ahead (prefetch.go).
	ahead prefetched
}

// NewCache returns a cache of modules for ctx over the binary tiers of
// bins. It reads the device's, driver's and NVRTC's identity once, here;
// a machine without NVRTC gets an error wrapping ErrNoNVRTC. The in-memory
// settings of bins's configuration apply to the object tier.
func NewCache(ctx *Context, bins *kcache.Cache, opts CacheOptions) (*Cache, error) {
	id, err := deviceIdentity(ctx.Device())
	if err != nil {
		return nil, err
	}
	cfg := bins.Config()
	c := &Cache{ctx: ctx, bins: bins, scanner: deps.NewScanner(bins.Logger(), deps.WithRecords(bins)), keys: newKeyMemo(), env: compilerEnv.Select(keyparts.Environ(opts.Environ)), jit: opts.JIT, id: id, baseDir: cfg.BaseDir}
	c.modules = objcache.New[kcache.Digest, *moduleEntry](objcache.Options[*moduleEntry]{
		Threshold: cfg.InMemoryThreshold,
		Disabled:  !cfg.InMemory,
		Release:   c.unload,
	})
	c.uncached = objcache.New[uint64, *moduleEntry](objcache.Options[*moduleEntry]{Disabled: true, Release: c.unload})
	if budget := cmp.Or(opts.PrefetchBytes, DefaultPrefetchBytes); budget > 0 {
		go c.prefetch(context.Background(), budget)
	}
	go c.prepareFirstRequest()
	return c, nil
}

// prepareFirstRequest computes, on a goroutine of its own while the
// application sets up, what every direct record's name needs and only a
// process's first request would compute (direct.go): the scanner's build,
// the digest of NVRTC's macros, NVRTC's version and the part of the name
// the cache's identity makes, which waits for the compiler files' digest.
// On the H200 host they were about 30 us of a new process's first request
// (bench/RESULTS-cuda.md, round seventeen). A request that comes first
// waits for each where it is not done.
func (c *Cache) prepareFirstRequest() {
	deps.PrepareProcess(nvrtcInput(Source{}, plan{})) // the macros every input holds
	c.directBase()
}

// Context returns the context the cache loads modules into.
func (c *Cache) Context() *Context { return c.ctx }

// Close unloads every module no caller still holds and waits, for at
// most 5 s (ctxwait.CloseWait), for the dependency records still being
// written: a process that exits past them would leave its next process
// to scan its sources again.
func (c *Cache) Close() {
	c.modules.Close()
	c.uncached.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ctxwait.CloseWait)
	defer cancel()
	c.scanner.WaitRecords(ctx)
}

// Arch returns the architecture builds target by default ("sm_90"), and
// whether NVRTC can only reach it through PTX.
func (c *Cache) Arch() (arch string, ptx bool) { return c.id.arch, c.id.ptx }

// plan is how one source is compiled: NVRTC's options as given to it and
// the format of the result.
type plan struct {
	options []string
	format  string
	// keyOptions are the options as the key holds them: options, or
	// under a base directory, relocated (deps.RelocateArgs); baseDir is
	// that directory, for the scan, where relocation applies.
	keyOptions []string
	baseDir    string
}

// plan adds the target architecture to the options where they name none:
// the device's own, for CUBIN, or where NVRTC cannot target it, the newest
// virtual architecture it can, for PTX. Options that name an architecture
// are kept: compute_XX gives PTX, sm_XX gives CUBIN.
func (c *Cache) plan(src Source) (plan, error) {
	p, err := c.target(src)
	p.keyOptions = p.options
	if err != nil || c.baseDir == "" {
		return p, err
	}
	if rel, ok := deps.RelocateArgs(p.options, c.baseDir); ok {
		p.keyOptions, p.baseDir = rel, c.baseDir
	}
	return p, nil
}

// target returns src's options with the target architecture, and the
// format they make.
func (c *Cache) target(src Source) (plan, error) {
	opts := append(make([]string, 0, len(src.Options)+1), src.Options...) // room for the architecture
	if !hasArch(opts) {
		if c.id.ptx {
			archs, err := SupportedArchs()
			if err != nil {
				return plan{}, err
			}
			c.warnPTX.Do(func() { c.bins.Logger().Warn("kcache: " + c.id.reason) })
			return plan{options: append(opts, "-arch="+ptxArchFor(c.id.cc, archs)), format: FormatPTX}, nil
		}
		return plan{options: append(opts, "-arch="+c.id.arch), format: FormatCUBIN}, nil
	}
	if arch := archOption(opts); len(arch) > 3 && arch[:3] == "sm_" {
		return plan{options: opts, format: FormatCUBIN}, nil
	}
	return plan{options: opts, format: FormatPTX}, nil
}

// Key returns the kcache key of src for this cache's device: device,
// driver and NVRTC identity, the source and every header it includes (on
// disk, found as NVRTC finds them, and in memory), the name expressions
// (as the key's specialization), the options NVRTC gets (the program's name
// first, since NVRTC writes it into line info; the target architecture
// included), the JIT options, and the CUDA_*/NVRTC_* environment.
func (c *Cache) Key(ctx context.Context, src Source) (*kcache.Key, error) {
	p, err := c.plan(src)
	if err != nil {
		return nil, err
	}
	return c.key(ctx, src, p)
}

// headers returns every header of src for its key: those in memory, and
// the files the source and those headers include, found by the dependency
// scanner as NVRTC finds them: quoted includes of the program in its
// path's directory first, then the -I directories.
func (c *Cache) headers(ctx context.Context, src Source, p plan) ([]kcache.Header, error) {
	return c.scanned(ctx, memoryHeaders(src), src, p)
}

// memoryHeaders returns the key's headers for src's headers in memory.
func memoryHeaders(src Source) []kcache.Header {
	var out []kcache.Header
	for _, h := range src.Headers {
		out = append(out, kcache.HeaderOf("memory:"+h.Name, h.Content))
	}
	return out
}

// scanned appends to dst the files src includes, as the scanner finds
// them.
func (c *Cache) scanned(ctx context.Context, dst []kcache.Header, src Source, p plan) ([]kcache.Header, error) {
	for _, in := range scanInputs(src, p) {
		var err error
		if dst, err = c.scanner.AppendHeaders(ctx, dst, in); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// inputsUnchanged reports whether every file src's key was computed from
// is as the scan saw it, and was settled then, and whether the day the
// key holds, for a source that expands __DATE__, is still today's (the
// key's headers): only then may an image compiled after the scan be
// stored under that key.
func (c *Cache) inputsUnchanged(src Source, p plan, headers []kcache.Header) bool {
	return c.scanner.Holds(scanInputs(src, p), memoryHeaders(src), headers) && c.scanner.DayUnchanged(headers)
}

func (c *Cache) key(ctx context.Context, src Source, p plan) (*kcache.Key, error) {
	headers, err := c.headers(ctx, src, p)
	if err != nil {
		return nil, err
	}
	return c.keyWith(src, p, headers), nil
}

// prepared returns src's key, prepared: the one remembered for src where
// the scan finds the headers it was computed from (keymemo.go), else a
// new one.
func (c *Cache) prepared(ctx context.Context, src Source, p plan) (*kcache.Prepared, error) {
	prep, _, err := c.preparedKey(ctx, src, p, false, c.keys.lookup(src))
	return prep, err
}

// preparedKey is prepared, except that with early the headers may come
// from a dependency record whose stats are still running (scannedEarly):
// nothing found with the key may be used before confirm returns true.
// found is the key memo's lookup of src.
func (c *Cache) preparedKey(ctx context.Context, src Source, p plan, early bool, found memoLookup) (*kcache.Prepared, deps.Confirm, error) {
	e := found.e
	scanned, confirm, err := c.scannedEarly(ctx, src, p, early)
	if err != nil {
		return nil, nil, err
	}
	if prep, ok := e.prepared(scanned); ok {
		return prep, confirm, nil
	}
	headers := scanned // the scan's own slice, which nothing changes
	if len(src.Headers) > 0 {
		headers = append(memoryHeaders(src), scanned...)
	}
	prep := c.keyWith(src, p, headers).Prepare()
	if e.directFor(scanned) && prep.Digests().Key != e.digest {
		// Never expected: a direct record names the key of exactly these
		// inputs. The key computed here is the one the tiers trust.
		c.bins.Logger().Warn("kcache: a direct record named another key than its inputs'", "program", programName(src),
			"record", e.digest, "key", prep.Digests().Key)
	}
	c.keys.put(found.h, src, scanned, prep)
	return prep, confirm, nil
}

// keyWith returns src's key with the headers found for it.
func (c *Cache) keyWith(src Source, p plan, headers []kcache.Header) *kcache.Key {
	spec := make([]kcache.SpecConstant, len(src.NameExpressions))
	for i, e := range src.NameExpressions {
		spec[i] = kcache.SpecConstant{ID: uint32(i), Value: []byte(e)}
	}
	return &kcache.Key{
		Device:   c.id.dev,
		Compiler: c.id.compiler(),
		Image:    kcache.Image{Format: FormatCUDA, Source: src.Code, Headers: headers},
		Spec:     spec,
		Options:  kcache.BuildOptions{Compile: encodeOptions(programName(src), p.keyOptions), Link: c.jitLink(), Env: c.env},
	}
}

// jitLink returns the JIT options as a key holds them.
func (c *Cache) jitLink() string {
	link := ""
	if len(c.jit) > 0 { // sorting an empty map's keys allocates all the same
		for _, k := range slices.Sorted(maps.Keys(c.jit)) {
			link += fmt.Sprintf("jit%d=%d ", k, c.jit[k])
		}
	}
	return link
}

// Module returns src compiled and loaded, from the first place that has
// it: this context's live modules, the binary tiers, or NVRTC. A compile
// error is a *CompileError carrying NVRTC's log; it is kept for this
// context, so a broken program is not recompiled on every call, and is
// never stored in the binary tiers. The caller must Release the result.
func (c *Cache) Module(ctx context.Context, src Source) (*CachedModule, error) {
	region := trace.StartRegion(ctx, regionPlan)
	p, err := c.plan(src)
	if err != nil {
		region.End()
		return nil, err
	}
	// A key that takes long is a cold miss's: its compile may begin in
	// the compile server meanwhile (serveclient.go).
	ctx, endEarly := c.beginEarly(ctx, src, p)
	defer endEarly()
	// A source this process has no key of comes first from its direct
	// record: one file (direct.go). The key memo is looked up once for
	// both ways: the lookup hashes the source.
	var req *directRequest
	found := c.keys.lookup(src)
	region.End()
	if found.e == nil {
		var m *CachedModule
		if m, req = c.moduleDirect(ctx, src, p, found.h); m != nil {
			return m, nil
		}
	}
	// A new process's first key comes from a dependency record whose
	// stats run while the module is looked up; what that finds is used
	// only once they all held, and where one did not, the key is
	// computed again (scaninput.go).
	m, held, err := c.module(ctx, src, p, true, found)
	for tries := 0; !held; tries++ {
		// Computed from the files, the key holds; a call is not held only
		// where it joined another's build or load that stopped, and asks
		// again (a few times: each such stop means a file changed, or a
		// stored image failed, just now).
		if tries == maxModuleTries {
			return nil, fmt.Errorf("cuda: %s: %d lookups in a row joined builds that stopped: %w", programName(src), tries, errStaleRecord)
		}
		m, held, err = c.module(ctx, src, p, false, c.keys.lookup(src))
	}
	if err == nil && req != nil {
		c.storeDirect(ctx, req, src, p, m)
	}
	return m, err
}

// Module marks its steps as regions of an execution trace (runtime/trace;
// free where no trace runs), so that a trace of an application shows
// where a request's time goes: its plan and key memo, its key, its direct
// record, its binary tiers' read, the image's decode, the driver's load,
// the check of a record's stats and the memos kept after.
const (
	regionPlan   = "kcache.plan"
	regionKey    = "kcache.key"
	regionDirect = "kcache.direct-record"
	// Within it: the record's name, its decode, and the adoption of the
	// dependency records it holds.
	regionDirectName   = "kcache.direct-name"
	regionDirectDecode = "kcache.direct-decode"
	regionAdopt        = "kcache.adopt"
	regionRead         = "kcache.read"
	regionDecode       = "kcache.decode"
	regionLoad         = "kcache.load"
	regionConfirm      = "kcache.confirm"
	regionRemember     = "kcache.remember"
)

// maxModuleTries bounds Module's lookups after the first that was not held.
const maxModuleTries = 4

// errStaleRecord stops a build under a key whose dependency record did
// not hold: Module computes the key again.
var errStaleRecord = errors.New("cuda: dependency record stale")

// module is Module with its plan: held is false, and nothing is returned,
// when the key came early from a dependency record that did not hold.
func (c *Cache) module(ctx context.Context, src Source, p plan, early bool, found memoLookup) (_ *CachedModule, held bool, _ error) {
	// Prepared once: the object tier needs the digest, and the binary
	// tiers the digests and the encoding.
	region := trace.StartRegion(ctx, regionKey)
	prep, confirm, err := c.preparedKey(ctx, src, p, early, found)
	region.End()
	if errors.Is(err, deps.ErrUncacheable) {
		m, err := c.moduleUncached(ctx, src, p, err)
		return m, true, err
	}
	if err != nil {
		return nil, true, err
	}
	d := prep.Digests().Key
	if h, ok := c.modules.Get(d); ok {
		if !confirm() {
			h.Release()
			return nil, false, nil
		}
		c.bins.RecordMemory(true, h.Value().buildTime)
		return &CachedModule{h: h, Outcome: kcache.OutcomeMemory}, true, nil
	}
	c.bins.RecordMemory(false, 0)
	outcome := kcache.OutcomeMemory // unless this call loads it
	// A module in the disk tier is loaded on this goroutine; only what
	// needs more (a remote tier, a cross-process lock, NVRTC) is built on
	// a goroutine of the object tier's, and only under a key that held.
	h, err := c.modules.GetOrLoad(ctx, d, func(ctx context.Context) (*moduleEntry, int64, bool) {
		e, ok := c.loadLocal(ctx, prep)
		if ok {
			outcome = e.outcome
			return e, int64(len(e.blob)), true
		}
		return nil, 0, false
	}, func(ctx context.Context) (*moduleEntry, int64, error) {
		if !confirm() {
			return nil, 0, objcache.Transient(errStaleRecord)
		}
		e, err := c.load(ctx, src, prep, p)
		if err != nil {
			return nil, 0, err
		}
		outcome = e.outcome
		return e, int64(len(e.blob)), nil
	})
	if !confirm() || errors.Is(err, errStaleRecord) || errors.Is(err, errDirectUnusable) {
		// What the key found is the binary of the record's files, kept
		// under its own key; it is not the binary of these. (A caller
		// whose key held gets errStaleRecord from another's build, which
		// stopped, or errDirectUnusable from a direct record's load that
		// failed: it computes its key again too.)
		if err == nil {
			h.Release()
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return &CachedModule{h: h, Outcome: outcome}, true, nil
}

// moduleUncached compiles a source whose dependencies cannot be bounded:
// no key could be trusted to change with them, so the module is neither
// stored nor kept. The build goes on; the cache never makes it fail.
func (c *Cache) moduleUncached(ctx context.Context, src Source, p plan, why error) (*CachedModule, error) {
	c.bins.Logger().Warn("kcache: compiling without caching", "program", programName(src), "reason", why)
	h, err := c.uncached.GetOrBuild(ctx, c.nextID.Add(1), func(ctx context.Context) (*moduleEntry, int64, error) {
		e, err := c.compile(ctx, src, p, nil, nil)
		if err != nil {
			return nil, 0, err
		}
		return e, int64(len(e.blob)), nil
	})
	if err != nil {
		return nil, err
	}
	return &CachedModule{h: h, Outcome: kcache.OutcomeBuilt}, nil
}

// load brings a module into the context from the binary tiers, or
// compiles it. An entry that does not decode or that the driver refuses is
// deleted from the tiers and the program compiled afresh.
func (c *Cache) load(ctx context.Context, src Source, prep *kcache.Prepared, p plan) (*moduleEntry, error) {
	r, pending, err := c.bins.LookupPrepared(ctx, prep)
	if err != nil {
		return nil, err
	}
	if pending == nil {
		e, err := c.fromBlob(r.Binary)
		if err == nil {
			e.digest, e.outcome, e.buildTime = r.Digest, r.Outcome, r.BuildTime
			return e, nil
		}
		if IsOutOfMemory(err) {
			return nil, c.classify(err)
		}
		c.bins.Logger().Warn("kcache: cached CUDA image unusable; recompiling", "key", r.Digest, "err", err)
		if _, pending, err = c.bins.Discard(ctx, prep.Key()); err != nil {
			return nil, err
		}
	}
	return c.compile(ctx, src, p, prep, pending)
}

// loadLocal loads a module from the local binary tiers, where one has
// it and it loads. Any failure is left to load, which reads the tiers
// again and knows what each failure calls for (deleting a damaged
// entry, evicting on out of memory).
func (c *Cache) loadLocal(ctx context.Context, prep *kcache.Prepared) (*moduleEntry, bool) {
	region := trace.StartRegion(ctx, regionRead)
	r, err := c.bins.GetLocal(ctx, prep)
	region.End()
	if err != nil {
		return nil, false
	}
	e, err := c.fromBlob(r.Binary)
	if err != nil {
		return nil, false
	}
	e.digest, e.outcome, e.buildTime = r.Digest, r.Outcome, r.BuildTime
	return e, true
}

// fromBlob decodes a stored image and loads it.
func (c *Cache) fromBlob(blob []byte) (*moduleEntry, error) {
	region := trace.StartRegion(context.Background(), regionDecode)
	im, err := decodeImage(blob)
	region.End()
	if err != nil {
		return nil, err
	}
	defer trace.StartRegion(context.Background(), regionLoad).End()
	m, err := c.ctx.LoadModule(im.code, c.jit)
	if err != nil {
		return nil, err
	}
	return &moduleEntry{mod: m, format: im.format, lowered: im.lowered, blob: blob}, nil
}

// compile runs NVRTC, stores the image in the binary tiers (pending, when
// not nil), then loads it. The image is stored before it is loaded: it is
// valid whether or not the device has memory for it now, and a load that
// runs out of memory is retried by the object tier after evicting, which
// then finds it stored.
func (c *Cache) compile(ctx context.Context, src Source, p plan, prep *kcache.Prepared, pending *kcache.Pending) (*moduleEntry, error) {
	var digest kcache.Digest // none for a source compiled uncached (prep nil)
	var headers []kcache.Header
	if prep != nil {
		digest, headers = prep.Digests().Key, prep.Key().Image.Headers
	}
	if testHookBeforeCompile != nil {
		testHookBeforeCompile()
	}
	start := time.Now()
	im, err := c.build(ctx, src, p, digest)
	took := time.Since(start)
	if err != nil {
		if pending != nil {
			pending.Abort(err)
		}
		return nil, c.classify(err)
	}
	blob := im.encode()
	// An image whose key may not be of what was compiled (a file changed
	// during the compile) is neither stored nor kept in the object tier,
	// where a later request with the file changed back would find it.
	var stored, exact bool
	if pending != nil {
		stored = c.commit(ctx, src, p, headers, pending, blob, took)
		exact = stored
	} else {
		exact = c.inputsUnchanged(src, p, headers)
	}
	m, err := c.ctx.LoadModule(im.code, c.jit)
	if err != nil {
		return nil, c.classify(err)
	}
	if im.format == FormatPTX {
		c.bins.Logger().Debug("kcache: loaded PTX; the driver JIT-compiled it", "key", digest, "jit_ms", m.JITMillis)
	}
	return &moduleEntry{mod: m, format: im.format, lowered: im.lowered, blob: blob, digest: digest,
		outcome: kcache.OutcomeBuilt, buildTime: took, stored: stored, unkept: !exact}, nil
}

// testHookBeforeCompile, when set by a test, runs after the key was
// computed and before the compiler runs: where a file saved during a build
// falls.
var testHookBeforeCompile func()

// commit stores a compiled image under the key computed before the
// compile, unless the key may not be of what was compiled: a file it was
// computed from changed meanwhile, or NVRTC predefines a name the key
// assumed it does not. The image is then used but not stored. It reports
// whether the image was committed.
func (c *Cache) commit(ctx context.Context, src Source, p plan, headers []kcache.Header, pending *kcache.Pending, blob []byte, took time.Duration) bool {
	if !c.inputsUnchanged(src, p, headers) {
		pending.Drop("a file the key was computed from changed during the compile, or was too new to trust")
		return false
	}
	if err := c.checkAssumptions(ctx, src, p); err != nil {
		pending.Drop(err.Error())
		return false
	}
	pending.Commit(ctx, blob, took)
	return true
}

// runNVRTC compiles src with p's options and returns the image to store.
func runNVRTC(src Source, p plan) (*image, error) {
	prog, err := NewProgram(src.Code, programName(src), src.Headers)
	if err != nil {
		return nil, err
	}
	defer prog.Destroy()
	for _, e := range src.NameExpressions {
		if err := prog.AddNameExpression(e); err != nil {
			return nil, err
		}
	}
	if err := prog.Compile(p.options); err != nil {
		return nil, err
	}
	im := &image{format: p.format}
	if len(src.NameExpressions) > 0 {
		im.lowered = make(map[string]string, len(src.NameExpressions))
		for _, e := range src.NameExpressions {
			if im.lowered[e], err = prog.LoweredName(e); err != nil {
				return nil, err
			}
		}
	}
	if p.format == FormatCUBIN {
		im.code, err = prog.CUBIN()
	} else {
		im.code, err = prog.PTX()
	}
	return im, err
}

// classify marks errors for the object tier: a compile error is a property
// of the input and is kept; running out of memory makes the tier evict and
// retry; anything else might not recur and is not kept.
func (c *Cache) classify(err error) error {
	var ce *CompileError
	var ne *NVRTCError
	switch {
	case IsOutOfMemory(err), errors.As(err, &ne) && ne.OutOfMemory():
		return fmt.Errorf("%w: %w", objcache.ErrOutOfMemory, err)
	case errors.As(err, &ce):
		return err
	default:
		return objcache.Transient(err)
	}
}

// unload runs once the object tier has dropped a module and no caller
// holds it.
func (c *Cache) unload(e *moduleEntry) {
	if err := e.mod.Unload(); err != nil {
		c.bins.Logger().Warn("kcache: unloading a CUDA module", "key", e.digest, "err", err)
	}
}

// moduleEntry is a live module in the object tier.
type moduleEntry struct {
	mod       *Module
	format    string
	lowered   map[string]string
	blob      []byte // the stored image; also keeps the loaded code alive
	digest    kcache.Digest
	outcome   kcache.Outcome
	buildTime time.Duration
	// stored says this process compiled the image and committed it to
	// the binary tiers under digest: the key held through the compile.
	stored bool
	// unkept says the key may not be of the image (a file changed during
	// the compile): the object tier hands it to the build's callers only.
	unkept bool
	funcs  sync.Map // name or name expression -> *Function
}

// Keep tells the object tier whether it may keep the module under its key.
func (e *moduleEntry) Keep() bool { return !e.unkept }

// CachedModule is a caller's hold on a cached module.
type CachedModule struct {
	h *objcache.Handle[*moduleEntry]
	// Outcome says where the module came from: built, waited, disk,
	// remote, or memory (a live module of this context).
	Outcome kcache.Outcome
}

// Module returns the loaded module. It stays valid until Release.
func (m *CachedModule) Module() *Module { return m.h.Value().mod }

// Format returns the format of the loaded code: FormatCUBIN, or FormatPTX
// where the driver JIT-compiles it at every load.
func (m *CachedModule) Format() string { return m.h.Value().format }

// Digest returns the key digest that identifies the module's image.
func (m *CachedModule) Digest() kcache.Digest { return m.h.Value().digest }

// Image returns the code the driver loaded (CUBIN or PTX).
func (m *CachedModule) Image() []byte {
	im, err := decodeImage(m.h.Value().blob)
	if err != nil {
		return nil
	}
	return im.code
}

// LoweredNames returns the mangled name of each name expression.
func (m *CachedModule) LoweredNames() map[string]string { return maps.Clone(m.h.Value().lowered) }

// Release lets go of the module. Release is idempotent.
func (m *CachedModule) Release() { m.h.Release() }

// Function returns a function of the module by name expression (one of
// Source.NameExpressions) or by its name in the image (an extern "C" name
// or a mangled one). Each is looked up once per module: a hit takes no
// lock and allocates nothing. The function stays valid while the caller
// holds the module.
func (m *CachedModule) Function(name string) (*Function, error) {
	e := m.h.Value()
	if f, ok := e.funcs.Load(name); ok {
		return f.(*Function), nil
	}
	symbol := cmp.Or(e.lowered[name], name)
	f, err := e.mod.Function(symbol)
	if err != nil {
		return nil, err
	}
	actual, _ := e.funcs.LoadOrStore(name, f)
	return actual.(*Function), nil
}
