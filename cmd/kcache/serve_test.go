package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache/cuda/compileserver"
)

// echoCompiler stands in for NVRTC in the server these tests run.
type echoCompiler struct{}

func (echoCompiler) Identity() string { return "echo" }

func (echoCompiler) Compile(_ context.Context, r *compileserver.Request, _ bool) (*compileserver.Reply, error) {
	return &compileserver.Reply{Status: compileserver.StatusOK, Code: r.Code}, nil
}

// TestServeStatusAndStop: with no server, --json prints null and stats
// says none; with one on the user's socket, serve --json and stats --json
// show it, and serve --stop ends it.
func TestServeStatusAndStop(t *testing.T) {
	rt, err := os.MkdirTemp("", "kcs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	t.Setenv("XDG_RUNTIME_DIR", rt)
	dir := t.TempDir()
	if r := run(t, dir, "serve", "--json"); r.code != 0 || strings.TrimSpace(r.stdout) != "null" {
		t.Fatalf("no server: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	var st statsJSON
	runJSONOut(t, dir, &st, "stats", "--json")
	if st.Server != nil {
		t.Errorf("stats shows a server: %+v", st.Server)
	}

	srv, err := compileserver.Listen(compileserver.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, echoCompiler{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	var got compileserver.Stats
	runJSONOut(t, dir, &got, "serve", "--json")
	if got.PID != os.Getpid() || got.Compiler != "echo" {
		t.Errorf("serve --json: %+v", got)
	}
	runJSONOut(t, dir, &st, "stats", "--json")
	if st.Server == nil || st.Server.PID != os.Getpid() {
		t.Errorf("stats --json: server %+v", st.Server)
	}
	if r := run(t, dir, "stats"); !strings.Contains(r.stdout, "compile server") {
		t.Errorf("stats does not show the server:\n%s", r.stdout)
	}
	if r := run(t, dir, "serve", "--stop"); r.code != 0 {
		t.Fatalf("serve --stop: exit %d %s", r.code, r.stderr)
	}
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve --stop did not stop the server")
	}
	if r := run(t, dir, "serve", "--stop"); r.code != 0 || !strings.Contains(r.stderr, "no compile server") {
		t.Errorf("second stop: exit %d %q", r.code, r.stderr)
	}
}
