package compileserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcache/kcache/deps"
)

// childEnv makes the test binary a server with the fake compiler: Start
// runs it as `serve --socket PATH --log PATH.log`.
const childEnv = "KCACHE_TEST_COMPILESERVER"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" && len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(runChild(os.Args[2:]))
	}
	if os.Getenv(childEnv) != "" && len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(runWorkerChild())
	}
	os.Exit(m.Run())
}

// runChild is the server process of the tests.
func runChild(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	socket := fs.String("socket", "", "")
	logFile := fs.String("log", "", "")
	idle := fs.Duration("idle-timeout", time.Minute, "")
	workers := fs.Int("workers", 1, "")
	pool := fs.Int("pool", 0, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return 2
	}
	defer f.Close()
	var comp Compiler = fakeCompiler{}
	if *pool > 0 {
		p := newTestPool(*pool, f)
		p.Start()
		comp = p
	}
	srv, err := Listen(Options{Socket: *socket, IdleTimeout: *idle, Workers: *workers, Env: []string{"NVRTC_A=1"},
		Logger: slog.New(slog.NewTextHandler(f, nil))}, comp)
	if errors.Is(err, ErrRunning) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(f, err)
		return 1
	}
	if err := srv.Serve(context.Background()); err != nil {
		fmt.Fprintln(f, err)
		return 1
	}
	return 0
}

// fakeCompiler "compiles" by echoing what it was given, the content of
// the request's files as it reads them, and its working directory; its
// source can ask it to crash, fail, sleep or reject the program.
type fakeCompiler struct{}

func (fakeCompiler) Identity() string { return "fake 1" }

func (fakeCompiler) Compile(ctx context.Context, r *Request, pch bool) (*Reply, error) {
	code := string(r.Code)
	switch {
	case strings.Contains(code, "CRASH"):
		os.Exit(3)
	case strings.Contains(code, "FAIL"):
		return nil, errors.New("fake failure")
	case strings.Contains(code, "REJECT"):
		return &Reply{Status: StatusCompileError, Log: "rejected"}, nil
	case strings.Contains(code, "SLEEP"):
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var out bytes.Buffer
	wd, _ := os.Getwd()
	fmt.Fprintf(&out, "code=%s wd=%s pch=%v", code, wd, pch)
	for _, f := range r.Files {
		if f.Kind == FilePresent {
			b, _ := os.ReadFile(f.Path)
			fmt.Fprintf(&out, " %s=%s", filepath.Base(f.Path), b)
		}
	}
	return &Reply{Status: StatusOK, Code: out.Bytes(), Lowered: r.NameExpressions, PCH: PCHUsed}, nil
}

// shortTemp returns a directory whose socket paths fit the 108 bytes of a
// Unix socket address.
func shortTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kcs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startChild starts a server process of the test binary on a new socket
// and stops it at cleanup.
func startChild(t *testing.T, args ...string) *Client {
	t.Helper()
	t.Setenv(childEnv, "1")
	cl := &Client{Socket: filepath.Join(shortTemp(t), "s.sock")}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Start(ctx, os.Args[0], args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Stop(context.Background()) })
	return cl
}

// startInProcess runs a server with the fake compiler in this process.
func startInProcess(t *testing.T, opts Options) (*Server, *Client, chan error) {
	t.Helper()
	if opts.Socket == "" {
		opts.Socket = filepath.Join(shortTemp(t), "s.sock")
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.Env == nil {
		opts.Env = []string{"NVRTC_A=1"}
	}
	srv, err := Listen(opts, fakeCompiler{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return srv, &Client{Socket: opts.Socket}, done
}

// header writes a file and returns the File asserting its content.
func header(t *testing.T, path, content string) File {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return File{Path: path, Digest: sha256.Sum256([]byte(content))}
}

func request(code string, files ...File) *Request {
	wd, _ := os.Getwd()
	return &Request{Compiler: "fake 1", Env: []string{"NVRTC_A=1"}, WorkDir: wd, Code: []byte(code),
		NameExpressions: []string{"k<1>"}, Files: files, MaxWait: 10 * time.Second}
}

func compile(t *testing.T, cl *Client, r *Request) *Reply {
	t.Helper()
	reply, err := cl.Compile(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// TestCompileThroughServer: a server process started on demand compiles
// what the client sent, in the client's working directory, from the
// headers the client's key names; its stats count it.
func TestCompileThroughServer(t *testing.T) {
	cl := startChild(t)
	dir := shortTemp(t)
	h := header(t, filepath.Join(dir, "h.cuh"), "v1")
	r := request("kernel", h, File{Path: filepath.Join(dir, "absent.h"), Kind: FileAbsent})
	r.WorkDir = dir
	reply := compile(t, cl, r)
	want := fmt.Sprintf("code=kernel wd=%s pch=true h.cuh=v1", dir)
	if reply.Status != StatusOK || string(reply.Code) != want || len(reply.Lowered) != 1 {
		t.Fatalf("reply %v %q %v, want ok %q", reply.Status, reply.Code, reply.Lowered, want)
	}
	st, err := cl.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 1 || st.Compiled != 1 || st.PCHHits != 1 || st.PID == os.Getpid() {
		t.Errorf("stats %+v", st)
	}
}

// TestStale: a header edited, a file appearing where the key saw none, or
// another day, each make the server answer stale and compile nothing.
func TestStale(t *testing.T) {
	_, cl, _ := startInProcess(t, Options{})
	dir := shortTemp(t)
	h := header(t, filepath.Join(dir, "h.cuh"), "v1")
	if r := compile(t, cl, request("k", h)); r.Status != StatusOK {
		t.Fatalf("fresh header: %v %s", r.Status, r.Message)
	}
	header(t, filepath.Join(dir, "h.cuh"), "v2") // same size: the digest must catch it
	absent := filepath.Join(dir, "new.h")
	header(t, absent, "")
	cases := map[string]*Request{
		"edited":  request("k", h),
		"created": request("k", File{Path: absent, Kind: FileAbsent}),
		"removed": request("k", File{Path: filepath.Join(dir, "gone.h"), Digest: h.Digest}),
		"day":     request("k", File{Path: "Jan  1 1970", Kind: FileDay}),
	}
	for name, r := range cases {
		if reply := compile(t, cl, r); reply.Status != StatusStale {
			t.Errorf("%s: %v %s, want stale", name, reply.Status, reply.Message)
		}
	}
	today := File{Path: time.Now().Format("Jan _2 2006"), Kind: FileDay}
	if r := compile(t, cl, request("k", header(t, filepath.Join(dir, "h.cuh"), "v3"), today)); r.Status != StatusOK {
		t.Errorf("after the edit, with the new digest: %v %s", r.Status, r.Message)
	}
}

// TestStaleCachedDigest: the server remembers digests by stat identity,
// yet an edit within the settle time is still seen.
func TestStaleCachedDigest(t *testing.T) {
	fc := newFileChecker()
	dir := shortTemp(t)
	path := filepath.Join(dir, "h")
	f := header(t, path, "aaaa")
	if why := fc.check([]File{f}); why != "" {
		t.Fatal(why)
	}
	fi, _ := os.Stat(path)
	header(t, path, "bbbb")
	os.Chtimes(path, fi.ModTime(), fi.ModTime()) // same size and mtime; ctime moves
	if why := fc.check([]File{f}); why == "" {
		t.Error("edit with the same size and mtime not seen")
	}
}

// TestMismatch: another compiler or environment is refused.
func TestMismatch(t *testing.T) {
	_, cl, _ := startInProcess(t, Options{Env: []string{"NVRTC_A=1"}})
	r := request("k")
	r.Compiler = "fake 2"
	if reply := compile(t, cl, r); reply.Status != StatusMismatch {
		t.Errorf("compiler: %v", reply.Status)
	}
	r = request("k")
	r.Env = []string{"NVRTC_A=2"}
	if reply := compile(t, cl, r); reply.Status != StatusMismatch {
		t.Errorf("env: %v", reply.Status)
	}
}

// TestCompileErrorAndFailure: a rejected program is answered with its
// log, a compiler failure as failed; the server goes on.
func TestCompileErrorAndFailure(t *testing.T) {
	_, cl, _ := startInProcess(t, Options{})
	if r := compile(t, cl, request("REJECT")); r.Status != StatusCompileError || r.Log != "rejected" {
		t.Errorf("reject: %v %q", r.Status, r.Log)
	}
	if r := compile(t, cl, request("FAIL")); r.Status != StatusFailed || !strings.Contains(r.Message, "fake failure") {
		t.Errorf("fail: %v %q", r.Status, r.Message)
	}
	if r := compile(t, cl, request("ok")); r.Status != StatusOK {
		t.Errorf("after: %v", r.Status)
	}
}

// TestCrashCostsAnError: a compile that kills the server is an error to
// the client (which then compiles itself), never a hang or a panic; a new
// server starts afterwards on the same socket.
func TestCrashCostsAnError(t *testing.T) {
	cl := startChild(t)
	if _, err := cl.Compile(context.Background(), request("CRASH")); err == nil {
		t.Fatal("a crashed server answered")
	}
	// The dead server's socket file is refused, not hung on.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for cl.Running(ctx) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := cl.Compile(ctx, request("ok")); !errors.Is(err, ErrNoServer) {
		t.Errorf("after the crash: %v, want ErrNoServer", err)
	}
	if err := cl.Start(ctx, os.Args[0]); err != nil {
		t.Fatal(err)
	}
	if r := compile(t, cl, request("ok")); r.Status != StatusOK {
		t.Errorf("restarted: %v", r.Status)
	}
}

// TestBusy: with the queue full, or the wait past the client's bound, the
// answer is busy at once; every request gets an answer.
func TestBusy(t *testing.T) {
	_, cl, _ := startInProcess(t, Options{Queue: 1})
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := map[Status]int{}
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := request(fmt.Sprintf("SLEEP %d", i))
			r.MaxWait = 100 * time.Millisecond
			reply, err := cl.Compile(context.Background(), r)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			count[reply.Status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if count[StatusOK] == 0 || count[StatusBusy] == 0 || count[StatusOK]+count[StatusBusy] != 8 {
		t.Errorf("statuses %v: want some ok and some busy", count)
	}
}

// TestConcurrentClients: many clients at once, each answered with its
// own compile.
func TestConcurrentClients(t *testing.T) {
	_, cl, _ := startInProcess(t, Options{Queue: 64})
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := fmt.Sprintf("kernel %d", i)
			reply, err := cl.Compile(context.Background(), request(code))
			if err != nil {
				t.Error(err)
				return
			}
			if !strings.HasPrefix(string(reply.Code), "code="+code+" ") {
				t.Errorf("client %d got %q", i, reply.Code)
			}
		}()
	}
	wg.Wait()
}

// TestRefusesOtherUsers: a connection whose peer is not the server's user
// is closed unanswered and counted.
func TestRefusesOtherUsers(t *testing.T) {
	srv, cl, _ := startInProcess(t, Options{})
	srv.allowUID.Store(int64(os.Getuid() + 1))
	if _, err := cl.Compile(context.Background(), request("k")); err == nil {
		t.Fatal("another user's connection was served")
	}
	if n := srv.Stats().Refused; n != 1 {
		t.Errorf("%d refused, want 1", n)
	}
}

// TestIdleTimeout: a server with no request exits and removes its socket.
func TestIdleTimeout(t *testing.T) {
	srv, cl, done := startInProcess(t, Options{IdleTimeout: 100 * time.Millisecond})
	compile(t, cl, request("k"))
	select {
	case err := <-done:
		done <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("the idle server did not exit")
	}
	if _, err := os.Stat(srv.Socket()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

// TestOneServerPerSocket: a second server on the socket is ErrRunning,
// and clients racing to start one all end up with the same server.
func TestOneServerPerSocket(t *testing.T) {
	srv, _, _ := startInProcess(t, Options{})
	if _, err := Listen(Options{Socket: srv.Socket()}, fakeCompiler{}); !errors.Is(err, ErrRunning) {
		t.Errorf("second server: %v, want ErrRunning", err)
	}
	t.Setenv(childEnv, "1")
	sock := filepath.Join(shortTemp(t), "s.sock")
	var wg sync.WaitGroup
	pids := make([]int, 4)
	for i := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &Client{Socket: sock}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := cl.Start(ctx, os.Args[0]); err != nil {
				t.Error(err)
				return
			}
			st, err := cl.Status(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			pids[i] = st.PID
		}()
	}
	wg.Wait()
	(&Client{Socket: sock}).Stop(context.Background())
	for _, p := range pids[1:] {
		if p != pids[0] {
			t.Errorf("servers %v: want one", pids)
		}
	}
}

// TestSocketPrivate: the socket directory is 0700 and the socket 0600; a
// directory open to others is refused.
func TestSocketPrivate(t *testing.T) {
	rt := shortTemp(t)
	t.Setenv("XDG_RUNTIME_DIR", rt)
	path, err := SocketPath()
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(rt, "kcache", "serve.sock") {
		t.Errorf("socket %s", path)
	}
	srv, _, _ := startInProcess(t, Options{Socket: path})
	for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, srv.Socket(): 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	os.Chmod(filepath.Dir(path), 0o755)
	if _, err := SocketPath(); err == nil {
		t.Error("a directory open to others was accepted")
	}
}

// TestStopAndNoServer: Stop ends the server; with none, the client's
// calls are ErrNoServer at once.
func TestStopAndNoServer(t *testing.T) {
	_, cl, done := startInProcess(t, Options{})
	if err := cl.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := <-done
	done <- err
	if _, err := cl.Compile(context.Background(), request("k")); !errors.Is(err, ErrNoServer) {
		t.Errorf("after stop: %v, want ErrNoServer", err)
	}
}

// TestHeaderChangeRetires: a request whose header differs from the one an
// earlier compile read is compiled without PCH, and the server retires.
func TestHeaderChangeRetires(t *testing.T) {
	_, cl, done := startInProcess(t, Options{})
	dir := shortTemp(t)
	r := compile(t, cl, request("a", header(t, filepath.Join(dir, "h.cuh"), "v1")))
	if !strings.Contains(string(r.Code), "pch=true") {
		t.Fatalf("first compile: %q", r.Code)
	}
	r = compile(t, cl, request("b", header(t, filepath.Join(dir, "h.cuh"), "v2")))
	if r.Status != StatusOK || !strings.Contains(string(r.Code), "pch=false h.cuh=v2") {
		t.Fatalf("after the edit: %v %q, want a compile without PCH", r.Status, r.Code)
	}
	select {
	case err := <-done:
		done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not retire")
	}
}

// TestMemoryHeaderChangeRetires: the same for an in-memory header.
func TestMemoryHeaderChangeRetires(t *testing.T) {
	_, cl, _ := startInProcess(t, Options{})
	r1 := request("a")
	r1.Headers = []Header{{Name: "v.h", Content: []byte("1")}}
	r2 := request("b")
	r2.Headers = []Header{{Name: "v.h", Content: []byte("2")}}
	compile(t, cl, r1)
	if r := compile(t, cl, r2); !strings.Contains(string(r.Code), "pch=false") {
		t.Errorf("changed in-memory header compiled with PCH: %q", r.Code)
	}
}

// TestOtherContextGoesWithoutPCH: a request whose options differ from
// those of the compile that made the precompiled headers (another -I
// could resolve a header to another file) is compiled without them, and
// the server stays; a request of the first context uses them again.
func TestOtherContextGoesWithoutPCH(t *testing.T) {
	_, cl, _ := startInProcess(t, Options{})
	first := request("a")
	first.Options = []string{"-I", "one"}
	if r := compile(t, cl, first); !strings.Contains(string(r.Code), "pch=true") {
		t.Fatalf("first compile: %q", r.Code)
	}
	other := request("b")
	other.Options = []string{"-I", "two", "-I", "one"}
	if r := compile(t, cl, other); !strings.Contains(string(r.Code), "pch=false") {
		t.Errorf("another search path compiled with PCH: %q", r.Code)
	}
	again := request("c")
	again.Options = []string{"-I", "one"}
	if r := compile(t, cl, again); !strings.Contains(string(r.Code), "pch=true") {
		t.Errorf("the first context again: %q, want PCH", r.Code)
	}
	st, err := cl.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.PCHOtherContext != 1 || st.Retired != 0 {
		t.Errorf("stats %+v: want one compile of another context and no retirement", st)
	}
}

// TestWorkersShareWorkDir: with several workers, compiles in one working
// directory run together, and a compile for another directory runs in
// its own: every client gets its working directory.
func TestWorkersShareWorkDir(t *testing.T) {
	cl := startChild(t, "--workers", "4")
	dirs := []string{shortTemp(t), shortTemp(t)}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			r := request(fmt.Sprintf("SLEEP %d", i))
			r.WorkDir = dirs[i%2]
			reply, err := cl.Compile(context.Background(), r)
			if err != nil {
				t.Error(err)
				return
			}
			if want := "wd=" + dirs[i%2] + " "; reply.Status != StatusOK || !strings.Contains(string(reply.Code), want) {
				t.Errorf("client %d: %v %q, want %q", i, reply.Status, reply.Code, want)
			}
		})
	}
	wg.Wait()
}

// TestShadowingHeaderRetires: the precompiled headers were made while an
// include found nothing in the first -I directory and opened the second's
// header; a header created in the first then shadows it, in the same
// context, and no header the earlier compile read has changed (its time
// neither, which is all NVRTC's PCH checks). The request is compiled
// without PCH and the server retires, as for an edit; the same for a
// header removed, which lets the include reach the next directory.
func TestShadowingHeaderRetires(t *testing.T) {
	for _, created := range []bool{true, false} {
		t.Run(fmt.Sprintf("created=%v", created), func(t *testing.T) {
			_, cl, done := startInProcess(t, Options{})
			dir := shortTemp(t)
			for _, d := range []string{"d1", "d2"} {
				if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			first, second := filepath.Join(dir, "d1", "x.h"), filepath.Join(dir, "d2", "x.h")
			shadowed := []File{{Path: first, Kind: FileAbsent}, header(t, second, "SCALE 1")}
			var before, after []File
			if created {
				before = shadowed
			} else {
				before = []File{header(t, first, "SCALE 7")}
			}
			if r := compile(t, cl, request("k", before...)); !strings.Contains(string(r.Code), "pch=true") {
				t.Fatalf("first compile: %v %q", r.Status, r.Code)
			}
			if created {
				after = []File{header(t, first, "SCALE 7")}
			} else {
				os.Remove(first)
				after = shadowed
			}
			r := compile(t, cl, request("k", after...))
			if r.Status != StatusOK || !strings.Contains(string(r.Code), "pch=false") {
				t.Fatalf("after the include moved: %v %q, want a compile without PCH", r.Status, r.Code)
			}
			select {
			case err := <-done:
				done <- err
			case <-time.After(30 * time.Second):
				t.Fatal("the server did not retire")
			}
		})
	}
}

// abaCompiler is fakeCompiler, but its compile edits the header at path
// before reading it and then restores its content and modification time,
// as a copy that keeps times (cp -p, rsync -a) restores a file while a
// compile runs.
type abaCompiler struct{ path string }

func (abaCompiler) Identity() string { return "fake 1" }

func (a abaCompiler) Compile(ctx context.Context, r *Request, pch bool) (*Reply, error) {
	fi, err := os.Stat(a.path)
	if err != nil {
		return nil, err
	}
	old, _ := os.ReadFile(a.path)
	if err := os.WriteFile(a.path, []byte("v2"), 0o644); err != nil {
		return nil, err
	}
	reply, err := fakeCompiler{}.Compile(ctx, r, pch)
	if err := os.WriteFile(a.path, old, 0o644); err != nil {
		return nil, err
	}
	if err := os.Chtimes(a.path, fi.ModTime(), fi.ModTime()); err != nil {
		return nil, err
	}
	return reply, err
}

// TestHeaderRestoredDuringCompile: a header edited while the compiler
// ran and restored, content and times, before the check after the compile
// passed both checks (they compare digests): the reply held the edit
// (h.cuh=v2) for a key of v1, and the PCH the compile made kept it, with
// the times of v1, which is all NVRTC's PCH checks. The server compares
// the files' stat identities (the change time) across the compile: stale,
// and it retires.
func TestHeaderRestoredDuringCompile(t *testing.T) {
	dir := shortTemp(t)
	h := header(t, filepath.Join(dir, "h.cuh"), "v1")
	opts := Options{Socket: filepath.Join(dir, "s.sock"), Env: []string{"NVRTC_A=1"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv, err := Listen(opts, abaCompiler{path: h.Path})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	cl := &Client{Socket: opts.Socket}
	r := compile(t, cl, request("k", h))
	if r.Status != StatusStale {
		t.Fatalf("a header edited and restored during the compile: %v %q, want stale", r.Status, r.Code)
	}
	select {
	case err := <-done:
		done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not retire: its PCH may hold the edit")
	}
}

// TestDayTurnedRetires: a program whose headers expand __DATE__ had its
// precompiled headers made one day; the next day its key holds the new
// day, which the server's check accepts, and no file changed: the PCH,
// holding the first day's date, must not be used. The request is compiled
// without it and the server retires.
func TestDayTurnedRetires(t *testing.T) {
	dir := shortTemp(t)
	opts := Options{Socket: filepath.Join(dir, "s.sock"), Env: []string{"NVRTC_A=1"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv, err := Listen(opts, fakeCompiler{})
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	srv.files.now = func() time.Time { return time.Unix(0, clock.Load()) }
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	cl := &Client{Socket: opts.Socket}
	h := header(t, filepath.Join(dir, "date.cuh"), "#define BUILT __DATE__")
	today := func() File {
		day, err := deps.Day(time.Unix(0, clock.Load()))
		if err != nil {
			t.Fatal(err)
		}
		return File{Path: day, Kind: FileDay}
	}
	if r := compile(t, cl, request("k", h, today())); r.Status != StatusOK || !strings.Contains(string(r.Code), "pch=true") {
		t.Fatalf("first day: %v %q", r.Status, r.Code)
	}
	clock.Add(int64(24 * time.Hour))
	r := compile(t, cl, request("k", h, today()))
	if r.Status != StatusOK || !strings.Contains(string(r.Code), "pch=false") {
		t.Fatalf("next day: %v %q, want a compile without PCH", r.Status, r.Code)
	}
	select {
	case err := <-done:
		done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not retire")
	}
}
