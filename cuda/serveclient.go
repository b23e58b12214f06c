package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda/compileserver"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// ServeEnv is the environment variable that sends cold misses to the
// compile server (`kcache serve`, see docs/serve.md):
//
//	unset, "", "off"  compile in this process (the default)
//	"connect"         use a running server; never start one
//	"auto" or "on"    use the server, starting it if none runs: the kcache
//	                  binary is this program when it is kcache, else
//	                  "kcache" on $PATH
//	an absolute path  use the server, starting it with that kcache binary
//
// A library never starts a process the user did not ask for: the server is
// used only where this variable says so.
const ServeEnv = "KCACHE_SERVE"

// Bounds of the client's use of the server.
const (
	// serveMaxWait bounds how long a compile may wait in the server's
	// queue. A request waits for a worker to finish the compile it runs: at
	// worst a cold one (2-3 s on the H100 for CUB kernels), after which that
	// worker holds the request's PCH and compiles it in 0.3-0.7 s. Giving
	// up after W costs W plus a compile here (2-3 s), more than waiting for
	// any W beyond a second: with 2 s, 4 of 8 clients starting together on
	// a cold pool of 4 gave up at 2.2 s and finished at 4.1-4.8 s, where
	// the served ones took 2.4-3.0 s. The bound is for a server that is
	// stuck or far behind (its queue holds 16 at most).
	serveMaxWait = 6 * time.Second
	// serveStartWait bounds how long a client waits for a server it
	// started to answer: the server is a Go program that loads NVRTC,
	// tens of milliseconds.
	serveStartWait = 3 * time.Second
	// serveRetry is how long a client leaves the server alone after it
	// could not start one, so a broken setup costs one try per minute, not
	// one per compile.
	serveRetry = time.Minute
	// serveWarmUpQueue bounds a warm-up's wait in the server's queue: one
	// that must wait finds the workers busy, making PCHs already (8
	// clients starting together send 8 warm-ups to 4 workers).
	serveWarmUpQueue = 50 * time.Millisecond
	// serveWarmUpWait bounds a warm-up, start and compile: a cold compile
	// of a CUB-heavy kernel takes 2-4 s.
	serveWarmUpWait = time.Minute
)

// serveState is the process's memory of failed server starts.
var serveState struct {
	mu       sync.Mutex
	failedAt time.Time // guarded by mu
}

// build compiles src: through the compile server where ServeEnv asks for
// it and the key's files are known (digest is the key's; zero for a source
// that is never stored), else with this process's NVRTC. Any failure of
// the server, a stale or busy answer, or a compile error it reports, costs
// a compile here: the server can make a cold miss faster, never change its
// result.
func (c *Cache) build(ctx context.Context, src Source, p plan, digest kcache.Digest) (*image, error) {
	mode := os.Getenv(ServeEnv)
	early := c.claimEarly(src, p)
	if mode == "" || mode == "off" || digest == (kcache.Digest{}) {
		if early != nil {
			early.Abandon()
		}
		return runNVRTC(src, p)
	}
	im, err := c.serveBuild(ctx, mode, early, src, p, digest)
	if err != nil {
		c.bins.Logger().Debug("kcache: compiling here, not through the compile server", "program", programName(src), "reason", err)
		return runNVRTC(src, p)
	}
	return im, nil
}

// serveBuild asks the server for the image of src: from the compile it
// began early (not nil), or from a new one.
func (c *Cache) serveBuild(ctx context.Context, mode string, early *compileserver.Pending, src Source, p plan, digest kcache.Digest) (*image, error) {
	start := time.Now()
	probed := c.probeAhead(ctx, src, p)
	req, err := c.serveRequest(ctx, src, p, digest)
	if err != nil {
		if early != nil {
			early.Abandon()
		}
		return nil, err
	}
	requested := time.Now()
	if early != nil {
		reply, err := early.Finish(ctx, digest, req.Files)
		if err != nil {
			return nil, err
		}
		c.logServed(src, reply, true, start, requested, probed())
		return imageOf(reply, p, src.NameExpressions)
	}
	im, err := serveImage(ctx, mode, req, p, src.NameExpressions)
	if err == nil {
		c.bins.Logger().Debug("kcache: compiled by the compile server", "program", programName(src), "early", false)
		probed()
	}
	return im, err
}

// probeAhead runs, while the server compiles, the check that the store
// makes after the compile of NVRTC's predefined macros (checkAssumptions):
// it compiles a small program with this process's NVRTC, whose first
// compile in a process costs more than the rest of the store, and its
// answer, kept for the process, depends on the options alone. The
// function it returns waits for it and says how long it ran, so that the
// store finds the answer made (waiting costs nothing: the server's compile
// takes longer), and does not probe a second time.
func (c *Cache) probeAhead(ctx context.Context, src Source, p plan) func() time.Duration {
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		c.checkAssumptions(ctx, src, p) // its answer is kept; the store reads it
		done <- time.Since(start)
	}()
	return sync.OnceValue(func() time.Duration { return <-done })
}

// logServed records what the server did for an early compile, and where
// the client's time went: building the request (its files), then waiting
// for the reply.
func (c *Cache) logServed(src Source, reply *compileserver.Reply, early bool, start, requested time.Time, probe time.Duration) {
	c.bins.Logger().Debug("kcache: compiled by the compile server", "program", programName(src), "early", early,
		"status", reply.Status, "server_compile_ms", reply.Compile.Milliseconds(), "pch", reply.PCH,
		"request_ms", msSince(start, requested), "wait_ms", msSince(requested, time.Now()), "probe_ms", float64(probe.Microseconds())/1000)
}

// serveImage sends req to the server, starting one where mode allows, and
// returns the image it answers.
func serveImage(ctx context.Context, mode string, req *compileserver.Request, p plan, exprs []string) (*image, error) {
	cl := &compileserver.Client{}
	reply, err := cl.Compile(ctx, req)
	if errors.Is(err, compileserver.ErrNoServer) && mode != "connect" {
		go warmUp(cl, mode, req)
		return nil, fmt.Errorf("compile server: none was running; one starts and compiles this program too, to make its PCH: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return imageOf(reply, p, exprs)
}

// warmUp starts the server and sends it req as a warm-up: a server just
// started has no PCH, so its first compile costs what one here does, plus
// its start (measured: 23-36 % more than compiling here). The caller
// compiles here meanwhile; the server's compile makes the PCH the next
// client uses. A process that exits first leaves the server running.
func warmUp(cl *compileserver.Client, mode string, req *compileserver.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), serveWarmUpWait)
	defer cancel()
	if startServer(ctx, cl, mode) != nil {
		return
	}
	w := *req
	w.WarmUp = true
	w.MaxWait = serveWarmUpQueue
	cl.Compile(ctx, &w) // best effort: the reply is not needed
}

// imageOf is the image of the server's reply.
func imageOf(reply *compileserver.Reply, p plan, exprs []string) (*image, error) {
	if reply.Status != compileserver.StatusOK {
		return nil, fmt.Errorf("compile server: %s: %s", reply.Status, reply.Message)
	}
	if len(reply.Lowered) != len(exprs) {
		return nil, fmt.Errorf("compile server: %d lowered names for %d name expressions", len(reply.Lowered), len(exprs))
	}
	im := &image{format: p.format, code: reply.Code}
	if len(exprs) > 0 {
		im.lowered = make(map[string]string, len(exprs))
		for i, e := range exprs {
			im.lowered[e] = reply.Lowered[i]
		}
	}
	return im, nil
}

// serveRequest describes the compile of src for the server, with every
// file its key was computed from (the scanner's memo of this key's scan:
// no header is read again).
func (c *Cache) serveRequest(ctx context.Context, src Source, p plan, digest kcache.Digest) (*compileserver.Request, error) {
	req, err := c.newServeRequest(src, p, digest)
	if err != nil {
		return nil, err
	}
	for _, in := range scanInputs(src, p) {
		_, trace, err := c.scanner.Scan(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, d := range trace {
			// An assumption about NVRTC's own macros is no file: the
			// server's NVRTC, with the same options, answers as the
			// client's, which checks it before storing.
			if d.Rule != deps.RuleNotPredefined && d.Rule != deps.RuleOptionDecides {
				req.Files = append(req.Files, serveFile(d))
			}
		}
	}
	return req, nil
}

// newServeRequest is the request for src, without its files.
func (c *Cache) newServeRequest(src Source, p plan, digest kcache.Digest) (*compileserver.Request, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	req := &compileserver.Request{Key: digest, Compiler: ServeIdentity(), Env: envStrings(c.env), WorkDir: wd,
		Name: programName(src), Code: src.Code, Options: p.options, NameExpressions: src.NameExpressions,
		Format: p.format, MaxWait: serveMaxWait}
	for _, h := range src.Headers {
		req.Headers = append(req.Headers, compileserver.Header{Name: h.Name, Content: h.Content})
	}
	return req, nil
}

// serveFile is what the server must check of one dependency.
func serveFile(d deps.Dependency) compileserver.File {
	switch d.Rule {
	case deps.RuleAbsent:
		return compileserver.File{Path: d.Path, Kind: compileserver.FileAbsent}
	case deps.RuleClock:
		return compileserver.File{Path: d.Path, Kind: compileserver.FileDay}
	}
	return compileserver.File{Path: d.Path, Digest: d.Digest, Kind: compileserver.FilePresent}
}

func envStrings(env []kcache.EnvVar) []string {
	out := make([]string, len(env))
	for i, v := range env {
		out[i] = v.Name + "=" + v.Value
	}
	return out
}

// startServer starts the server the way mode says, at most once a minute
// after a failure.
func startServer(ctx context.Context, cl *compileserver.Client, mode string) error {
	serveState.mu.Lock()
	defer serveState.mu.Unlock()
	if time.Since(serveState.failedAt) < serveRetry {
		return fmt.Errorf("compile server: could not start one %v ago", time.Since(serveState.failedAt).Round(time.Second))
	}
	bin, err := serveBinary(mode)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, serveStartWait)
		defer cancel()
		err = cl.Start(ctx, bin)
	}
	if err != nil {
		serveState.failedAt = time.Now()
	}
	return err
}

// serveBinary finds the kcache binary that runs the server.
func serveBinary(mode string) (string, error) {
	if filepath.IsAbs(mode) {
		return mode, nil
	}
	if mode != "auto" && mode != "on" {
		return "", fmt.Errorf("%s=%q: want off, connect, auto, or the path of a kcache binary", ServeEnv, mode)
	}
	if self, err := os.Executable(); err == nil && filepath.Base(self) == "kcache" {
		return self, nil
	}
	bin, err := exec.LookPath("kcache")
	if err != nil {
		return "", fmt.Errorf("compile server: no kcache binary to start it: %w", err)
	}
	return bin, nil
}

// ServeIdentity names this process's NVRTC for the compile server: its
// version and the files it is made of (libnvrtc and its builtins). Client
// and server compare it, so a server never compiles with another NVRTC
// than the one the client's key names.
var ServeIdentity = sync.OnceValue(func() string {
	major, minor, err := NVRTCVersion()
	if err != nil {
		return "no NVRTC: " + err.Error()
	}
	files := keyparts.LibraryFiles(NVRTCLibrary(), "libnvrtc-builtins.so*")
	return fmt.Sprintf("nvrtc %d.%d %s %s", major, minor, NVRTCLibrary(), files.Digest())
})

// ServeKeyEnv returns this process's environment as it enters a CUDA key
// (NAME=VALUE): the server compiles only for clients with the same.
func ServeKeyEnv() []string {
	return envStrings(compilerEnv.Select(keyparts.Environ(nil)))
}

// serveEarlyDelay is how long Module waits for its key before it sends
// the compile to the server ahead of it, where the dependency scanner has
// not said sooner that it scans afresh (deps.WithScanStart: no record of
// an earlier process gave the files, so the key takes 90-300 ms on CCCL
// kernels, and the compile is sent at once, 1-2 ms into Module). The delay
// is for a key whose record's stats are slow: a key from the dependency
// record of an earlier process took 1-2 ms on the H100
// (bench/RESULTS-cuda.md, "Hit path"), and the compiler's files it waits
// for 1.5-3.3 ms, so a hit does not begin a compile; a hit slower than it
// costs the server a compile it abandons, not the client. A variable for
// tests.
var serveEarlyDelay = 10 * time.Millisecond

// earlyCompile is a compile of one Module call sent to the server before
// its key was known.
type earlyCompile struct {
	mu      sync.Mutex
	timer   *time.Timer            // guarded by mu
	pending *compileserver.Pending // guarded by mu; set once sent
	done    bool                   // guarded by mu: claimed or stopped
}

// identityAhead starts finding ServeIdentity in the first Module call of
// a process that may use the server.
var identityAhead sync.Once

// earlies holds the early compiles of the Module calls in progress.
var earlies sync.Map // earlyKey → *earlyCompile

// earlyKey names one Module call's compile: its cache, and the memory of
// its source and of its options (the plan Module made, which build is
// handed). Cheap to make, as a hit needs: no copy of the source.
type earlyKey struct {
	c       *Cache
	code    *byte
	n       int
	options *string
	nopts   int
}

func earlyKeyOf(c *Cache, src Source, p plan) earlyKey {
	return earlyKey{c, unsafe.SliceData(src.Code), len(src.Code), unsafe.SliceData(p.options), len(p.options)}
}

// beginEarly arranges for src's compile to be sent to the server, where
// ServeEnv asks for one, as soon as the key is known to be slow: when the
// scanner begins a fresh scan (the context it returns carries the signal,
// deps.WithScanStart), or after serveEarlyDelay. The function it returns,
// which Module defers, abandons that compile unless build claimed it. The
// server answers it only once build sent the key's files and it found them
// as they were before the compile began (compileserver.Request.FilesLater).
func (c *Cache) beginEarly(ctx context.Context, src Source, p plan) (context.Context, func()) {
	if mode := os.Getenv(ServeEnv); mode == "" || mode == "off" {
		return ctx, func() {}
	}
	// The request names this process's NVRTC: found now, the compile is
	// sent as soon as the key is known to be slow.
	identityAhead.Do(func() { go ServeIdentity() })
	k := earlyKeyOf(c, src, p)
	e := &earlyCompile{}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, loaded := earlies.LoadOrStore(k, e); loaded {
		return ctx, func() {} // another call of Module for the same program has one
	}
	e.timer = time.AfterFunc(serveEarlyDelay, func() { e.send(c, src, p) })
	scanning := func() { e.sendNow(c, src, p) }
	return deps.WithScanStart(ctx, scanning), func() {
		earlies.CompareAndDelete(k, e)
		e.stop()
	}
}

// sendNow sends the compile now rather than after the delay, unless the
// timer did or it was claimed or stopped. It does not wait: the scanner
// calls it.
func (e *earlyCompile) sendNow(c *Cache, src Source, p plan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.done && e.timer.Stop() {
		go e.send(c, src, p)
	}
}

// send begins the compile, unless it was claimed or stopped. A server
// that is not running is started by build, not here: a key that hits
// needs none.
func (e *earlyCompile) send(c *Cache, src Source, p plan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return
	}
	req, err := c.newServeRequest(src, p, kcache.Digest{})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	e.pending, _ = (&compileserver.Client{}).Begin(ctx, req)
	if e.pending != nil {
		c.bins.Logger().Debug("kcache: compile sent to the compile server ahead of its key", "program", programName(src))
	}
}

// stop drops the compile if it was sent and not claimed.
func (e *earlyCompile) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.timer.Stop()
	e.done = true
	if e.pending != nil {
		e.pending.Abandon()
		e.pending = nil
	}
}

// claimEarly takes the early compile of src, if one was sent.
func (c *Cache) claimEarly(src Source, p plan) *compileserver.Pending {
	v, ok := earlies.LoadAndDelete(earlyKeyOf(c, src, p))
	if !ok {
		return nil
	}
	e := v.(*earlyCompile)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.timer.Stop()
	e.done = true
	pending := e.pending
	e.pending = nil
	return pending
}
