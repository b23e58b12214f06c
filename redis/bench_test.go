package redis

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// BenchmarkHit compares a remote hit on loopback with a disk hit of the
// same entry: what a second machine pays against what a second process of
// the same machine pays. The binaries are machine code (the test binary's
// own bytes), which zstd compresses about as it does a kernel binary.
func BenchmarkHit(b *testing.B) {
	srv := startServer(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	code, err := os.ReadFile(exe)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct {
		name string
		n    int
	}{{"100KB", 100 << 10}, {"6MB", 6 << 20}} {
		key := testKey(size.n)
		e := kcache.Entry{Binary: code[:size.n]}
		// A generous timeout: the benchmark measures hits, and a loaded
		// machine must not turn one into a miss.
		remote := newNode(b, srv.url(), "", Options{Timeout: 5 * time.Second}).remote
		flushPut(b, remote, key, e)
		d, err := disk.Open(disk.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Put(bg, key, e); err != nil {
			b.Fatal(err)
		}
		v, _ := remote.client.Get(bg, unsigned.value(key.Digest())).Bytes()
		b.Logf("%s: value of %d bytes", size.name, len(v))
		b.Run("redis-get/"+size.name, func(b *testing.B) {
			// The floor: the value's bytes fetched by a bare GET, neither
			// decompressed nor checked.
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if _, err := remote.client.Get(bg, unsigned.value(key.Digest())).Bytes(); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, tier := range []struct {
			name  string
			store kcache.Store
		}{{"remote", remote}, {"disk", d}} {
			b.Run(tier.name+"/"+size.name, func(b *testing.B) {
				b.SetBytes(int64(size.n))
				for b.Loop() {
					if _, err := tier.store.Get(bg, key); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// flushPut writes e for key through s's queue and waits until it is sent.
func flushPut(b *testing.B, s *Store, key *kcache.Key, e kcache.Entry) {
	if err := s.Put(bg, key, e); err != nil {
		b.Fatal(err)
	}
	<-s.w.written(key.Digest())
}

// BenchmarkDeadServer is what a lookup costs when the server is gone
// (connection refused) or hung (a listener that never answers), with the
// circuit breaker and without it (a threshold no run reaches).
func BenchmarkDeadServer(b *testing.B) {
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer hung.Close()
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	for _, srv := range []struct{ name, url string }{
		{"refused", fmt.Sprintf("redis://127.0.0.1:%d", freePort(b))},
		{"hung", "redis://" + hung.Addr().String()},
	} {
		for _, brk := range []struct {
			name     string
			failures int
		}{{"breaker", 0}, {"no-breaker", 1 << 30}} {
			b.Run(srv.name+"/"+brk.name, func(b *testing.B) {
				s := newNode(b, srv.url, "", Options{Failures: brk.failures}).remote
				key := testKey(1)
				for b.Loop() {
					s.Get(bg, key)
				}
			})
		}
	}
}

// BenchmarkFleet starts 8 processes, each with its own empty disk, on the
// same 16 keys at once: sharing one Redis, and each on its own. A build
// is CPU work (10^6 SHA-256 rounds), so that 8 machines simulated on one
// host contend for its cores as compilers would; builds/op counts the
// fleet's compiler runs.
func BenchmarkFleet(b *testing.B) {
	const members, keys, work, size = 8, 16, 1_000_000, 256 << 10
	for _, mode := range []string{"shared-redis", "independent"} {
		b.Run(mode, func(b *testing.B) {
			url := ""
			var srv *redisServer
			if mode == "shared-redis" {
				srv = startServer(b)
				url = srv.url()
			}
			var builds int64
			var wall time.Duration
			for b.Loop() {
				b.StopTimer()
				if srv != nil {
					srv.client().FlushAll(bg)
				}
				b.StartTimer()
				var last time.Duration
				for _, r := range fleet(b, url, members, keys, 0, work, size) {
					builds += r.Builds
					last = max(last, r.Elapsed)
				}
				wall += last
			}
			b.ReportMetric(float64(builds)/float64(b.N), "builds/op")
			// From the common start to the last member's exit, without
			// the processes' start-up, which is the same in both modes.
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "fleet-ms/op")
		})
	}
}

// BenchmarkDecode is the client's share of a hit: checking and, where the
// value is compressed, decompressing it, with zstd and without.
func BenchmarkDecode(b *testing.B) {
	exe, _ := os.Executable()
	code, err := os.ReadFile(exe)
	if err != nil {
		b.Fatal(err)
	}
	key := testKey(1)
	for _, n := range []int{100 << 10, 6 << 20} {
		for _, c := range []struct {
			name string
			c    codec
		}{{"zstd", codec{}}, {"raw", codec{raw: true}}} {
			v := encodeFor(c.c, key, kcache.Entry{Binary: code[:n]})
			b.Run(fmt.Sprintf("%s/%dKB", c.name, n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportMetric(float64(len(v))/float64(n), "stored/binary")
				for b.Loop() {
					if _, err := c.c.decode(key, v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
