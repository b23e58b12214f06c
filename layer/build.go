package main

/*
#include "layer.h"
*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/layerstore"
)

// step is a call that turns a source program into a binary the layer
// stores: clBuildProgram (an executable) or clCompileProgram (a compiled
// object, which the application then links).
type step struct {
	// format names the step's entries in a key's Image.Format. They hold
	// a record (binary and build log), not the library's bare binary, so
	// they never share a key with the library's entries, nor an object
	// with an executable.
	format string
	kind   C.int // what a program made from the step's entries is (KC_CACHED_*)
	// run is the driver's call on the source program.
	run func(p C.cl_program, devs []C.cl_device_id, options string) C.cl_int
	// finish builds a program made from cached binaries, as the
	// application's build would have; a compiled object is used as is.
	finish bool
	// delayed stores after the commit delay, once the first launches have
	// completed the binary; a compiled object is complete at once.
	delayed bool
}

var (
	buildStep   = step{format: layerstore.FormatBuild, kind: C.KC_CACHED_EXECUTABLE, run: buildProgram, finish: true, delayed: true}
	compileStep = step{format: layerstore.FormatCompiled, kind: C.KC_CACHED_OBJECT, run: compileProgram}
)

// program is what the Go half knows of one application program.
type program struct {
	src C.cl_program  // the driver's source program; the handle owns it
	w   *C.kc_program // the application's handle; nil for a linked program
	pid int           // the process that built it: a forked child stores nothing of its parent's

	mu      sync.Mutex   // guards the fields below; held while the program's binary is read, never across an API call
	done    bool         // a build went through the cache: later builds pass through
	dead    bool         // released: its binaries must not be read any more
	slots   []*slot      // one per device of the cached build
	builtAt time.Time    // when the driver built it, for the commit delay
	real    C.cl_program // the program the slots' binaries are read from
	opts    string       // the options of the cached build, which a program made from a compiled object does not know
	// ownRef: the layer holds a reference to real (a linked program, which
	// has no handle of the layer's), released once its binaries are stored.
	ownRef bool
	// bg: built for PoCL devices, so stored through build orders unless
	// the application reads the binary itself (background).
	bg bool
}

// slot is one device's entry of a program.
type slot struct {
	dev       C.cl_device_id
	index     int // the device's position in the program's device list
	key       *kcache.Key
	cwd       string          // the working directory of the build, for its order
	pending   *kcache.Pending // the build lock, until the binary is stored
	hit       bool            // the entry came from the cache
	log       string          // the compiler's log for this device
	stored    int             // size of the binary in the cache, 0 if none yet
	buildTime time.Duration
	bin       []byte // a hit's binary, until the program is made from it
	// unchanged reports whether the files the key was computed from are
	// still as the scan saw them (see depsScanner).
	unchanged func() bool
	// inexact: the build's files changed while it ran, or were too new
	// to trust, so the driver's binary may not be of the key; a link of it
	// is not keyed by it (linkSlots).
	inexact bool
	// order is the slot's build order, encoded beside the application
	// once the build is done (prepareOrders); nil where none was.
	order *encodedOrder
}

var errDeviceSubset = errors.New("build for a subset of the program's devices")

func (l *layer) state(w *C.kc_program) *program {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.progs[w]
	if !ok {
		p = &program{src: C.kc_source(w), w: w, pid: os.Getpid()}
		l.progs[w] = p
	}
	return p
}

// build answers clBuildProgram or clCompileProgram (st) for a program made
// from source: from the cache when every device's binary is there, else
// by the driver from the source, storing what it builds. driver receives
// the driver's status once it has run the step on the source, so that a
// panic does not run it twice.
func (l *layer) build(ctx context.Context, w *C.kc_program, st step, devs []C.cl_device_id, opts string, driver *C.cl_int) C.cl_int {
	p := l.state(w)
	p.mu.Lock()
	again := p.done
	p.mu.Unlock()
	if again {
		// A rebuild (new options, say) is the driver's business: its rules
		// about attached kernels apply to the source program.
		l.forgetProgram(ctx, w)
		C.kc_use_source(w)
		*driver = st.run(p.src, devs, opts)
		return *driver
	}
	start := time.Now()
	slots, err := l.lookup(ctx, p.src, st, devs, opts)
	l.log.Debug("kcache layer: looked up", "took", time.Since(start))
	switch {
	case errors.Is(err, deps.ErrUncacheable):
		l.log.Debug("kcache layer: dependencies cannot be bounded; the driver builds without the cache", "err", err)
	case err != nil && !errors.Is(err, errDeviceSubset):
		l.warn("no key for a program", "err", err)
	}
	if err != nil {
		*driver = st.run(p.src, devs, opts)
		return *driver
	}
	if hitAll(slots) {
		prog, err := l.fromCache(p.src, st, slots, opts)
		if err == nil {
			C.kc_adopt(w, prog, st.kind)
			l.adopted(p, slots, prog, opts)
			return C.CL_SUCCESS
		}
		l.warn("the driver refused a cached binary; rebuilding it", "err", err)
		l.forget(ctx, slots)
	}
	start = time.Now()
	status := st.run(p.src, devs, opts)
	took := time.Since(start)
	l.log.Debug("kcache layer: built", "took", took)
	*driver = status
	if status != C.CL_SUCCESS {
		for _, s := range slots {
			if s.pending != nil {
				s.pending.Abort(clError(status))
			}
		}
		return status
	}
	l.built(ctx, p, st, slots, took)
	return status
}

func hitAll(slots []*slot) bool {
	return !slices.ContainsFunc(slots, func(s *slot) bool { return !s.hit })
}

// lookup computes each device's key and looks it up (lookupSlots).
func (l *layer) lookup(ctx context.Context, src C.cl_program, st step, devs []C.cl_device_id, opts string) ([]*slot, error) {
	all, err := programDevices(src)
	if err != nil {
		return nil, err
	}
	if len(devs) > 0 && !sameSet(devs, all) {
		// The driver's program would have more devices than a program made
		// from binaries for the subset: leave it to the driver.
		return nil, errDeviceSubset
	}
	code, err := programSource(src)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(l.env); err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, errors.New("program has no devices")
	}
	ids := l.ids.all(all)
	// A program's devices share its context, and so its platform.
	headers, unchanged, err := l.scan.headers(ctx, code, opts, cwd, l.ids.platform(all[0]))
	if err != nil {
		return nil, err
	}
	idl, err := ids()
	if err != nil {
		return nil, err
	}
	slots := make([]*slot, len(all))
	for i, d := range all {
		id := idl[i]
		slots[i] = &slot{dev: d, index: i, unchanged: unchanged, cwd: cwd,
			key: layerstore.Key(id.dev, id.comp, st.format, code, headers, opts, l.env)}
	}
	l.lookupSlots(ctx, slots)
	return slots, nil
}

// lookupSlots looks every slot's key up. Misses come back holding the
// key's build lock, taken in digest order so that processes building for
// several devices cannot deadlock on each other's locks.
func (l *layer) lookupSlots(ctx context.Context, slots []*slot) {
	order := slices.Clone(slots)
	digests := map[*slot]kcache.Digest{}
	for _, s := range order {
		digests[s] = s.key.Digest()
	}
	slices.SortFunc(order, func(a, b *slot) int { d1, d2 := digests[a], digests[b]; return bytes.Compare(d1[:], d2[:]) })
	l.unblock(ctx, order)
	for _, s := range order {
		l.lookupSlot(ctx, s)
	}
}

// probeWait is how long unblock tries a build lock before taking it for
// another process's: a free lock is taken in microseconds.
const probeWait = 5 * time.Millisecond

// unblock stores this process's pending programs before it looks keys up,
// if another process holds one of the keys' build locks: a process that
// waited for another's lock while holding locks of its own until its next
// commit point could wait on a process waiting on it (two processes
// building the same programs in opposite orders), each for
// KCACHE_BUILD_WAIT. Programs stored here have not been launched yet, so
// they lose the work-group functions of their first launches; a process
// with nothing pending, or whose keys are free, loses nothing.
func (l *layer) unblock(ctx context.Context, slots []*slot) {
	l.mu.Lock()
	due := slices.Clone(l.due)
	l.mu.Unlock()
	if len(due) == 0 || !slices.ContainsFunc(slots, func(s *slot) bool { return l.heldElsewhere(ctx, s.key) }) {
		return
	}
	for _, p := range due {
		l.commit(ctx, p)
	}
}

// heldElsewhere reports whether another build holds key's lock (or this
// process's own pending build of the same key: flock locks conflict
// between open files of one process too).
//
// A probe that fails is tried once more: the first probe of a new key
// creates its directories, which on a loaded machine can take longer than
// probeWait by itself, and a false "held" stores pending programs before
// their launches (GEGL's first program was read so at its second build,
// 13 s of PoCL's generic work-group compiles, on the 2-core machine).
func (l *layer) heldElsewhere(ctx context.Context, key *kcache.Key) bool {
	probe := func() bool {
		ctx, cancel := context.WithTimeout(ctx, probeWait)
		defer cancel()
		unlock, err := l.locks.Lock(ctx, key)
		unlock()
		return err != nil
	}
	return probe() && probe()
}

// lookupSlot looks one key up; a hit's record is decoded here, and one
// that does not decode is removed and looked up again as a miss.
func (l *layer) lookupSlot(ctx context.Context, s *slot) {
	r, pending, _ := l.bins.Lookup(ctx, s.key)
	if _, own := l.mine.Load(r.Digest); pending != nil && !own && l.queue.Queued(r.Digest) {
		// Another process built it and left it to the worker, which
		// takes a build and the binary's read: seconds, which this
		// process would spend building it again too. A key this process
		// ordered itself (a program built twice) it builds again at once:
		// the worker's read is what its order was written to avoid.
		if e, ok := l.awaitWorker(ctx, s.key); ok {
			pending.Drop("stored by the background worker")
			r, pending = kcache.Result{Binary: e.Binary, Outcome: kcache.OutcomeWaited, Digest: r.Digest, BuildTime: e.BuildTime}, nil
		}
	}
	if pending != nil {
		s.pending = pending
		l.log.Debug("kcache layer: miss", "key", r.Digest)
		return
	}
	rec, err := layerstore.DecodeRecord(r.Binary)
	if err != nil {
		l.warn("a damaged cache entry; rebuilding it", "key", r.Digest, "err", err)
		l.forget(ctx, []*slot{s})
		return
	}
	s.hit, s.log, s.stored, s.buildTime = true, rec.Log, len(rec.Binary), r.BuildTime
	s.bin = rec.Binary
	l.log.Debug("kcache layer: hit", "key", r.Digest, "outcome", r.Outcome, "bytes", len(rec.Binary))
}

// forget removes the slots' entries and looks them up again, so that the
// build from source that follows stores fresh ones.
func (l *layer) forget(ctx context.Context, slots []*slot) {
	for _, s := range slots {
		s.bin = nil
		if !s.hit && s.pending != nil {
			continue
		}
		s.hit = false
		_, s.pending, _ = l.bins.Discard(ctx, s.key)
	}
}

// fromCache makes a program from the slots' binaries, for every device of
// the source program, in its order.
func (l *layer) fromCache(src C.cl_program, st step, slots []*slot, opts string) (C.cl_program, error) {
	cctx, err := programContext(src)
	if err != nil {
		return nil, err
	}
	devs := make([]C.cl_device_id, len(slots))
	bins := make([][]byte, len(slots))
	for i, s := range slots {
		devs[i], bins[i] = s.dev, s.bin
		s.bin = nil
	}
	return programFromBinaries(cctx, devs, bins, opts, st.finish)
}

// adopted records a program made from the cache.
func (l *layer) adopted(p *program, slots []*slot, prog C.cl_program, opts string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.slots, p.real, p.opts = true, slots, prog, opts
}

// built records a program the driver built from source and stores its
// binaries, or leaves them pending until a commit point (sync).
func (l *layer) built(ctx context.Context, p *program, st step, slots []*slot, took time.Duration) {
	for _, s := range slots {
		s.log, s.buildTime = buildLog(p.src, s.dev), took
		// Asked of every slot, pending or not: a compiled object that is
		// not stored may still be linked, and the link is keyed by the
		// object's key.
		if s.unchanged != nil && !s.unchanged() {
			// A header saved during the build: the binary may be of the
			// new header, and the key is of the old one.
			s.inexact = true
			if s.pending != nil {
				s.pending.Drop("a file the key was computed from changed during the build, or was too new to trust")
				s.pending = nil
			}
		}
	}
	bg := st.format == buildStep.format && l.onPoCL(slots)
	if bg {
		l.prepareOrders(slots)
	}
	p.mu.Lock()
	p.done, p.slots, p.real, p.builtAt, p.bg = true, slots, p.src, time.Now(), bg
	p.mu.Unlock()
	switch {
	case !st.delayed:
		l.commit(ctx, p)
	case slices.ContainsFunc(slots, func(s *slot) bool { return s.pending != nil }):
		l.mu.Lock()
		l.due = append(l.due, p)
		l.mu.Unlock()
		C.kc_pending_add(p.src)
	}
}

// sync is a commit point: the application has waited for its commands, on
// its own thread, so the driver is alive and the launches before are
// complete. It stores the binaries of the pending programs that have been
// launched since their build, or were built over the commit delay ago and
// may never be launched.
func (l *layer) sync(ctx context.Context) {
	l.mu.Lock()
	due := slices.Clone(l.due)
	l.mu.Unlock()
	for _, p := range due {
		p.mu.Lock()
		real, at := p.real, p.builtAt
		p.mu.Unlock()
		if real != nil && (C.kc_pending_launched(real) != 0 || time.Since(at) >= l.delay) {
			l.commit(ctx, p)
		}
	}
}

// commit stores the binaries still pending, once, and stops following the
// program's launches.
func (l *layer) commit(ctx context.Context, p *program) {
	l.store(ctx, p)
	l.mu.Lock()
	l.due = slices.DeleteFunc(l.due, func(q *program) bool { return q == p })
	l.mu.Unlock()
}

// store reads the program's binaries and commits its pending slots.
func (l *layer) store(ctx context.Context, p *program) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.real != nil {
		C.kc_pending_remove(p.real)
	}
	if p.dead || p.pid != os.Getpid() || !slices.ContainsFunc(p.slots, func(s *slot) bool { return s.pending != nil }) {
		return
	}
	if l.background(p) {
		l.order(p)
		return
	}
	start := time.Now()
	bins, err := binaries(p.real, len(p.slots))
	read := time.Since(start)
	defer func() {
		// Where a cold run's time goes: the driver's binary (PoCL compiles
		// then) against the write.
		l.log.Debug("kcache layer: stored", "read", read, "write", time.Since(start)-read)
	}()
	for _, s := range p.slots {
		if s.pending == nil {
			continue
		}
		pending := s.pending
		s.pending = nil
		if err != nil || len(bins[s.index]) == 0 {
			pending.Abort(errors.Join(err, errors.New("no binary for the device")))
			continue
		}
		l.writes.commit(ctx, pending, layerstore.Record{Log: s.log, Binary: bins[s.index]}.Encode(), s.buildTime)
		s.stored = len(bins[s.index])
	}
	if p.ownRef {
		C.kc_t_release_program(p.real)
		p.ownRef, p.dead = false, true
	}
}

// upgrade stores a device's binary again if it has grown since it was
// stored: PoCL adds the work-group functions of the kernels launched since.
func (l *layer) upgrade(ctx context.Context, p *program) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead || p.pid != os.Getpid() || len(p.slots) == 0 || l.background(p) {
		// A binary never read here is not read at release either: on
		// PoCL that read is the compile the worker does.
		return
	}
	bins, err := binaries(p.real, len(p.slots))
	if err != nil {
		return
	}
	// A grown binary must land after the first write of its key, not be
	// overwritten by it.
	l.writes.wait(ctx)
	for _, s := range p.slots {
		bin := bins[s.index]
		if s.pending != nil || s.stored == 0 || len(bin) <= s.stored {
			continue
		}
		if err := l.bins.Put(ctx, s.key, kcache.Entry{Binary: layerstore.Record{Log: s.log, Binary: bin}.Encode(), BuildTime: s.buildTime}); err != nil {
			l.warn("storing a completed binary", "err", err)
			continue
		}
		l.log.Debug("kcache layer: stored the completed binary", "key", s.key.Digest(), "bytes", len(bin), "was", s.stored)
		s.stored = len(bin)
	}
}

// flush1 stores what one program has to store: pending binaries, and
// grown ones.
func (l *layer) flush1(ctx context.Context, p *program) {
	l.commit(ctx, p)
	l.upgrade(ctx, p)
}

// forgetProgram stores what the program's last cached build has to store
// and stops following it: the application is about to build or compile
// the source program again, and its binaries will no longer belong to
// that build's keys.
func (l *layer) forgetProgram(ctx context.Context, w *C.kc_program) {
	p := l.state(w)
	l.flush1(ctx, p)
	p.mu.Lock()
	p.done, p.slots, p.real = true, nil, nil
	p.mu.Unlock()
}

// release runs when the application drops its last reference, before the
// driver's programs are released: the binaries are complete by now.
func (l *layer) release(ctx context.Context, w *C.kc_program) {
	l.mu.Lock()
	p, ok := l.progs[w]
	delete(l.progs, w)
	l.mu.Unlock()
	if !ok {
		return
	}
	l.flush1(ctx, p)
	p.mu.Lock()
	p.dead = true
	p.mu.Unlock()
}

// exit orders the PoCL builds still pending (abandon), gives up the
// others, starts the worker if anything was ordered, waits for the entries
// being written, and merges the process's counters, when the process
// exits. It never calls the driver:
// exit handlers run after the driver's compiler may have been torn down.
// The build locks go; the worker, or the next process that builds the
// same programs, stores them.
func (l *layer) exit(ctx context.Context) {
	l.mu.Lock()
	due := l.due
	l.due = nil
	l.mu.Unlock()
	for _, p := range due {
		l.abandon(p)
	}
	l.startScheduled()
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	if !l.writes.wait(ctx) {
		l.log.Debug("kcache layer: entries still being written at exit are lost")
	}
	if !l.scan.waitRecords(ctx) {
		l.log.Debug("kcache layer: dependency records still being written at exit are lost")
	}
	if err := l.bins.Close(ctx); err != nil {
		l.log.Debug("kcache layer: closing the cache at exit", "err", err)
	}
}

// closeTimeout bounds what exit waits for: merging the counters takes a
// file lock and a rewrite, milliseconds; a process must not hang at exit
// behind a cache directory on a stalled file system.
const closeTimeout = 5 * time.Second

// errExited aborts the pending entries of programs at exit.
var errExited = errors.New("kcache layer: the process exited before the program's binary was stored")

// abandon gives up storing a program at exit, or leaves it to the
// background worker: a PoCL build is ordered, which calls no driver.
func (l *layer) abandon(p *program) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bg && p.pid == os.Getpid() {
		l.order(p)
	}
	for _, s := range p.slots {
		if s.pending != nil {
			s.pending.Abort(errExited)
			s.pending = nil
		}
	}
	p.dead = true
}

// cachedBuild returns the stored build log of a program made from the
// cache for device d, and the options the application built it with.
func (l *layer) cachedBuild(w *C.kc_program, d C.cl_device_id) (log, opts string, ok bool) {
	l.mu.Lock()
	p, ok := l.progs[w]
	l.mu.Unlock()
	if !ok {
		return "", "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.slots {
		if s.dev == d && s.hit {
			return s.log, p.opts, true
		}
	}
	return "", "", false
}

func sameSet(a, b []C.cl_device_id) bool {
	if len(a) != len(b) {
		return false
	}
	for _, d := range a {
		if !slices.Contains(b, d) {
			return false
		}
	}
	return true
}
