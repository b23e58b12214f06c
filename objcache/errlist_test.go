package objcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// failWith returns a build that fails with msg, counting its runs.
func failWith(msg string, runs *int) BuildFunc[*object] {
	return func(context.Context) (*object, int64, error) {
		*runs++
		return nil, 0, errors.New(msg)
	}
}

// keptErrors returns the number of failed entries in c's index and checks
// that the error list and its counters agree with it.
func keptErrors[K comparable](t *testing.T, c *Cache[K, *object]) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	indexed := 0
	c.idx.Load().each(func(e *entry[K, *object]) {
		if e.state.Load() == stateFailed {
			indexed++
		}
	})
	listed, bytes := 0, int64(0)
	for e := c.errs.front; e != nil; e = e.next {
		listed++
		bytes += e.size
	}
	if listed != indexed || listed != c.errN || bytes != c.errB {
		t.Fatalf("index %d errors, list %d of %d bytes, counters %d of %d bytes", indexed, listed, bytes, c.errN, c.errB)
	}
	return indexed
}

// TestKeptErrorsBoundedByDefault is the case that showed the defect: with
// a 1 KiB threshold, 20,000 distinct broken builds were all kept. Kept
// errors are bounded by default, whatever the threshold.
func TestKeptErrorsBoundedByDefault(t *testing.T) {
	c := New[int, *object](Options[*object]{Threshold: 1024})
	log := strings.Repeat("x", 1000)
	runs := 0
	for i := range 20000 {
		if _, err := c.GetOrBuild(context.Background(), i, failWith(log, &runs)); err == nil {
			t.Fatal("want the build error")
		}
	}
	if n := keptErrors(t, c); n == 0 || n > DefaultMaxErrors || c.errB > DefaultMaxErrorBytes {
		t.Fatalf("%d errors of %d bytes kept, want at most %d and %d", n, c.errB, DefaultMaxErrors, DefaultMaxErrorBytes)
	}
}

// TestKeptErrorsBounds checks each bound, which errors go first, and that
// an evicted error is built again and kept again.
func TestKeptErrorsBounds(t *testing.T) {
	msg := strings.Repeat("e", 100) // charged 100 + errorOverhead bytes
	charge := int64(100 + errorOverhead)
	tests := []struct {
		name    string
		opts    Options[*object]
		ops     []string // "+k": a failing build of k; "k": ask for k again
		kept    []string
		rebuilt []string // keys whose "again" built again
	}{
		{"count", Options[*object]{MaxErrors: 3}, []string{"+a", "+b", "+c", "+d", "+e"}, []string{"c", "d", "e"}, nil},
		{"bytes", Options[*object]{MaxErrorBytes: 2 * charge}, []string{"+a", "+b", "+c"}, []string{"b", "c"}, nil},
		{"recently used stays", Options[*object]{MaxErrors: 3}, []string{"+a", "+b", "+c", "a", "+d", "+e"}, []string{"a", "d", "e"}, nil},
		{"evicted is rebuilt", Options[*object]{MaxErrors: 2}, []string{"+a", "+b", "+c", "a"}, []string{"c", "a"}, []string{"a"}},
		{"one too large is kept alone", Options[*object]{MaxErrorBytes: charge / 2}, []string{"+a", "+b"}, []string{"b"}, nil},
		{"none", Options[*object]{MaxErrors: -1}, []string{"+a", "a"}, nil, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New[string, *object](tt.opts)
			var rebuilt []string
			for _, op := range tt.ops {
				runs := 0
				key := strings.TrimPrefix(op, "+")
				if _, err := c.GetOrBuild(context.Background(), key, failWith(msg, &runs)); err == nil || err.Error() != msg {
					t.Fatalf("%s: err %v", op, err)
				}
				if op[0] != '+' && runs > 0 {
					rebuilt = append(rebuilt, key)
				}
			}
			if fmt.Sprint(rebuilt) != fmt.Sprint(tt.rebuilt) {
				t.Fatalf("rebuilt %v, want %v", rebuilt, tt.rebuilt)
			}
			if n := keptErrors(t, c); n != len(tt.kept) {
				t.Fatalf("%d errors kept, want %v", n, tt.kept)
			}
			for _, k := range tt.kept {
				runs := 0
				c.GetOrBuild(context.Background(), k, failWith(msg, &runs))
				if runs != 0 {
					t.Errorf("%s was not kept", k)
				}
			}
		})
	}
}

// TestKeptErrorsLeave checks that errors leaving by Forget, Remove, a
// successful rebuild after Forget and Close keep the counters true, under
// many goroutines.
func TestKeptErrorsLeave(t *testing.T) {
	c := New[int, *object](Options[*object]{MaxErrors: 50, Threshold: 100})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				k := (g*7 + i) % 120
				switch i % 5 {
				case 0:
					c.Forget(k)
				case 1:
					c.Remove(k)
				case 2:
					if h, err := c.GetOrBuild(context.Background(), k, builder("ok", 10)); err == nil {
						h.Release()
					}
				default:
					c.GetOrBuild(context.Background(), k, func(context.Context) (*object, int64, error) {
						return nil, 0, errCompile
					})
				}
			}
		})
	}
	wg.Wait()
	if n := keptErrors(t, c); n > 50 {
		t.Fatalf("%d errors kept, want at most 50", n)
	}
	c.Close()
	if n := keptErrors(t, c); n != 0 || c.errN != 0 || c.errB != 0 {
		t.Fatalf("after Close: %d errors, counters %d, %d bytes", n, c.errN, c.errB)
	}
}
