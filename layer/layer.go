package main

/*
#include <stdlib.h>
#include "layer.h"
*/
import "C"

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/keyparts"
	"github.com/kcache/kcache/internal/layerstore"
)

// commitDelay is how long after its build a program that has not been
// launched waits for a launch before a commit point stores its binary
// anyway: a program launched at once is stored at the first commit point
// after its launch, with the work-group functions PoCL compiled for it.
const commitDelay = time.Second

// theLayer is the process's layer state; nil when the cache could not be
// opened, in which case layer.c passes every call through.
var theLayer *layer

// layer is the Go half of the layer: the cache and what it knows of the
// application's programs.
type layer struct {
	bins  *kcache.Cache
	locks kcache.Locker // the disk tier's build locks, probed by unblock
	disk  *disk.Store   // the disk tier, which awaitWorker reads without counting

	queue     layerstore.Queue // build orders for the background worker
	buildEnv  []string         // what of the environment an order carries
	buildWait time.Duration    // how long a process waits for another's build
	log       *slog.Logger
	debug     bool
	env       []kcache.EnvVar
	ids       identities
	scan      depsScanner
	delay     time.Duration

	mu    sync.Mutex // guards progs, due and linked; never held across a driver call, nor taken under a program's mu
	progs map[*C.kc_program]*program
	due   []*program // programs with binaries still to store, at the next commit point
	// linked holds the stored logs, by device, of the live programs made
	// from cached linked binaries (link.go).
	linked map[C.cl_program]map[C.cl_device_id]string

	warned sync.Map // warnings already given, by kind
	// mine holds the key digests this process ordered: it builds such a
	// key again itself rather than wait for the worker (awaitWorker).
	mine sync.Map

	writes writes // entries being written beside the application

	startMu    sync.Mutex  // guards toStart and startTimer
	toStart    bool        // orders written since the worker was last started
	startTimer *time.Timer // starts the worker workerDelay after an order
}

// open makes the layer from the environment. It fails when there is no
// usable persistent tier: without one the layer has nothing to offer.
// driverUp says the application listed devices or made a context already:
// the driver's files are then sought while the cache opens.
func open(environ []string, stderr io.Writer, driverUp bool) (*layer, error) {
	cfg, err := kcache.LoadConfig()
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.DiscardHandler)
	if cfg.Debug || cfg.Trace {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if !cfg.Persistent || cfg.Dir == "" {
		return nil, fmt.Errorf("kcache layer: no persistent cache (set %s)", kcache.EnvDir)
	}
	if driverUp {
		keyparts.PrefetchOpenCLDriver()
	}
	opts := disk.FromConfig(cfg)
	opts.Logger = log
	st, err := disk.Open(opts)
	if err != nil {
		return nil, err
	}
	bins := kcache.New(cfg, log, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	// The scan runs on the application's thread, inside its build call:
	// the record's write overlaps the driver's build, and exit waits for
	// it (waitRecords).
	scanOpts := []deps.Option{deps.WithRecords(bins), deps.WithRecordWait(0)}
	return &layer{
		bins:  bins,
		locks: st,
		disk:  st,

		queue:     layerstore.NewQueue(cfg.Dir),
		buildEnv:  layerstore.BuildEnv(environ),
		buildWait: cfg.BuildWait,
		log:       log,
		debug:     cfg.Debug,
		env:       compilerEnv.Select(environ),
		scan:      depsScanner{s: deps.NewScanner(log, scanOpts...), trace: cfg.Trace, log: log},
		delay:     commitDelay,
		progs:     map[*C.kc_program]*program{},
	}, nil
}

// warn logs one warning per kind, only with KCACHE_DEBUG set: the layer is
// a guest in the application's process and its output is not ours to use.
func (l *layer) warn(kind string, args ...any) {
	if _, dup := l.warned.LoadOrStore(kind, true); dup {
		l.log.Debug("kcache layer: "+kind, args...)
		return
	}
	l.log.Warn("kcache layer: "+kind+"; the driver builds without the cache", args...)
}

// guard turns a panic of the Go half into a warning: nothing the cache
// does may take the application down.
func guard(what string) {
	if r := recover(); r != nil && theLayer != nil {
		theLayer.warn("internal error in "+what, "panic", r, "stack", string(debug.Stack()))
	}
}

// kcGoInit opens the layer. enabled says the cache opened; sought, that
// the driver had started by then (kc_driver_is_up), so that the search
// for its files began before the cache opened, beside it. kc_init starts
// the search for a driver that started later.
//
//export kcGoInit
func kcGoInit() (enabled, sought C.int) {
	defer guard("init")
	keyparts.SetLoaderCounter(loaderCount)
	up := C.kc_driver_is_up() != 0
	l, err := open(os.Environ(), stderr(), up)
	if err != nil {
		if d, _ := kcache.ConfigFromEnv(); d.Debug {
			slog.New(slog.NewTextHandler(stderr(), nil)).Warn("kcache layer: cache off; every call passes through", "err", err)
		}
		return 0, 0
	}
	if dir, err := privatePoCLDir(os.Getenv, os.Setenv); err != nil {
		l.log.Warn("kcache layer: no private PoCL directory; processes loading the same binary at once may abort", "err", err)
	} else if dir != "" {
		l.log.Debug("kcache layer: PoCL's cache is off; this process's PoCL directory is private", "dir", dir)
		// PoCL searches it first: the scans' records name it in a
		// form other processes, each with its own, can check.
		l.scan.private = dir
	}
	theLayer = l
	if up {
		return 1, 1
	}
	return 1, 0
}

// loaderCount asks the dynamic loader how many objects it has loaded and
// unloaded in this process (see keyparts.SetLoaderCounter).
func loaderCount() (adds, subs uint64, ok bool) {
	var a, s C.ulonglong
	ok = C.kc_loader_count(&a, &s) != 0
	return uint64(a), uint64(s), ok
}

// stderr returns a duplicate of the standard error the process has now,
// at the layer's start: applications may point descriptor 2 elsewhere
// while they build (hashcat silences compilers so), and the layer's
// warnings are for the user who started the application.
func stderr() io.Writer {
	fd, err := syscall.Dup(2)
	if err != nil {
		return os.Stderr
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "stderr")
}

//export kcGoBuild
func kcGoBuild(w *C.kc_program, nd C.cl_uint, devs *C.cl_device_id, options *C.char) C.cl_int {
	return theLayer.call(w, buildStep, nd, devs, options)
}

//export kcGoCompile
func kcGoCompile(w *C.kc_program, nd C.cl_uint, devs *C.cl_device_id, options *C.char) C.cl_int {
	return theLayer.call(w, compileStep, nd, devs, options)
}

// call runs a build or compile step for the application's handle w.
func (l *layer) call(w *C.kc_program, st step, nd C.cl_uint, devs *C.cl_device_id, options *C.char) (status C.cl_int) {
	var list []C.cl_device_id
	if nd > 0 {
		list = append(list, unsafe.Slice(devs, int(nd))...)
	}
	opts := ""
	if options != nil {
		opts = C.GoString(options)
	}
	// After a panic, the application gets the driver's answer: the
	// driver's status if it was called, else a build the driver's way.
	driver := driverNotCalled
	defer func() {
		if r := recover(); r != nil {
			l.warn("internal error", "panic", r, "stack", string(debug.Stack()))
			status = driver
			if driver == driverNotCalled {
				C.kc_use_source(w)
				status = st.run(C.kc_source(w), list, opts)
			}
		}
	}()
	return l.build(context.Background(), w, st, list, opts, &driver)
}

// driverNotCalled marks a step the driver has not run yet: no OpenCL
// status is positive.
const driverNotCalled C.cl_int = 1

//export kcGoRelease
func kcGoRelease(w *C.kc_program) {
	defer guard("clReleaseProgram")
	theLayer.release(context.Background(), w)
}

//export kcGoForget
func kcGoForget(w *C.kc_program) {
	defer guard("clCompileProgram")
	theLayer.forgetProgram(context.Background(), w)
}

//export kcGoBuildInfo
func kcGoBuildInfo(w *C.kc_program, d C.cl_device_id, param C.cl_program_build_info, size C.size_t, value unsafe.Pointer, sizeRet *C.size_t) (status C.cl_int) {
	status = C.CL_INVALID_DEVICE
	defer guard("clGetProgramBuildInfo")
	log, opts, ok := theLayer.cachedBuild(w, d)
	if !ok {
		return C.kc_t_get_program_build_info(C.kc_real(w), d, param, size, value, sizeRet)
	}
	s := log
	if param == C.CL_PROGRAM_BUILD_OPTIONS {
		s = opts
	}
	// The driver's form: a C string, its terminating NUL counted.
	b := append([]byte(s), 0)
	return C.kc_info_value(unsafe.Pointer(&b[0]), C.size_t(len(b)), size, value, sizeRet)
}

//export kcGoDriverStarted
func kcGoDriverStarted() {
	defer guard("the driver's start")
	keyparts.PrefetchOpenCLDriver()
}

//export kcGoSync
func kcGoSync() {
	defer guard("a commit point")
	theLayer.sync(context.Background())
}

//export kcGoExit
func kcGoExit() {
	defer guard("exit")
	if theLayer != nil {
		theLayer.exit(context.Background())
	}
}
