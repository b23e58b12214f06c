package compileserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// poolFake is the fake compiler of a worker process: like fakeCompiler,
// and it says which process compiled (Reply.Log) and, as NVRTC does, that
// its first compile with PCH created one and later ones used it.
type poolFake struct{ made atomic.Bool }

func (*poolFake) Identity() string { return "fake 1" }

func (p *poolFake) Compile(ctx context.Context, r *Request, pch bool) (*Reply, error) {
	reply, err := fakeCompiler{}.Compile(ctx, r, pch)
	if err != nil || reply.Status != StatusOK {
		return reply, err
	}
	reply.Log = "pid=" + strconv.Itoa(os.Getpid())
	reply.PCH = PCHNone
	if pch {
		reply.PCH = PCHUsed
		if !p.made.Swap(true) {
			reply.PCH = PCHCreated
		}
	}
	return reply, nil
}

// runWorkerChild is a worker process of the tests' pools.
func runWorkerChild() int {
	in, out := os.NewFile(3, "requests"), os.NewFile(4, "replies")
	if err := ServeWorker(context.Background(), in, out, &poolFake{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// newTestPool is a pool whose workers are this test binary.
func newTestPool(size int, stderr io.Writer) *Pool {
	self, _ := filepath.Abs(os.Args[0])
	return NewPool(PoolOptions{Size: size, Identity: "fake 1", Stderr: stderr,
		Command: func() *exec.Cmd {
			cmd := exec.Command(self, "worker")
			cmd.Env = append(os.Environ(), childEnv+"=1")
			return cmd
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// startPool runs a server over a pool of size worker processes in this
// process.
func startPool(t *testing.T, size int) (*Server, *Pool, *Client) {
	t.Helper()
	pool := newTestPool(size, os.Stderr)
	srv, err := Listen(Options{Socket: filepath.Join(shortTemp(t), "s.sock"), Env: []string{"NVRTC_A=1"}, Queue: 64,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, pool)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return srv, pool, &Client{Socket: srv.Socket()}
}

// pidOf is the worker that compiled a reply of poolFake.
func pidOf(t *testing.T, r *Reply) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimPrefix(r.Log, "pid="))
	if r.Status != StatusOK || err != nil {
		t.Fatalf("reply %v %q %q", r.Status, r.Message, r.Log)
	}
	return pid
}

// waitIdle waits until no worker is busy (the pool's warm-up compiles
// run in the background).
func waitIdle(t *testing.T, p *Pool) []WorkerStats {
	t.Helper()
	for range 2000 {
		ws := p.Workers()
		if !slices.ContainsFunc(ws, func(w WorkerStats) bool { return w.Busy }) {
			return ws
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the pool's workers stayed busy")
	return nil
}

func withOptions(r *Request, opts ...string) *Request {
	r.Options = opts
	return r
}

// TestPoolRoutesByContext: the first compile of a context makes the PCH in
// one worker, the pool warms the other from it, and a later request of
// that context goes to a worker holding it; a request of a context no
// worker holds replaces the worker used longest ago, and the other still
// serves the first context.
func TestPoolRoutesByContext(t *testing.T) {
	_, pool, cl := startPool(t, 2)
	a := func() *Request { return withOptions(request("a"), "-I", "one") }
	first := compile(t, cl, a())
	p1 := pidOf(t, first)
	if first.PCH != PCHCreated || !strings.Contains(string(first.Code), "pch=true") {
		t.Fatalf("first compile: %v %q", first.PCH, first.Code)
	}
	ws := waitIdle(t, pool)
	if ws[0].Context == "" || ws[0].Context != ws[1].Context || ws[0].Compiles != 1 || ws[1].Compiles != 1 {
		t.Fatalf("after the warm-up: %+v, want both workers of the first context", ws)
	}
	for _, w := range ws {
		if w.PID == 0 || w.RSS == 0 || w.PeakRSS < w.RSS {
			t.Errorf("worker %+v: want its pid and memory", w)
		}
	}
	second := compile(t, cl, a())
	if second.PCH != PCHUsed || !slices.Contains([]int{ws[0].PID, ws[1].PID}, pidOf(t, second)) {
		t.Fatalf("second compile of the context: %v by %d, workers %+v", second.PCH, pidOf(t, second), ws)
	}
	other := compile(t, cl, withOptions(request("b"), "-I", "two"))
	po := pidOf(t, other)
	if po == ws[0].PID || po == ws[1].PID || other.PCH != PCHCreated {
		t.Fatalf("another context: by %d (%v), want a new worker that makes its PCH (workers %+v, first %d)", po, other.PCH, ws, p1)
	}
	waitIdle(t, pool)
	again := compile(t, cl, a())
	if pa := pidOf(t, again); pa == po || again.PCH != PCHUsed {
		t.Errorf("the first context again: by %d (%v), want the worker that kept it", pa, again.PCH)
	}
}

// TestPoolConcurrent: many clients at once in two working directories,
// each answered with its own compile, run in its own directory, by more
// than one worker.
func TestPoolConcurrent(t *testing.T) {
	_, pool, cl := startPool(t, 3)
	dirs := []string{shortTemp(t), shortTemp(t)}
	var mu sync.Mutex
	pids := map[int]bool{}
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			code := fmt.Sprintf("SLEEP %d", i)
			r := request(code)
			r.WorkDir = dirs[i%2]
			reply, err := cl.Compile(context.Background(), r)
			if err != nil {
				t.Error(err)
				return
			}
			want := fmt.Sprintf("code=%s wd=%s ", code, dirs[i%2])
			if reply.Status != StatusOK || !strings.HasPrefix(string(reply.Code), want) {
				t.Errorf("client %d: %v %q, want %q", i, reply.Status, reply.Code, want)
				return
			}
			mu.Lock()
			pids[pidOf(t, reply)] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	// Two working directories are two contexts: a worker may be replaced
	// to serve the second, so more than Size processes may have served.
	if len(pids) < 2 {
		t.Errorf("%d workers compiled, want several", len(pids))
	}
	if ws := waitIdle(t, pool); len(ws) != pool.Size() {
		t.Errorf("%d workers, want %d", len(ws), pool.Size())
	}
}

// TestPoolWorkerCrash: a compile that kills its worker is answered failed
// (the client compiles itself); the server stays, and the next compile
// runs in a new worker.
func TestPoolWorkerCrash(t *testing.T) {
	srv, pool, cl := startPool(t, 1)
	before := pidOf(t, compile(t, cl, request("ok")))
	waitIdle(t, pool)
	if r := compile(t, cl, request("CRASH")); r.Status != StatusFailed || !strings.Contains(r.Message, "worker") {
		t.Fatalf("crash: %v %q, want failed", r.Status, r.Message)
	}
	after := compile(t, cl, request("ok again"))
	if p := pidOf(t, after); p == before || after.PCH != PCHCreated {
		t.Errorf("after the crash: worker %d (%v), want a new one (was %d) with a new PCH", p, after.PCH, before)
	}
	if st := srv.Stats(); st.Failed != 1 || st.Compiled != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestPoolIdentityChecked: a worker whose compiler is not the pool's is
// stopped and its compile fails.
func TestPoolIdentityChecked(t *testing.T) {
	pool := newTestPool(1, io.Discard)
	pool.opts.Identity = "fake 2"
	defer pool.Close()
	if _, err := pool.Compile(context.Background(), request("k"), true); err == nil || !strings.Contains(err.Error(), "fake 1") {
		t.Errorf("a worker of another compiler: %v", err)
	}
}

// TestPoolDiesWithServer: killing the server (SIGKILL: no cleanup runs)
// kills its workers.
func TestPoolDiesWithServer(t *testing.T) {
	cl := startChild(t, "--pool", "2")
	compile(t, cl, request("k"))
	var st *Stats
	for range 2000 {
		var err error
		if st, err = cl.Status(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(st.Workers) == 2 && st.Workers[0].PID != 0 && st.Workers[1].PID != 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(st.Workers) != 2 || st.Workers[1].PID == 0 {
		t.Fatalf("workers %+v", st.Workers)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, w := range st.Workers {
		deadline := time.Now().Add(20 * time.Second)
		for alive(w.PID) {
			if time.Now().After(deadline) {
				t.Fatalf("worker %d outlived its server", w.PID)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// alive reports whether pid runs (a zombie counts as gone).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestRouteOf: programs of one context route together only when the
// preprocessor lines that open them match.
func TestRouteOf(t *testing.T) {
	r := func(code string) string { return routeOf(withOptions(request(code), "-I", "x")) }
	a := "#include <cub/cub.cuh>\n// tile\n#include \"v.h\"\nconstexpr int K = 1;\n__global__ void k() {}\n"
	b := "#include <cub/cub.cuh>\n// tile\n#include \"v.h\"\nconstexpr int K = 2;\n__global__ void k() {}\n"
	c := "#include <thrust/tuple.h>\n#include \"v.h\"\nconstexpr int K = 1;\n"
	d := "#define N 4\n#include <cub/cub.cuh>\n#include \"v.h\"\nconstexpr int K = 1;\n"
	if r(a) != r(b) {
		t.Error("kernels over the same headers route apart")
	}
	if r(a) == r(c) || r(a) == r(d) {
		t.Error("kernels over other headers, or other macros before them, route together")
	}
	if routeOf(withOptions(request(a), "-I", "y")) == r(a) {
		t.Error("another search path routes together")
	}
}

// TestPoolMaxRSS: a worker over the memory bound after a compile is
// replaced: the next compile runs in a new process (whose PCH the pool's
// warm-up of the emptied slot may have made already).
func TestPoolMaxRSS(t *testing.T) {
	_, pool, cl := startPool(t, 1)
	pool.opts.MaxRSS = 1 // every process is over it
	first := compile(t, cl, request("a"))
	second := compile(t, cl, request("b"))
	if pidOf(t, first) == pidOf(t, second) {
		t.Errorf("both compiles by %d: want a new worker for the second", pidOf(t, first))
	}
}
