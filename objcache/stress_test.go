package objcache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kcache/kcache/internal/flight"
)

// TestStress runs many goroutines over few keys with every kind of build
// (success, kept error, Transient error, panic, runtime.Goexit), callers
// whose ctx ends at any moment, a threshold that evicts, and Remove, Forget
// and Close racing with them, under -race. Every caller returns with an
// object or an error it may get; every object built is released exactly
// once (the tracker panics on a second release), and only after its last
// holder let go (a holder checks its object is live).
func TestStress(t *testing.T) {
	var tr tracker
	var built atomic.Int64
	c := New[int, *object](Options[*object]{Threshold: 50, MaxErrors: 4, Release: tr.release})
	const goroutines, perG, keys = 16, 300, 12
	var rounds atomic.Int64 // started, over every goroutine
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				rounds.Add(1)
				n := g*perG + i
				k := n % keys
				switch n % 23 {
				case 0:
					c.Remove(k)
					continue
				case 1:
					c.Forget(k)
					continue
				}
				ctx, cancel := context.WithCancel(context.Background())
				if n%3 == 0 {
					go cancel()
				}
				h, err := c.GetOrBuild(ctx, k, func(ctx context.Context) (*object, int64, error) {
					runtime.Gosched()
					switch n % 7 {
					case 1:
						return nil, 0, errCompile
					case 2:
						return nil, 0, Transient(errors.New("driver busy"))
					case 3:
						panic("builder bug")
					case 4:
						runtime.Goexit()
					}
					built.Add(1)
					return &object{name: fmt.Sprint(n)}, 10, nil
				})
				cancel()
				if err != nil {
					if !errors.Is(err, errCompile) && !errors.Is(err, ErrBuildPanic) && !errors.Is(err, flight.ErrGoexit) &&
						!errors.Is(err, context.Canceled) && !IsTransient(err) && !errors.Is(err, ErrClosed) {
						t.Errorf("unexpected error %v", err)
					}
					continue
				}
				if h.Value().freed.Load() != 0 {
					t.Errorf("got object %s already released", h.Value().name)
				}
				runtime.Gosched()
				if h.Value().freed.Load() != 0 {
					t.Errorf("object %s released while held", h.Value().name)
				}
				h.Release()
			}
		})
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for rounds.Load() < goroutines*perG/2 {
			runtime.Gosched()
		}
		c.Close()
	}()
	wg.Wait()
	c.Close()
	// Builds that every caller left may still be running; each releases its
	// object once it ends, the cache being closed.
	for int64(len(tr.list())) != built.Load() {
		runtime.Gosched()
	}
	if c.errN != 0 || c.count != 0 || c.size != 0 {
		t.Fatalf("after Close: %d errors, %d objects of %d bytes", c.errN, c.count, c.size)
	}
}
