package kcache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// TestPanicReleasesBuildLock checks, against the disk tier's real flock,
// that a builder's panic releases the key's cross-process build lock at
// once: another process (here a second Store on the same directory, whose
// lock is a separate open file) may take it without waiting for this
// process to exit, and the key is not stored.
func TestPanicReleasesBuildLock(t *testing.T) {
	dir := t.TempDir()
	open := func() *disk.Store {
		// A leaked lock would make the second Lock wait this long.
		st, err := disk.Open(disk.Options{Dir: dir, BuildWait: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	c := kcache.New(kcache.Config{}, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	key := &kcache.Key{Image: kcache.Image{Format: "opencl-c", Source: []byte("kernel void k() {}")}}
	_, err := c.GetOrBuild(context.Background(), key, func(context.Context) ([]byte, error) {
		panic("driver returned a nil program")
	})
	if !errors.Is(err, kcache.ErrBuildPanic) {
		t.Fatalf("err = %v, want ErrBuildPanic", err)
	}
	// Bounded, so that a leaked lock fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	unlock, err := open().Lock(ctx, key)
	if err != nil {
		t.Fatalf("build lock still held after the panic: %v", err)
	}
	unlock()
	if _, err := st.Get(ctx, key); !errors.Is(err, kcache.ErrMiss) {
		t.Fatalf("panicked build stored something: %v", err)
	}
}
