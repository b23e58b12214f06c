package main

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// startRedis starts redis-server on a free loopback port for the test and
// returns its KCACHE_REMOTE. Without Redis the test skips, except in CI
// (KCACHE_REQUIRE_REAL=1), where it fails.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("redis-server not found: %v", err)
		}
		t.Skip("redis-server not found; install redis-server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 200 {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return "redis://127.0.0.1:" + port
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("redis-server did not start")
	return ""
}

// TestBuildSharesThroughRemote: two runs of kcache build with separate
// cache directories share KCACHE_REMOTE; the first builds and sends the
// binary, which the second gets from the remote tier.
func TestBuildSharesThroughRemote(t *testing.T) {
	requireOpenCL(t)
	remote := startRedis(t)
	src := t.TempDir()
	file := writeKernel(t, src)
	dirs := []string{t.TempDir(), t.TempDir()}
	for i, want := range []string{"built", "remote"} {
		cmd := kcacheCmd(t, dirs[i], "build", "--json", "--options", "-DFACTOR=5", file)
		cmd.Env = append(cmd.Env, "KCACHE_REMOTE="+remote, "KCACHE_REMOTE_TIMEOUT=2s")
		reports, code := runJSON(t, cmd)
		if code != 0 || len(reports) != 1 || reports[0].Outcome != want {
			t.Fatalf("exit %d, reports %+v; want %s", code, reports, want)
		}
	}
	// Each process merged its remote counts into its own cache's counters.
	var first, second statsJSON
	runJSONOut(t, dirs[0], &first, "stats", "--json")
	runJSONOut(t, dirs[1], &second, "stats", "--json")
	if c := first.Counters; c.RemoteMisses != 1 || c.RemoteHits != 0 || c.Builds != 1 {
		t.Errorf("first process's counters %+v; want one remote miss and one build", c)
	}
	if c := second.Counters; c.RemoteHits != 1 || c.RemoteMisses != 0 || c.Builds != 0 || c.RemoteErrors != 0 {
		t.Errorf("second process's counters %+v; want one remote hit and no build", c)
	}
}
