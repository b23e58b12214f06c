package main

/*
#include <stdlib.h>
#include "layer.h"
*/
import "C"

import (
	"bytes"
	"context"
	"os"
	"runtime/debug"
	"slices"
	"time"
	"unsafe"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/layerstore"
)

// linkStep is clLinkProgram of compiled objects that came through the
// cache. Its key is made of the inputs' keys, in order, and the link
// options: an input's key holds its source, every header, its compile
// options, the device, the compiler and its environment, so the link's
// key changes whenever anything the linked program is made from changes.
var linkStep = step{format: layerstore.FormatLinked, kind: C.KC_CACHED_EXECUTABLE, finish: true, delayed: true}

//export kcGoLink
func kcGoLink(ctx C.cl_context, nd C.cl_uint, devs *C.cl_device_id, options *C.char, np C.cl_uint, ps *C.cl_program,
	reals *C.cl_program, handled *C.int, errOut *C.cl_int) (out C.cl_program) {
	*handled = 0
	var list []C.cl_device_id
	if nd > 0 {
		list = slices.Clone(unsafe.Slice(devs, int(nd)))
	}
	opts := ""
	if options != nil {
		opts = C.GoString(options)
	}
	apps := slices.Clone(unsafe.Slice(ps, int(np)))
	inputs := slices.Clone(unsafe.Slice(reals, int(np)))
	// After a panic before the driver linked, the call passes through;
	// after it, the application gets the driver's program.
	var linked C.cl_program
	defer func() {
		if r := recover(); r != nil {
			theLayer.warn("internal error in clLinkProgram", "panic", r, "stack", string(debug.Stack()))
			*handled, out = 0, nil
			if linked != nil {
				*handled, *errOut, out = 1, C.CL_SUCCESS, linked
			}
		}
	}()
	return theLayer.link(context.Background(), ctx, list, opts, apps, inputs, handled, errOut, &linked)
}

// link answers clLinkProgram from the cache when every device's linked
// binary is there, else links with the driver and stores the result. It
// handles only links whose every input is a compiled object that went
// through the cache, for the same devices, and whose files held through
// its compile (an object compiled while a header was saved may be of
// another text than its key's); anything else passes through (handled
// stays 0).
func (l *layer) link(ctx context.Context, cctx C.cl_context, devs []C.cl_device_id, opts string,
	apps, inputs []C.cl_program, handled *C.int, errOut *C.cl_int, linked *C.cl_program) C.cl_program {
	// PoCL appends its extra build flags to a link's options too: a link
	// keyed by the start's environment must see it, as a build must.
	if err := checkEnv(l.env); err != nil {
		l.log.Debug("kcache layer: the environment changed; the driver links without the cache", "err", err)
		return nil
	}
	slots, ok := l.linkSlots(devs, opts, apps)
	if !ok {
		return nil
	}
	*handled = 1
	l.lookupSlots(ctx, slots)
	all := make([]C.cl_device_id, len(slots))
	for i, s := range slots {
		all[i] = s.dev
	}
	if hitAll(slots) {
		bins := make([][]byte, len(slots))
		for i, s := range slots {
			bins[i], s.bin = s.bin, nil
		}
		prog, err := programFromBinaries(cctx, all, bins, opts, true)
		if err == nil {
			*errOut = C.CL_SUCCESS
			l.linkedAdd(prog, slots)
			return prog
		}
		l.warn("the driver refused a cached linked binary; linking again", "err", err)
		l.forget(ctx, slots)
	}
	start := time.Now()
	prog := linkPrograms(cctx, devs, opts, inputs, errOut)
	took := time.Since(start)
	if *errOut == C.CL_SUCCESS {
		*linked = prog
		l.linkedForget(prog) // a new program where a dead one may have been
	}
	if prog == nil || *errOut != C.CL_SUCCESS {
		for _, s := range slots {
			if s.pending != nil {
				s.pending.Abort(clError(*errOut))
			}
		}
		return prog
	}
	// The layer holds a reference of its own until the binaries are
	// stored: the application may release the program before that.
	C.kc_t_retain_program(prog)
	p := &program{src: prog, pid: os.Getpid(), ownRef: true}
	l.built(ctx, p, linkStep, slots, took)
	return prog
}

// linkSlots makes one slot a device for a link of the application's
// programs apps, or reports that the link is not one the cache handles.
func (l *layer) linkSlots(devs []C.cl_device_id, opts string, apps []C.cl_program) ([]*slot, bool) {
	if len(apps) == 0 {
		return nil, false
	}
	var inputs [][]*slot
	for _, a := range apps {
		w := C.kc_wrapper(a)
		if w == nil {
			return nil, false
		}
		l.mu.Lock()
		p, ok := l.progs[w]
		l.mu.Unlock()
		if !ok {
			return nil, false
		}
		p.mu.Lock()
		in := slices.Clone(p.slots)
		good := p.done && len(in) > 0 && !slices.ContainsFunc(in, func(s *slot) bool {
			return s.key == nil || s.key.Image.Format != compileStep.format || s.inexact
		})
		p.mu.Unlock()
		if !good {
			return nil, false
		}
		inputs = append(inputs, in)
	}
	// Every input holds the same devices in the same order; the link is
	// for all of them.
	first := inputs[0]
	for _, in := range inputs[1:] {
		if len(in) != len(first) || slices.ContainsFunc(in, func(s *slot) bool { return first[s.index].dev != s.dev }) {
			return nil, false
		}
	}
	if len(devs) > 0 {
		all := make([]C.cl_device_id, len(first))
		for i, s := range first {
			all[i] = s.dev
		}
		if !sameSet(devs, all) {
			return nil, false
		}
	}
	slots := make([]*slot, len(first))
	for i, s := range first {
		var src bytes.Buffer
		for _, in := range inputs {
			d := in[i].key.Digest()
			src.Write(d[:])
		}
		key := *s.key
		key.Image = kcache.Image{Format: linkStep.format, Source: src.Bytes()}
		key.Options = kcache.BuildOptions{Link: opts, Env: s.key.Options.Env}
		slots[i] = &slot{dev: s.dev, index: i, key: &key}
	}
	return slots, true
}

// linkPrograms is the driver's clLinkProgram, synchronous.
func linkPrograms(cctx C.cl_context, devs []C.cl_device_id, opts string, inputs []C.cl_program, errOut *C.cl_int) C.cl_program {
	copts := C.CString(opts)
	defer C.free(unsafe.Pointer(copts))
	var dp *C.cl_device_id
	if len(devs) > 0 {
		dp = cDevices(devs)
		defer C.free(unsafe.Pointer(dp))
	}
	in := (*C.cl_program)(C.malloc(C.size_t(len(inputs)) * C.size_t(unsafe.Sizeof(inputs[0]))))
	defer C.free(unsafe.Pointer(in))
	copy(unsafe.Slice(in, len(inputs)), inputs)
	return C.kc_t_link_program(cctx, C.cl_uint(len(devs)), dp, copts, C.cl_uint(len(inputs)), in, errOut)
}

// A linked program is the driver's own, not a handle of the layer's, so
// the application's queries of it reach the driver. A program linked from
// cached binaries was linked by nobody in this process, and the driver
// has no log for it: the layer answers CL_PROGRAM_BUILD_LOG with the
// stored one, for as long as the program lives (see layer.c's
// kc_linked_count).

// linkedAdd records the stored logs of prog, a program made from cached
// linked binaries.
func (l *layer) linkedAdd(prog C.cl_program, slots []*slot) {
	logs := map[C.cl_device_id]string{}
	for _, s := range slots {
		logs[s.dev] = s.log
	}
	l.mu.Lock()
	if l.linked == nil {
		l.linked = map[C.cl_program]map[C.cl_device_id]string{}
	}
	l.linked[prog] = logs
	C.kc_linked_count(C.int(len(l.linked)))
	l.mu.Unlock()
}

// linkedLog returns the stored log of prog for d, if prog was made from
// cached linked binaries.
func (l *layer) linkedLog(prog C.cl_program, d C.cl_device_id) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	log, ok := l.linked[prog][d]
	return log, ok
}

// linkedForget drops prog, whose last reference the application is
// releasing: the driver may give its address to another program.
func (l *layer) linkedForget(prog C.cl_program) {
	l.mu.Lock()
	delete(l.linked, prog)
	C.kc_linked_count(C.int(len(l.linked)))
	l.mu.Unlock()
}

//export kcGoLinkedLog
func kcGoLinkedLog(prog C.cl_program, d C.cl_device_id, size C.size_t, value unsafe.Pointer, sizeRet *C.size_t) (status C.cl_int) {
	status = C.CL_INVALID_PROGRAM
	defer guard("clGetProgramBuildInfo")
	log, ok := theLayer.linkedLog(prog, d)
	if !ok {
		return C.kc_t_get_program_build_info(prog, d, C.CL_PROGRAM_BUILD_LOG, size, value, sizeRet)
	}
	b := append([]byte(log), 0)
	return C.kc_info_value(unsafe.Pointer(&b[0]), C.size_t(len(b)), size, value, sizeRet)
}

//export kcGoLinkedForget
func kcGoLinkedForget(prog C.cl_program) {
	defer guard("clReleaseProgram")
	theLayer.linkedForget(prog)
}
