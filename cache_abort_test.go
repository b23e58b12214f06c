package kcache

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache/internal/flight"
	"github.com/kcache/kcache/internal/syncbuf"
)

// guard bounds a test's wait for something that must happen, so that a
// regression fails instead of hanging the test binary; it asserts nothing
// about speed.
const guard = 30 * time.Second

// TestGetOrBuildBuilderAborts checks that a builder that panics or calls
// runtime.Goexit is an error for every caller of its build, never a crash
// or a hang; that the build lock is released and nothing is stored; and
// that the next caller builds afresh.
func TestGetOrBuildBuilderAborts(t *testing.T) {
	tests := []struct {
		name  string
		abort func()
		want  error
		log   string
	}{
		{"panic", func() { panic("nil program") }, ErrBuildPanic, "build panicked"},
		{"goexit", runtime.Goexit, flight.ErrGoexit, "Goexit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &countingLocker{mapStore: newMapStore()}
			var logs syncbuf.Buffer
			c := New(Config{}, testLogger(&logs), Tier{OutcomeDisk, store})
			gate := make(chan struct{})
			abort := func(context.Context) ([]byte, error) {
				<-gate
				tt.abort()
				return []byte("unreachable"), nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			const callers = 8
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					if _, err := c.GetOrBuild(ctx, keyN(1), abort); !errors.Is(err, tt.want) {
						t.Errorf("caller got %v, want errors.Is %v", err, tt.want)
					}
				})
			}
			close(gate)
			wg.Wait()
			if !strings.Contains(logs.String(), tt.log) {
				t.Errorf("abort not logged: %s", logs.String())
			}
			if l, u := store.locked.Load(), store.unlocked.Load(); l == 0 || l != u {
				t.Errorf("build lock taken %d times, released %d", l, u)
			}
			if store.puts != 0 || c.Stats().FailedBuilds == 0 {
				t.Errorf("aborted build stored (%d puts) or not counted (%+v)", store.puts, c.Stats())
			}
			r, err := c.GetOrBuild(ctx, keyN(1), func(context.Context) ([]byte, error) { return []byte("bin"), nil })
			if err != nil || r.Outcome != OutcomeBuilt || string(r.Binary) != "bin" {
				t.Fatalf("after the abort: %+v, %v; want a fresh build", r, err)
			}
		})
	}
}

// TestGetOrBuildStress runs many goroutines over a few keys, with builders
// that return, fail, panic or call Goexit and callers that leave early,
// under -race: every caller returns, and every lock taken is released.
func TestGetOrBuildStress(t *testing.T) {
	store := &countingLocker{mapStore: newMapStore()}
	c := New(Config{}, nil, Tier{OutcomeDisk, store})
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			if i%5 == 0 {
				go cancel()
			}
			_, err := c.GetOrBuild(ctx, keyN(i%6), func(context.Context) ([]byte, error) {
				runtime.Gosched()
				switch i % 4 {
				case 1:
					return nil, errors.New("compile error")
				case 2:
					panic("boom")
				case 3:
					runtime.Goexit()
				}
				return []byte("bin"), nil
			})
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("caller %d still waiting after %v", i, guard)
			}
		})
	}
	wg.Wait()
	// Builds abandoned by every caller go on; wait for them to finish.
	for store.locked.Load() != store.unlocked.Load() {
		runtime.Gosched()
	}
}
