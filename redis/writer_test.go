package redis

import (
	"crypto/rand"
	"testing"

	"github.com/kcache/kcache"
)

// TestCompressibleValueNotDropped: a binary larger than the write queue's
// byte limit that compresses far below it is sent. Before, the queue
// charged binaries their raw length, and dropped it without a count.
func TestCompressibleValueNotDropped(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	s, err := Open(Options{URL: srv.url(), QueueBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	key := testKey(1)
	if err := s.Put(bg, key, kcache.Entry{Binary: make([]byte, 8<<20)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(bg); err != nil {
		t.Fatal(err)
	}
	n, err := rc.StrLen(bg, unsigned.value(key.Digest())).Result()
	t.Logf("8 MiB of zeros stored in %d bytes", n)
	if err != nil || n == 0 || n > 1<<20 {
		t.Errorf("value of %d bytes (%v), want the compressed binary", n, err)
	}
}

// TestWritesCounted: a write that finds a value already stored (SET NX)
// and one the queue drops are counted in the tier's stats, which kcache
// stats shows. Before, neither was counted anywhere.
func TestWritesCounted(t *testing.T) {
	srv := startServer(t)
	a := newNode(t, srv.url(), "", Options{})
	key := testKey(1)
	if _, err := a.cache.GetOrBuild(bg, key, (&builder{size: 100}).build(key)); err != nil {
		t.Fatal(err)
	}
	a.close(t)

	b := newNode(t, srv.url(), "", Options{QueueBytes: 1 << 20})
	if err := b.remote.Put(bg, key, kcache.Entry{Binary: binaryOf(key, 100)}); err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 2<<20) // does not compress: too large for the queue
	rand.Read(noise)
	if err := b.remote.Put(bg, testKey(2), kcache.Entry{Binary: noise}); err != nil {
		t.Fatal(err)
	}
	b.close(t)
	st := b.cache.Stats().Remote
	if st.Existed != 1 || st.Dropped != 1 {
		t.Errorf("remote stats %+v, want 1 existed and 1 dropped", st)
	}
}
