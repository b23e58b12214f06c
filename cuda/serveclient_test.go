package cuda

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda/compileserver"
	"github.com/kcache/kcache/deps"
)

// serveChildEnv makes the test binary a real compile server when Start
// runs it as `serve --socket PATH --log PATH.log`.
const serveChildEnv = "KCACHE_TEST_SERVE_REAL"

func TestMain(m *testing.M) {
	if os.Getenv(serveChildEnv) != "" && len(os.Args) > 3 && os.Args[1] == "serve" && os.Args[2] == "--socket" {
		os.Exit(runServeChild(os.Args[3]))
	}
	os.Exit(m.Run())
}

// runServeChild is `kcache serve` with NVRTC, as the tests run it.
func runServeChild(socket string) int {
	comp, err := NewServeCompiler(1 << 30)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer comp.Close() // its PCH files in /tmp
	srv, err := compileserver.Listen(compileserver.Options{Socket: socket, Env: ServeKeyEnv()}, comp)
	if errors.Is(err, compileserver.ErrRunning) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.Serve(context.Background()); err != nil {
		return 1
	}
	return 0
}

// TestServeBinary: the binary started for each KCACHE_SERVE value.
func TestServeBinary(t *testing.T) {
	if bin, err := serveBinary("/opt/kcache/bin/kcache"); err != nil || bin != "/opt/kcache/bin/kcache" {
		t.Errorf("absolute path: %q %v", bin, err)
	}
	if _, err := serveBinary("sometimes"); err == nil {
		t.Error("an unknown mode was accepted")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "kcache"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(dir, "kcache"), 0o755)
	t.Setenv("PATH", dir)
	if bin, err := serveBinary("auto"); err != nil || bin != filepath.Join(dir, "kcache") {
		t.Errorf("auto: %q %v, want the kcache on $PATH", bin, err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := serveBinary("auto"); err == nil {
		t.Error("auto without a kcache binary found one")
	}
}

// TestServeFile: what the server is asked to check for each kind of
// dependency the scanner records.
func TestServeFile(t *testing.T) {
	d := [32]byte{7}
	cases := []struct {
		dep  deps.Dependency
		want compileserver.File
	}{
		{deps.Dependency{Path: "/i/a.h", Digest: d, Rule: deps.RuleInclude}, compileserver.File{Path: "/i/a.h", Digest: d}},
		{deps.Dependency{Path: "/i/m.h", Digest: d, Rule: deps.RuleManifest}, compileserver.File{Path: "/i/m.h", Digest: d}},
		{deps.Dependency{Path: "/i/b.h", Rule: deps.RuleAbsent}, compileserver.File{Path: "/i/b.h", Kind: compileserver.FileAbsent}},
		{deps.Dependency{Path: "Nov 24 2026", Rule: deps.RuleClock}, compileserver.File{Path: "Nov 24 2026", Kind: compileserver.FileDay}},
	}
	for _, c := range cases {
		if got := serveFile(c.dep); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.dep.Rule, got, c.want)
		}
	}
}

// TestPCHUsedPattern: NVRTC 13.0's messages, as the H100 run logged them.
func TestPCHUsedPattern(t *testing.T) {
	for line, want := range map[string]bool{
		`"cub11.cu": using precompiled header file "/tmp/__nvrtc_auto_pch_965_0/cub10_0.pch"`:    true,
		`"cub10.cu": creating precompiled header file "/tmp/__nvrtc_auto_pch_965_0/cub10_0.pch"`: false,
		`error: identifier "x" is undefined`:                                                     false,
	} {
		if got := pchUsedPattern.MatchString(line); got != want {
			t.Errorf("%s: %v, want %v", line, got, want)
		}
	}
}

// TestEarlySentAtScanStart: a Module call whose key the scanner begins to
// scan afresh sends its compile to the server then, not after
// serveEarlyDelay (here an hour): the server (a bare listener) receives
// the request with the program's source while the timer still waits.
func TestEarlySentAtScanStart(t *testing.T) {
	rt, err := os.MkdirTemp("", "kcs") // short: a socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv(ServeEnv, "connect")
	defer func(d time.Duration) { serveEarlyDelay = d }(serveEarlyDelay)
	serveEarlyDelay = time.Hour
	sock, err := compileserver.SocketPath()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.cuh"), "#define A 1\n")
	src := Source{Code: []byte("#include \"a.cuh\"\n__global__ void k() {}\n"), Path: filepath.Join(dir, "k.cu")}
	p := plan{options: []string{"-arch=sm_90"}, format: FormatCUBIN}
	c := &Cache{bins: kcache.New(kcache.Config{}, nil)}
	ctx, end := c.beginEarly(context.Background(), src, p)
	defer end()
	in := deps.Input{Source: src.Code, Path: src.Path, Args: p.options}
	if _, _, err := deps.NewScanner(nil).AppendHeadersEarly(ctx, nil, in); err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetDeadline(time.Now().Add(30 * time.Second)) // a hang guard, not a measure
	conn, err := l.Accept()
	if err != nil {
		t.Fatalf("no compile sent at the scan's start: %v", err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var h [12]byte // the frame's header: KCSV, version, type, 2 spare, length
	if _, err := io.ReadFull(conn, h[:]); err != nil || !bytes.HasPrefix(h[:], []byte("KCSV")) {
		t.Fatalf("the server got %q (%v), want a frame", h, err)
	}
	payload := make([]byte, binary.BigEndian.Uint32(h[8:]))
	if _, err := io.ReadFull(conn, payload); err != nil || !bytes.Contains(payload, src.Code) {
		t.Errorf("the request (%v) does not hold the program: %q", err, payload)
	}
}

// TestWorkerOptions: a worker compiles with the request's options, in
// their order, and adds only options that leave the image as it was.
func TestWorkerOptions(t *testing.T) {
	req := []string{"-std=c++17", "-I", "/inc", "-arch=sm_90"}
	for _, tc := range []struct {
		pch  bool
		want []string
	}{
		{false, []string{"-std=c++17", "-I", "/inc", "-arch=sm_90"}},
		{true, []string{"-std=c++17", "-I", "/inc", "-arch=sm_90", "-pch", "-pch-messages=true"}},
	} {
		got := workerOptions(req, tc.pch)
		if !slices.Equal(got, tc.want) {
			t.Errorf("pch %v: %q, want %q", tc.pch, got, tc.want)
		}
		if !slices.Equal(req, []string{"-std=c++17", "-I", "/inc", "-arch=sm_90"}) {
			t.Fatalf("the request's options changed: %q", req)
		}
	}
}
