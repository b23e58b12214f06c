package compileserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Compiler compiles one request. The server calls it from up to
// Options.Workers goroutines at once, all in the client's working
// directory (a Pool moves its workers there itself), after checking the
// request's files (for a request with FilesLater, after the compile); it
// returns a Reply with StatusOK or StatusCompileError, or an error for
// anything else (the client then compiles itself).
type Compiler interface {
	// Identity names the compiler the way a client's Request.Compiler
	// does: the server compiles only requests that name the same one.
	Identity() string
	// Compile compiles r. With pch false it must not use precompiled
	// state from earlier compiles: the server asks so when a header
	// changed in a way the compiler's own validity check may miss.
	Compile(ctx context.Context, r *Request, pch bool) (*Reply, error)
}

// Policy defaults.
const (
	// DefaultIdleTimeout is how long a server with no request waits before
	// it exits: long enough to span the gaps between the runs of a build
	// or a test suite, short enough that a forgotten server gives its
	// memory (NVRTC's PCH heap, hundreds of MB) back within minutes.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultQueue bounds the compiles waiting behind the running one: a
	// CUB-heavy compile takes 0.2-3 s, so a client behind 16 others would
	// wait longer than compiling itself.
	DefaultQueue = 16
	// readTimeout bounds how long a connection may take to send its
	// request: a client that connects and stalls must not hold a slot.
	readTimeout = 30 * time.Second
)

// ErrRunning means another server of this user already holds the socket.
var ErrRunning = errors.New("compileserver: a server is already running")

// Options configures a Server.
type Options struct {
	// Socket is the path to listen on; "" means SocketPath().
	Socket string
	// IdleTimeout is how long the server waits without a request before
	// it exits; 0 means DefaultIdleTimeout, negative never.
	IdleTimeout time.Duration
	// Queue bounds the requests waiting to compile; 0 means DefaultQueue.
	Queue int
	// Workers is how many compiles run at once; 0 means 1. Compiles run
	// concurrently only while they share a working directory (the
	// process has one). Over a Pool it is the pool's size.
	Workers int
	// Env is the server's own environment as it enters a key (NAME=VALUE,
	// the variables that change the compiler's output): a request whose
	// Env differs is answered StatusMismatch.
	Env []string
	// Logger receives the server's diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// Server is a listening compile server.
type Server struct {
	opts     Options
	comp     Compiler
	ln       *net.UnixListener
	lock     *os.File
	jobs     chan *job
	start    time.Time
	lastSeen atomic.Int64 // UnixNano of the last request's end or start
	active   atomic.Int64 // connections being served
	stopOnce sync.Once
	stopped  chan struct{}
	files    fileChecker
	allowUID atomic.Int64 // the user whose connections are served: this process's; tests change it
	cwd      cwdGate
	// pool is comp when it compiles in worker processes: each compile then
	// runs in its own process and directory, and the pool picks a worker
	// by context, so the server neither gates working directories nor
	// holds to one context.
	pool *Pool

	pchMu sync.Mutex // guards seen and retiring
	// seen holds the digest of every header an earlier compile read, by
	// path ("memory:NAME" for in-memory ones), and absentPlace for every
	// place an earlier compile's key found nothing at.
	seen map[string][32]byte
	// pchContext is what every compile that may use the precompiled
	// headers shares: the working directory, the program name's directory
	// and the options (search path and macros), fixed by the first such
	// compile. See pchSafe.
	pchContext string
	// retiring is set by retire: every compile after it, queued before
	// the socket closed, goes without PCH.
	retiring bool
	wg       sync.WaitGroup // connection handlers

	// counters, for Stats
	requests, compiled, compileErrors, stale, busy, mismatched, failed, refused atomic.Int64
	pchCreated, pchHits, compileNanos, retired, otherContext                    atomic.Int64
	early, earlyRedone, earlyAbandoned                                          atomic.Int64
}

// job is a request waiting for the worker.
type job struct {
	req    *Request
	queued time.Time
	ctx    context.Context
	done   chan *Reply
	// files brings the key and files of a request with FilesLater; it is
	// closed unsent when the client sent none.
	files chan keyFiles
}

// keyFiles is the payload of msgFiles.
type keyFiles struct {
	key   [32]byte
	files []File
}

// Listen takes the user's server lock and listens on the socket. It
// returns ErrRunning when another server holds the lock. A socket file
// left by a server that died is replaced.
func Listen(opts Options, comp Compiler) (*Server, error) {
	if opts.Socket == "" {
		p, err := SocketPath()
		if err != nil {
			return nil, err
		}
		opts.Socket = p
	}
	opts.IdleTimeout = cmpDuration(opts.IdleTimeout, DefaultIdleTimeout)
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	opts.Workers = max(opts.Workers, 1)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	lock, err := os.OpenFile(opts.Socket+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("compileserver: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrRunning
		}
		return nil, fmt.Errorf("compileserver: locking %s: %w", lock.Name(), err)
	}
	// Holding the lock, any socket file is a dead server's.
	os.Remove(opts.Socket)
	ln, err := listenPrivate(opts.Socket)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s := &Server{opts: opts, comp: comp, ln: ln, lock: lock, jobs: make(chan *job, opts.Queue),
		start: time.Now(), stopped: make(chan struct{}), files: newFileChecker(), seen: map[string][32]byte{}}
	s.pool, _ = comp.(*Pool)
	if s.pool != nil {
		s.opts.Workers = s.pool.Size()
	}
	s.lastSeen.Store(time.Now().UnixNano())
	s.allowUID.Store(int64(os.Getuid()))
	return s, nil
}

// listenPrivate listens on path with the socket file mode 0600: the umask
// is narrowed around the bind so that the file is never open to others.
func listenPrivate(path string) (*net.UnixListener, error) {
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("compileserver: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	return ln, nil
}

// msBetween is the time from a to b in milliseconds, for logs.
func msBetween(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }

func cmpDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Socket returns the path the server listens on.
func (s *Server) Socket() string { return s.opts.Socket }

// Stop makes Serve return once the compiles in flight are answered.
func (s *Server) Stop() { s.stopOnce.Do(func() { close(s.stopped) }) }

// Serve answers requests until ctx ends, Stop is called, a client asks it
// to stop, or no request came for the idle timeout. It then closes the
// socket, waits for the connections being served, and releases the lock.
func (s *Server) Serve(ctx context.Context) error {
	var workers sync.WaitGroup
	for range s.opts.Workers {
		workers.Go(func() { s.work(ctx) })
	}
	go s.watchIdle(ctx)
	go func() {
		select {
		case <-ctx.Done():
		case <-s.stopped:
		}
		s.ln.Close()
	}()
	err := s.accept()
	s.Stop()
	s.wg.Wait()
	close(s.jobs)
	workers.Wait()
	if s.pool != nil {
		s.pool.Close()
	}
	s.lock.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (s *Server) accept() error {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return err
		}
		s.active.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.active.Add(-1)
			defer s.lastSeen.Store(time.Now().UnixNano())
			s.serveConn(c)
		}()
	}
}

// watchIdle stops the server once no connection was served for the idle
// timeout.
func (s *Server) watchIdle(ctx context.Context) {
	if s.opts.IdleTimeout < 0 {
		return
	}
	tick := time.NewTicker(min(s.opts.IdleTimeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopped:
			return
		case <-tick.C:
			idle := time.Since(time.Unix(0, s.lastSeen.Load()))
			if s.active.Load() == 0 && idle >= s.opts.IdleTimeout {
				s.opts.Logger.Info("kcache serve: idle; exiting", "idle", idle.Round(time.Second))
				s.Stop()
				return
			}
		}
	}
}

// serveConn answers one request on c.
func (s *Server) serveConn(c *net.UnixConn) {
	defer c.Close()
	if uid, err := peerUID(c); err != nil || int64(uid) != s.allowUID.Load() {
		s.refused.Add(1)
		s.opts.Logger.Warn("kcache serve: refused a connection", "uid", uid, "err", err)
		return
	}
	s.lastSeen.Store(time.Now().UnixNano())
	c.SetReadDeadline(time.Now().Add(readTimeout))
	typ, payload, err := readFrame(c)
	if err != nil {
		s.opts.Logger.Debug("kcache serve: bad request", "err", err)
		return
	}
	c.SetReadDeadline(time.Time{})
	var reply []byte
	replyType := typ + 1
	switch typ {
	case msgCompile:
		reply = encodeReply(s.compile(c, payload))
	case msgStatus:
		reply, _ = json.Marshal(s.Stats())
	case msgStop:
		s.Stop()
	default:
		return
	}
	if err := writeFrame(c, replyType, reply); err != nil {
		s.opts.Logger.Debug("kcache serve: writing a reply", "err", err)
	}
}

// compile checks a request against this server and queues it for the
// worker, or answers at once.
func (s *Server) compile(c net.Conn, payload []byte) *Reply {
	s.requests.Add(1)
	req, err := decodeRequest(payload)
	if err != nil {
		s.failed.Add(1)
		return &Reply{Status: StatusFailed, Message: err.Error()}
	}
	if why := s.mismatch(req); why != "" {
		s.mismatched.Add(1)
		return &Reply{Status: StatusMismatch, Message: why}
	}
	// The compile is abandoned if the client hangs up while it waits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := &job{req: req, queued: time.Now(), ctx: ctx, done: make(chan *Reply, 1)}
	switch {
	case req.FilesLater:
		j.files = make(chan keyFiles, 1)
		go readFiles(c, j.files, cancel)
	case !req.WarmUp: // a warm-up runs to its end: its client left on purpose
		go watchHangup(c, cancel)
	}
	select {
	case s.jobs <- j:
	default:
		s.busy.Add(1)
		return &Reply{Status: StatusBusy, Message: "queue full"}
	}
	return <-j.done
}

// watchHangup cancels when the client closes its end: it sends nothing
// after its request, so any read that returns means it is gone (or the
// reply was written and the connection closed).
func watchHangup(c net.Conn, cancel context.CancelFunc) {
	var b [1]byte
	c.Read(b[:])
	cancel()
}

// readFiles reads the msgFiles that follows a request with FilesLater,
// hands it to the job, then watches for the client hanging up. Anything
// else closes files unsent and cancels.
func readFiles(c net.Conn, files chan<- keyFiles, cancel context.CancelFunc) {
	typ, p, err := readFrame(c)
	if err == nil && typ == msgFiles {
		var kf keyFiles
		if kf.key, kf.files, err = decodeFiles(p); err == nil {
			files <- kf
			watchHangup(c, cancel)
			return
		}
	}
	close(files)
	cancel()
}

// mismatch says why this server cannot compile req as the client would,
// or "" when it can.
func (s *Server) mismatch(req *Request) string {
	if id := s.comp.Identity(); req.Compiler != id {
		return fmt.Sprintf("the server compiles with %q, the client with %q", id, req.Compiler)
	}
	env := slices.Sorted(slices.Values(req.Env))
	own := slices.Sorted(slices.Values(s.opts.Env))
	if !slices.Equal(env, own) {
		return fmt.Sprintf("environment differs: server %s, client %s", strings.Join(own, " "), strings.Join(env, " "))
	}
	return ""
}

// work compiles queued requests, one at a time per worker, until the
// queue closes.
func (s *Server) work(ctx context.Context) {
	for j := range s.jobs {
		j.done <- s.run(ctx, j)
	}
}

// run checks and compiles one request.
func (s *Server) run(ctx context.Context, j *job) *Reply {
	req := j.req
	if waited := time.Since(j.queued); req.MaxWait > 0 && waited > req.MaxWait {
		s.busy.Add(1)
		return &Reply{Status: StatusBusy, Message: fmt.Sprintf("waited %v in the queue", waited.Round(time.Millisecond))}
	}
	if j.ctx.Err() != nil {
		if req.FilesLater {
			s.earlyAbandoned.Add(1) // its key hit while it waited
		} else {
			s.failed.Add(1)
		}
		return &Reply{Status: StatusFailed, Message: "the client left"}
	}
	if req.FilesLater {
		return s.runEarly(ctx, j)
	}
	return s.runChecked(ctx, j)
}

// runChecked checks the request's files, then compiles.
func (s *Server) runChecked(ctx context.Context, j *job) *Reply {
	unchanged := s.files.watch(j.req.Files)
	if why := s.files.check(j.req.Files); why != "" {
		s.stale.Add(1)
		return &Reply{Status: StatusStale, Message: why}
	}
	pch, changed := s.pchSafe(j.req)
	return s.finish(ctx, j, pch, changed, unchanged)
}

// finish compiles a request whose files were checked (unchanged says
// whether they are as they were then), and checks them again: a file that
// changed while the compiler read it may be in the image, so the compile
// is answered stale, never handed back. Where the compile may have made or
// used precompiled headers, they may hold the change too, with the times
// of a file restored since: the server retires, as for a header changed
// between compiles.
func (s *Server) finish(ctx context.Context, j *job, pch, changed bool, unchanged func() string) *Reply {
	began := time.Now()
	reply, took, err := s.compileIn(ctx, j, pch)
	if err != nil {
		s.failed.Add(1)
		return &Reply{Status: StatusFailed, Message: err.Error()}
	}
	compiled := time.Now()
	why := s.files.check(j.req.Files)
	if moved := unchanged(); why == "" && moved != "" {
		why = moved
		if pch {
			s.retire()
		}
	}
	if why != "" {
		s.stale.Add(1)
		return &Reply{Status: StatusStale, Message: "during the compile: " + why}
	}
	s.opts.Logger.Debug("kcache serve: compile", "program", j.req.Name, "queued_ms", msBetween(j.queued, began),
		"compile_ms", msBetween(began, compiled), "check_after_ms", msBetween(compiled, time.Now()), "files", len(j.req.Files))
	return s.answer(j.req, reply, took, changed)
}

// runEarly compiles a request whose key and files come later (the client
// computes its key meanwhile), then waits for them. The early compile is
// answered only if every file is as the key says and none changed since
// before the request came (fileChecker.checkSince); where one may have, the
// request is compiled again, now that its files are known; where its
// headers changed since an earlier compile made the PCH it used, again
// without PCH.
func (s *Server) runEarly(ctx context.Context, j *job) *Reply {
	pch := s.pchEarly(j.req)
	began := time.Now()
	reply, took, err := s.compileIn(ctx, j, pch)
	compiled := time.Now()
	var kf keyFiles
	var ok bool
	select {
	case kf, ok = <-j.files:
	case <-j.ctx.Done():
	}
	if !ok {
		s.earlyAbandoned.Add(1)
		return &Reply{Status: StatusFailed, Message: "the client sent no files (it needed no compile)"}
	}
	// A copy: a compile abandoned at shutdown may still be sending the
	// request to a worker.
	req := *j.req
	req.Key, req.Files = kf.key, kf.files
	j.req = &req
	filed := time.Now()
	why, fresh := s.files.checkSince(j.req.Files, j.queued)
	s.opts.Logger.Debug("kcache serve: early compile", "program", req.Name, "queued_ms", msBetween(j.queued, began),
		"compile_ms", msBetween(began, compiled), "files_wait_ms", msBetween(compiled, filed),
		"check_ms", msBetween(filed, time.Now()), "files", len(req.Files), "fresh", fresh)
	switch {
	case why != "":
		s.stale.Add(1)
		return &Reply{Status: StatusStale, Message: why}
	case fresh != "":
		s.earlyRedone.Add(1)
		return s.runChecked(ctx, j)
	}
	usePCH, changed := s.pchSafe(j.req)
	switch {
	case pch && !usePCH:
		s.earlyRedone.Add(1)
		return s.finish(ctx, j, false, changed, s.files.watch(j.req.Files))
	case err != nil:
		s.failed.Add(1)
		return &Reply{Status: StatusFailed, Message: err.Error()}
	}
	s.early.Add(1)
	return s.answer(j.req, reply, took, changed)
}

// compileIn compiles j's request: in its working directory, unless the
// pool's worker moves there itself; abandoned when the client leaves.
func (s *Server) compileIn(ctx context.Context, j *job, pch bool) (*Reply, time.Duration, error) {
	if s.pool == nil {
		if err := s.cwd.enter(j.req.WorkDir); err != nil {
			return nil, 0, err
		}
		defer s.cwd.leave()
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopWatch := context.AfterFunc(j.ctx, cancel)
	defer stopWatch()
	start := time.Now()
	reply, err := s.comp.Compile(cctx, j.req, pch)
	took := time.Since(start)
	s.compileNanos.Add(int64(took))
	return reply, took, err
}

// answer counts a compile's reply, and retires the server where a header
// changed, or lets the pool's other workers make the PCH this compile made.
func (s *Server) answer(req *Request, reply *Reply, took time.Duration, changed bool) *Reply {
	s.count(reply)
	reply.Compile = took
	if changed {
		s.retire()
	} else if s.pool != nil && reply.PCH == PCHCreated {
		// The other workers make their PCH of this context now, from
		// the request just checked; one whose compile saw a header change
		// is stopped (Pool.Warm).
		s.pool.Warm(req, func() func() bool {
			unchanged := s.files.watch(req.Files)
			return func() bool { return s.files.check(req.Files) == "" && unchanged() == "" }
		})
	}
	return reply
}

// pchEarly says whether a compile that begins before its files are known
// may use the precompiled headers: not once the server retires, nor, in a
// server that compiles in its own process, for another context than the
// first (see pchSafe, which decides again once the files are known).
func (s *Server) pchEarly(req *Request) bool {
	s.pchMu.Lock()
	defer s.pchMu.Unlock()
	if s.retiring {
		return false
	}
	ctx := pchContextOf(req)
	if s.pchContext == "" || s.pool != nil {
		s.pchContext = ctx
	}
	return ctx == s.pchContext
}

// pchSafe records the headers of req and reports whether the compiler's
// precompiled headers may be used for it, and whether a header an earlier
// compile read has other content now (changed): then they may not, nor
// for a request of another context than the first (pchContextOf). NVRTC's PCH (EDG's) checks its
// headers by modification time; an edit that keeps the time (a copy that
// preserves it, two writes in one tick) would compile against the old
// header. Such a request is compiled without PCH, and the server retires
// so that the next client starts one with a fresh PCH heap.
func (s *Server) pchSafe(req *Request) (pch, changed bool) {
	s.pchMu.Lock()
	defer s.pchMu.Unlock()
	safe := !s.retiring
	// A request of another context may resolve an include to another
	// file, or see a header under other macros: whether NVRTC's PCH
	// notices is not known (it missed an edit in place), so such a
	// request goes without PCH, and the server stays. A pool keeps one
	// context per worker process and routes by it itself.
	ctx := pchContextOf(req)
	if s.pchContext == "" || s.pool != nil {
		s.pchContext = ctx
	}
	sameContext := ctx == s.pchContext
	note := func(name string, d [32]byte) {
		if old, ok := s.seen[name]; ok && old != d {
			safe = false
		}
		s.seen[name] = d
	}
	// A place that was absent for an earlier compile and holds a header
	// now (or the reverse) changes which file an include opens with the
	// same context: a header created in an earlier -I directory shadows
	// the one the PCH was made from, whose time has not changed, so NVRTC's
	// check by modification time is no help. It counts as a change.
	for _, f := range req.Files {
		switch f.Kind {
		case FilePresent:
			note(f.Path, f.Digest)
		case FileAbsent:
			note(f.Path, absentPlace)
		case FileDay:
			// A header that expands __DATE__ is in the PCH as the day
			// it was made: whether NVRTC refuses such a PCH the next day
			// is not known, so a key of another day than an earlier
			// compile's counts as a changed header.
			note("day:", sha256.Sum256([]byte(f.Path)))
		}
	}
	for _, h := range req.Headers {
		note("memory:"+h.Name, sha256.Sum256(h.Content))
	}
	switch {
	case !safe:
		return false, true
	case !sameContext:
		s.otherContext.Add(1)
		return false, false
	}
	return true, false
}

// absentPlace is what seen holds for a place found absent: no file's
// SHA-256, short of a preimage.
var absentPlace = sha256.Sum256([]byte("kcache compile server: an absent place"))

// pchContextOf names what decides how a request's includes resolve and
// what its headers' macros are, besides the files' contents.
func pchContextOf(req *Request) string {
	var b strings.Builder
	b.WriteString(req.WorkDir)
	b.WriteByte(0)
	b.WriteString(filepath.Dir(req.Name))
	for _, o := range req.Options {
		b.WriteByte(0)
		b.WriteString(o)
	}
	return b.String()
}

// retire stops the server after the compile in hand: its compiler's
// precompiled state may hold a header that has changed since.
func (s *Server) retire() {
	s.opts.Logger.Info("kcache serve: a header changed since an earlier compile; retiring so the next server starts with fresh precompiled headers")
	s.pchMu.Lock()
	if !s.retiring {
		s.retired.Add(1)
	}
	s.retiring = true
	s.pchMu.Unlock()
	s.Stop()
}

func (s *Server) count(r *Reply) {
	switch r.Status {
	case StatusOK:
		s.compiled.Add(1)
	case StatusCompileError:
		s.compileErrors.Add(1)
	}
	switch r.PCH {
	case PCHCreated:
		s.pchCreated.Add(1)
	case PCHUsed:
		s.pchHits.Add(1)
	}
}

// cwdGate runs compiles in their client's working directory: relative -I
// options and the program's path resolve against it, as in the client. The
// process has one working directory, so compiles run together only while
// they share it; a compile for another directory waits until none runs.
type cwdGate struct {
	mu      sync.Mutex
	cond    *sync.Cond // on mu
	dir     string     // the working directory compiles run in; guarded by mu
	running int        // compiles running in dir; guarded by mu
}

// enter waits until compiles may run in dir, and moves there.
func (g *cwdGate) enter(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	for g.running > 0 && g.dir != dir && dir != "" {
		g.cond.Wait()
	}
	if dir != "" && g.dir != dir {
		if err := os.Chdir(dir); err != nil {
			return fmt.Errorf("compileserver: the client's working directory: %w", err)
		}
		g.dir = dir
	}
	g.running++
	return nil
}

// leave ends a compile that entered.
func (g *cwdGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running--; g.running == 0 {
		g.cond.Broadcast()
	}
}

// Stats returns the server's counters and state.
func (s *Server) Stats() Stats {
	st := Stats{PID: os.Getpid(), Socket: s.opts.Socket, Compiler: s.comp.Identity(),
		Uptime: time.Since(s.start), IdleTimeout: s.opts.IdleTimeout,
		Requests: s.requests.Load(), Compiled: s.compiled.Load(), CompileError: s.compileErrors.Load(),
		Stale: s.stale.Load(), Busy: s.busy.Load(), Mismatch: s.mismatched.Load(), Failed: s.failed.Load(),
		Refused: s.refused.Load(), Retired: s.retired.Load(), PCHCreated: s.pchCreated.Load(), PCHHits: s.pchHits.Load(), PCHOtherContext: s.otherContext.Load(),
		CompileTime: time.Duration(s.compileNanos.Load()), Queued: len(s.jobs),
		Early: s.early.Load(), EarlyRedone: s.earlyRedone.Load(), EarlyAbandoned: s.earlyAbandoned.Load()}
	if s.pool != nil {
		st.Workers = s.pool.Workers()
	}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		st.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return st
}
