package objcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestUnkeptResultNeverServed checks that a result the cache does not keep
// (any result with caching disabled, a Transient error) reaches only the
// callers of its build: a caller arriving as the build finishes must not
// find it on the lock-free path and take it for a cached one.
func TestUnkeptResultNeverServed(t *testing.T) {
	const rounds = 20000
	errFlaky := errors.New("driver busy")
	tests := []struct {
		name  string
		opts  Options[*object]
		build BuildFunc[*object]
	}{
		{"disabled", Options[*object]{Disabled: true}, builder("k", 1)},
		{"transient", Options[*object]{}, func(context.Context) (*object, int64, error) {
			return nil, 0, Transient(errFlaky)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New[string, *object](tt.opts)
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() {
				for !stop.Load() {
					if h, ok := c.Get("k"); ok {
						h.Release()
						t.Error("Get found a result the cache does not keep")
						return
					}
					// A cached error is found by GetOrBuild only.
					if h, err := c.GetOrBuild(context.Background(), "k", tt.build); err == nil {
						h.Release()
					}
				}
			})
			for range rounds {
				if h, err := c.GetOrBuild(context.Background(), "k", tt.build); err == nil {
					h.Release()
				}
			}
			stop.Store(true)
			wg.Wait()
			if st := c.Stats(); st.Hits != 0 {
				t.Fatalf("stats %+v: a result not kept was served as a hit", st)
			}
		})
	}
}
