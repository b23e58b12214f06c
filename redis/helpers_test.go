package redis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/syncbuf"
	goredis "github.com/redis/go-redis/v9"
)

// needTool returns the path of a Redis program. Without it the test
// skips, except in CI (KCACHE_REQUIRE_REAL=1), where it fails.
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
		t.Fatalf("%s not found (install redis-server and redis-tools): %v", name, err)
	}
	t.Skipf("%s not found; install redis-server and redis-tools", name)
	return ""
}

// freePort returns a loopback TCP port nobody listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// redisServer is a redis-server process of a test.
type redisServer struct {
	t    testing.TB
	port int
	dir  string
	args []string
	cmd  *exec.Cmd
}

// startServer starts redis-server on a free loopback port with args added
// to its command line, and stops it when the test ends.
func startServer(t testing.TB, args ...string) *redisServer {
	t.Helper()
	s := &redisServer{t: t, port: freePort(t), dir: t.TempDir(), args: args}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// start runs the redisServer (again, after stop or kill) on its port.
func (s *redisServer) start() {
	s.t.Helper()
	bin := needTool(s.t, "redis-server")
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--enable-debug-command", "local"}, s.args...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout = nil
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	waitReady(s.t, s.addr(), "")
}

// addr is the redisServer's address.
func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// url is the redisServer's KCACHE_REMOTE.
func (s *redisServer) url() string { return "redis://" + s.addr() }

// kill stops the redisServer at once, as a crash would.
func (s *redisServer) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

func (s *redisServer) stop() { s.kill() }

// client returns a plain go-redis client of the redisServer, for tests to look
// at what the store wrote.
func (s *redisServer) client() *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.addr(), Protocol: 2, DisableIdentity: true})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// waitReady waits, bounded, until the redisServer at addr answers PING.
func waitReady(t testing.TB, addr, password string) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr, Password: password, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	var err error
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil || strings.Contains(err.Error(), "NOAUTH") {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("redis-server at %s not ready: %v", addr, err)
}

// logBuffer collects a logger's output for assertions.
type logBuffer struct{ syncbuf.Buffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// node is one machine of a test fleet: its own disk directory and a
// remote store, composed by a kcache.Cache.
type node struct {
	cache  *kcache.Cache
	remote *Store
}

// newNode opens a node on url with its own disk directory, or none if
// dir is empty. With url empty it has no remote tier.
func newNode(t testing.TB, url string, dir string, opts Options) *node {
	t.Helper()
	opts.URL = url
	var st *Store
	if url != "" {
		var err error
		if st, err = Open(opts); err != nil {
			t.Fatal(err)
		}
	}
	cfg := kcache.DefaultConfig(os.Getenv)
	var tiers []kcache.Tier
	if dir != "" {
		d, err := disk.Open(disk.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		tiers = append(tiers, kcache.Tier{Kind: kcache.OutcomeDisk, Store: d})
	}
	if st != nil {
		tiers = append(tiers, kcache.Tier{Kind: kcache.OutcomeRemote, Store: st})
	}
	n := &node{cache: kcache.New(cfg, opts.Logger, tiers...), remote: st}
	t.Cleanup(func() { n.close(t) })
	return n
}

func (n *node) close(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.cache.Close(ctx); err != nil && !strings.Contains(err.Error(), "client is closed") {
		t.Errorf("close: %v", err)
	}
}

// unsigned names the keys of stores without a secret.
var unsigned = namesFor(nil)

// testKey returns a distinct key for i.
func testKey(i int) *kcache.Key {
	return &kcache.Key{
		Device:   kcache.Device{Platform: "test", Name: "dev", Version: "1", Driver: "1"},
		Compiler: kcache.Compiler{Name: "go", Version: "1"},
		Image:    kcache.Image{Format: "test", Source: []byte(fmt.Sprintf("kernel %d", i))},
	}
}

// builder is a deterministic compiler that counts its runs: the binary of
// a key depends only on the key's source and the size asked for.
type builder struct {
	size  int
	delay time.Duration // waited, as for a compiler in another process
	work  int           // SHA-256 rounds, as a compiler's own CPU time
	runs  atomic.Int64
}

func (b *builder) build(key *kcache.Key) kcache.BuildFunc {
	return func(ctx context.Context) ([]byte, error) {
		b.runs.Add(1)
		if b.delay > 0 {
			time.Sleep(b.delay)
		}
		h := sha256.Sum256(key.Image.Source)
		for range b.work {
			h = sha256.Sum256(h[:])
		}
		return binaryOf(key, b.size), nil
	}
}

// binaryOf is the binary the test builder makes for key: compressible
// text, so that both encodings are exercised.
func binaryOf(key *kcache.Key, size int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%s:%d;", key.Image.Source, i)
	}
	return b.Bytes()[:size]
}

// tempDir returns a fresh directory under the test's.
func tempDir(t testing.TB, name string) string {
	d := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMain gives the test process a private PoCL directory: PoCL 3.1's
// shared one makes processes that compile at once abort.
func TestMain(m *testing.M) {
	if os.Getenv("POCL_CACHE_DIR") == "" {
		dir, err := os.MkdirTemp("", "kcache-redis-pocl-")
		if err == nil {
			os.Setenv("POCL_CACHE_DIR", dir)
			defer os.RemoveAll(dir)
		}
	}
	m.Run()
}
