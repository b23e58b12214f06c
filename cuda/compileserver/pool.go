package compileserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// workerStartWait bounds a worker's start: a Go binary that loads NVRTC
// and says hello takes well under a second; past this it is stuck.
const workerStartWait = 30 * time.Second

// PoolOptions configures a Pool.
type PoolOptions struct {
	// Size is how many worker processes the pool keeps; 0 means 1.
	Size int
	// Command returns the command that runs one worker (a process that
	// calls ServeWorker on the files it inherits as descriptors 3, to
	// read, and 4, to write). The pool sets its ExtraFiles and its
	// process attributes.
	Command func() *exec.Cmd
	// Identity is the compiler identity the workers must announce; a
	// worker that announces another is stopped and its compile fails.
	Identity string
	// MaxRSS replaces a worker whose resident memory exceeds it after a
	// compile (its precompiled headers go with it); 0 means no bound.
	MaxRSS int64
	// Stderr receives the workers' standard output and error (their log).
	Stderr io.Writer
	// Cleanup, when set, is called with the pid of each worker that
	// exited, to remove what it left behind (NVRTC's PCH files).
	Cleanup func(pid int)
	// Logger receives the pool's diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// Pool is a Compiler that runs each compile in one of several worker
// processes. NVRTC's precompiled headers live in one heap per process and
// NVRTC serialises the compiles that use them, so concurrency needs
// processes: each worker keeps its own compiler and PCH, and a request
// goes to an idle worker that already holds its context and headers
// (routeOf), else to one that holds none. Each worker compiles one request at a time
// in the request's working directory. A worker that crashes costs its
// request a StatusFailed answer (the client compiles itself); the next
// request that needs the slot starts a new one.
type Pool struct {
	opts PoolOptions

	mu     sync.Mutex    // guards the slots' fields but w, closed and freed
	slots  []*slot       // fixed length: opts.Size
	closed bool          // set by Close: no compile starts
	freed  chan struct{} // closed and replaced whenever a slot turns idle
}

// slot is one place of the pool: a worker process, or none yet. Its
// worker (w) belongs to whoever set busy; the other fields are guarded by
// Pool.mu.
type slot struct {
	w        *worker   // nil until a compile needs one, or after it exited
	context  string    // what the worker's PCH was made for; "" for none
	busy     bool      // a compile or start owns the slot
	retire   bool      // its worker must be replaced before the next compile
	lastUsed time.Time // for choosing which context to give up
	compiles int64
	pid      int // the worker's, as of the last release; 0 for none
}

// worker is one running worker process.
type worker struct {
	cmd  *exec.Cmd
	in   *os.File // the pool writes requests here
	out  *os.File // and reads replies here
	done chan struct{}
}

// NewPool returns a pool; it starts no process until Start or the first
// compile.
func NewPool(opts PoolOptions) *Pool {
	opts.Size = max(opts.Size, 1)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Pool{opts: opts, freed: make(chan struct{})}
	for range opts.Size {
		p.slots = append(p.slots, &slot{})
	}
	return p
}

// Size returns how many workers the pool keeps.
func (p *Pool) Size() int { return len(p.slots) }

// Identity implements Compiler.
func (p *Pool) Identity() string { return p.opts.Identity }

// Start starts every worker in the background, so that the first
// compiles do not wait for a process to load its compiler.
func (p *Pool) Start() {
	p.mu.Lock()
	var mine []*slot
	for _, s := range p.slots {
		if !s.busy && s.w == nil && !p.closed {
			s.busy = true
			mine = append(mine, s)
		}
	}
	p.mu.Unlock()
	for _, s := range mine {
		go func() {
			if err := p.ensure(s); err != nil {
				p.opts.Logger.Warn("kcache serve: starting a worker", "err", err)
			}
			p.release(s, false, false)
		}()
	}
}

// Compile implements Compiler: it waits for a worker (see pick) and
// compiles r there. If ctx ends first, the worker's compile finishes in
// the background and the slot is freed then.
func (p *Pool) Compile(ctx context.Context, r *Request, pch bool) (*Reply, error) {
	c := routeOf(r)
	s, samePCH, err := p.acquire(ctx, c, pch)
	if err != nil {
		return nil, err
	}
	type result struct {
		reply *Reply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, err := p.runOn(s, r, pch && samePCH)
		done <- result{reply, err}
	}()
	select {
	case res := <-done:
		return res.reply, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Warm compiles r, in the background, on every idle worker that holds no
// precompiled headers yet, so that they make theirs before clients need
// them: the server calls it after a compile created a PCH. The replies are
// dropped; watch is called before each, and the function it returns after
// it: a worker whose compile read a header that has changed since, or
// changed while it ran (false), is stopped, so that no PCH the server has
// not vetted stays.
func (p *Pool) Warm(r *Request, watch func() (valid func() bool)) {
	c := routeOf(r)
	p.mu.Lock()
	var mine []*slot
	for _, s := range p.slots {
		if !s.busy && s.context == "" && !p.closed {
			s.busy, s.context = true, c
			mine = append(mine, s)
		}
	}
	p.mu.Unlock()
	for _, s := range mine {
		go func() {
			valid := watch()
			reply, err := p.compileOn(s, r, true)
			ok := err == nil && reply.Status == StatusOK && valid()
			if !ok {
				p.stopWorker(s)
			}
			p.release(s, !ok, err == nil)
		}()
	}
}

// acquire waits for a slot for a compile of context c and marks it busy;
// samePCH says whether it may use the worker's precompiled headers.
func (p *Pool) acquire(ctx context.Context, c string, pch bool) (*slot, bool, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, errors.New("compileserver: the pool is closed")
		}
		s, samePCH := p.pick(c, pch)
		freed := p.freed
		if s != nil {
			s.busy = true
			p.mu.Unlock()
			return s, samePCH, nil
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-freed:
		}
	}
}

// pick chooses the slot for a compile of context c, with p.mu held, or
// nil to wait: an idle worker of context c first; then an idle slot with
// no context, which takes c; then, if no worker holds c at all, the idle
// slot used longest ago, whose worker is replaced so that its new process
// makes a PCH for c (a process's PCH heap holds the headers of one
// context: giving it up costs a compile without PCH, which c would have
// cost anyway). A request that may not use PCH (pch false) takes any idle
// slot, and its context stays.
func (p *Pool) pick(c string, pch bool) (*slot, bool) {
	idle := slices.DeleteFunc(slices.Clone(p.slots), func(s *slot) bool { return s.busy })
	if len(idle) == 0 {
		return nil, false
	}
	if !pch {
		return idle[0], false
	}
	for _, s := range idle {
		if s.context == c {
			return s, true
		}
	}
	for _, s := range idle {
		if s.context == "" {
			s.context = c
			return s, true
		}
	}
	if slices.ContainsFunc(p.slots, func(s *slot) bool { return s.context == c }) {
		return nil, false // a busy worker holds c: it is worth the wait
	}
	lru := slices.MinFunc(idle, func(a, b *slot) int { return a.lastUsed.Compare(b.lastUsed) })
	p.opts.Logger.Info("kcache serve: a worker gives up its precompiled headers for another context")
	lru.context, lru.retire = c, true
	return lru, true
}

// release frees s for the next compile; lost says its worker's PCH is
// gone (the worker exited or was stopped), compiled that it compiled.
func (p *Pool) release(s *slot, lost, compiled bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.busy = false
	if lost || s.w == nil {
		s.context = ""
	}
	s.pid = 0
	if s.w != nil {
		s.pid = s.w.cmd.Process.Pid
	}
	if compiled {
		s.compiles++
		s.lastUsed = time.Now()
	}
	close(p.freed)
	p.freed = make(chan struct{})
}

// runOn compiles r on the slot s acquired, and releases it.
func (p *Pool) runOn(s *slot, r *Request, pch bool) (*Reply, error) {
	reply, err := p.compileOn(s, r, pch)
	lost := err != nil
	if err == nil && p.opts.MaxRSS > 0 {
		if rss, _ := processMemory(s.w.cmd.Process.Pid); rss > p.opts.MaxRSS {
			p.opts.Logger.Info("kcache serve: replacing a worker over its memory bound", "rss_mb", rss>>20, "bound_mb", p.opts.MaxRSS>>20)
			p.stopWorker(s)
			lost = true
		}
	}
	p.release(s, lost, err == nil)
	return reply, err
}

// compileOn sends r to s's worker, starting one if it has none, and reads
// the reply. A worker that does not answer is stopped.
func (p *Pool) compileOn(s *slot, r *Request, pch bool) (*Reply, error) {
	p.mu.Lock()
	retire := s.retire
	s.retire = false
	p.mu.Unlock()
	if retire {
		p.stopWorker(s)
	}
	if err := p.ensure(s); err != nil {
		return nil, err
	}
	if err := writeFrame(s.w.in, msgWork, encodeWork(r, pch)); err != nil {
		p.stopWorker(s)
		return nil, fmt.Errorf("compileserver: sending to a worker: %w", err)
	}
	typ, payload, err := readFrame(s.w.out)
	if err == nil && typ != msgWorkReply {
		err = fmt.Errorf("%w: worker replied with type %d", ErrProtocol, typ)
	}
	if err != nil {
		p.stopWorker(s)
		return nil, fmt.Errorf("compileserver: the worker exited or broke (did it crash?): %w", err)
	}
	return decodeReply(payload)
}

// ensure starts s's worker if it has none running, and checks its hello.
func (p *Pool) ensure(s *slot) error {
	if s.w != nil {
		select {
		case <-s.w.done:
			p.stopWorker(s)
		default:
			return nil
		}
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return errors.New("compileserver: the pool is closed")
	}
	w, err := p.startWorker()
	if err != nil {
		return err
	}
	s.w = w
	return nil
}

// startWorker runs a worker process and reads its hello.
func (p *Pool) startWorker() (*worker, error) {
	toWorker, in, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("compileserver: %w", err)
	}
	out, fromWorker, err := os.Pipe()
	if err != nil {
		toWorker.Close()
		in.Close()
		return nil, fmt.Errorf("compileserver: %w", err)
	}
	cmd := p.opts.Command()
	cmd.ExtraFiles = []*os.File{toWorker, fromWorker}
	cmd.Stdout, cmd.Stderr = p.opts.Stderr, p.opts.Stderr
	// The worker dies with the server: the kernel kills it when the
	// server's thread that started it ends, and it exits by itself when
	// its request pipe closes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	toWorker.Close()
	fromWorker.Close()
	if err != nil {
		in.Close()
		out.Close()
		return nil, fmt.Errorf("compileserver: starting a worker: %w", err)
	}
	w := &worker{cmd: cmd, in: in, out: out, done: make(chan struct{})}
	go func() { cmd.Wait(); close(w.done) }()
	if err := p.hello(w); err != nil {
		p.stop(w)
		return nil, err
	}
	return w, nil
}

// hello reads the worker's first frame and checks its identity.
func (p *Pool) hello(w *worker) error {
	w.out.SetReadDeadline(time.Now().Add(workerStartWait))
	defer w.out.SetReadDeadline(time.Time{})
	typ, id, err := readFrame(w.out)
	switch {
	case err != nil:
		return fmt.Errorf("compileserver: a worker did not start: %w", err)
	case typ != msgWorkerHello:
		return fmt.Errorf("%w: worker hello of type %d", ErrProtocol, typ)
	case string(id) != p.opts.Identity:
		return fmt.Errorf("compileserver: a worker compiles with %q, the server with %q", id, p.opts.Identity)
	}
	return nil
}

// stopWorker stops s's worker, if any.
func (p *Pool) stopWorker(s *slot) {
	if s.w != nil {
		p.stop(s.w)
		s.w = nil
	}
}

// stop ends a worker: its request pipe closes (it exits when idle), and
// it is killed, since a worker in the middle of a compile would not see
// the pipe; then what it left behind is removed.
func (p *Pool) stop(w *worker) {
	w.in.Close()
	w.cmd.Process.Kill()
	<-w.done
	w.out.Close()
	if p.opts.Cleanup != nil {
		p.opts.Cleanup(w.cmd.Process.Pid)
	}
}

// Close stops every worker, after the compiles in flight.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	for slices.ContainsFunc(p.slots, func(s *slot) bool { return s.busy }) {
		freed := p.freed
		p.mu.Unlock()
		<-freed
		p.mu.Lock()
	}
	for _, s := range p.slots {
		s.busy = true // for good: no compile starts after Close
	}
	p.mu.Unlock()
	for _, s := range p.slots {
		p.stopWorker(s)
	}
}

// Workers returns the state of each slot, for Stats.
func (p *Pool) Workers() []WorkerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]WorkerStats, len(p.slots))
	for i, s := range p.slots {
		out[i] = WorkerStats{Slot: i, PID: s.pid, Compiles: s.compiles, Busy: s.busy}
		if s.context != "" {
			sum := sha256.Sum256([]byte(s.context))
			out[i].Context = hex.EncodeToString(sum[:6])
		}
		if s.pid != 0 {
			out[i].RSS, out[i].PeakRSS = processMemory(s.pid)
		}
	}
	return out
}

// processMemory returns a process's resident memory and its peak, in
// bytes, from /proc (VmRSS, VmHWM); zeros where it cannot be read.
func processMemory(pid int) (rss, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(b)) {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			rss = kb << 10
		} else if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			peak = kb << 10
		}
	}
	return rss, peak
}

// routeOf is what a worker's precompiled headers must share with r to
// serve it: r's context (pchContextOf) and the preprocessor lines that
// open its program, where NVRTC's automatic PCH takes its headers from
// (its "header stop" is the first line of other code). Two programs of
// one context over other headers would each replace the other's PCH in
// one worker; routed apart, each keeps its own.
func routeOf(r *Request) string {
	var b strings.Builder
	b.WriteString(pchContextOf(r))
	for line := range strings.Lines(string(r.Code)) {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "//") && !strings.HasPrefix(l, "#") {
			break
		}
		b.WriteByte(0)
		b.WriteString(l)
	}
	return b.String()
}
