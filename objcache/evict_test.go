package objcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestLRUEviction checks that inserts over the threshold evict least
// recently used entries first, hits counting as uses, and the byte
// accounting that drives it. Each object is 10 bytes; the threshold is 30.
func TestLRUEviction(t *testing.T) {
	tests := []struct {
		name    string
		ops     []string // "+k": build k; "k": hit k; "-k": Remove k
		evicted []string // in order
		kept    []string
	}{
		{"insertion order", []string{"+a", "+b", "+c", "+d", "+e"}, []string{"a", "b"}, []string{"c", "d", "e"}},
		{"hit saves", []string{"+a", "+b", "+c", "a", "+d"}, []string{"b"}, []string{"a", "c", "d"}},
		{"hits reorder", []string{"+a", "+b", "+c", "b", "+d", "c", "+e"}, []string{"a", "b"}, []string{"c", "d", "e"}},
		// Recency is kept per epoch, which advances on inserts: two hits
		// between the same inserts tie, and the older entry goes first.
		{"hits in one epoch tie", []string{"+a", "+b", "+c", "b", "a", "+d", "+e"}, []string{"c", "a"}, []string{"b", "d", "e"}},
		{"hit after later insert", []string{"+a", "+b", "a", "+c", "+d", "+e"}, []string{"b", "a"}, []string{"c", "d", "e"}},
		{"repeated hits", []string{"+a", "+b", "+c", "a", "a", "+d", "a", "+e", "+f"}, []string{"b", "c", "d"}, []string{"a", "e", "f"}},
		{"remove frees room", []string{"+a", "+b", "+c", "-b", "+d"}, nil, []string{"a", "c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr tracker
			c := New[string, *object](Options[*object]{Threshold: 30, Release: tr.release})
			for _, op := range tt.ops {
				switch op[0] {
				case '+':
					mustGet(t, c, op[1:], builder(op[1:], 10)).Release()
				case '-':
					c.Remove(op[1:])
				default:
					h, ok := c.Get(op)
					if !ok {
						t.Fatalf("%s: miss", op)
					}
					h.Release()
				}
			}
			freed := slices.DeleteFunc(tr.list(), func(s string) bool { return slices.Contains(tt.ops, "-"+s) })
			if !slices.Equal(freed, tt.evicted) {
				t.Fatalf("evicted %v, want %v", freed, tt.evicted)
			}
			for _, k := range tt.kept {
				if h, ok := c.Get(k); !ok {
					t.Errorf("%s evicted", k)
				} else {
					h.Release()
				}
			}
			if c.Len() != len(tt.kept) || c.Size() != int64(10*len(tt.kept)) {
				t.Fatalf("Len %d Size %d, want %d and %d", c.Len(), c.Size(), len(tt.kept), 10*len(tt.kept))
			}
			if st := c.Stats(); st.Evictions != uint64(len(tt.evicted)) {
				t.Fatalf("Evictions %d, want %d", st.Evictions, len(tt.evicted))
			}
		})
	}
}

// TestOversizedEntry checks that an object bigger than the threshold
// evicts everything, itself last, yet reaches its caller intact.
func TestOversizedEntry(t *testing.T) {
	var tr tracker
	c := New[string, *object](Options[*object]{Threshold: 30, Release: tr.release})
	mustGet(t, c, "a", builder("a", 10)).Release()
	h := mustGet(t, c, "big", builder("big", 50))
	if c.Len() != 0 || c.Size() != 0 {
		t.Fatalf("Len %d Size %d, want an empty cache", c.Len(), c.Size())
	}
	if got := tr.list(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("freed %v before the caller let go", got)
	}
	h.Release()
	if got := tr.list(); !slices.Equal(got, []string{"a", "big"}) {
		t.Fatalf("freed %v", got)
	}
}

// TestEvictionStress inserts many keys through a small threshold and
// checks that the list, the index and the byte count agree.
func TestEvictionStress(t *testing.T) {
	var tr tracker
	c := New[int, *object](Options[*object]{Threshold: 1000, Release: tr.release})
	for i := range 5000 {
		mustGet(t, c, i, builder(fmt.Sprint(i), int64(1+i%97))).Release()
		if h, ok := c.Get(i / 2); ok {
			h.Release()
		}
	}
	var listed, bytes int64
	for e := c.lru.front; e != nil; e = e.next {
		listed++
		bytes += e.size
		if e.next != nil && e.next.prev != e {
			t.Fatal("broken links")
		}
	}
	indexed := 0
	c.idx.Load().each(func(*entry[int, *object]) { indexed++ })
	if bytes != c.Size() || bytes > 1000 || int(listed) != c.Len() || indexed != c.Len() {
		t.Fatalf("list %d entries %d bytes, index %d, Len %d Size %d", listed, bytes, indexed, c.Len(), c.Size())
	}
	seen := map[string]int{}
	for _, n := range tr.list() {
		seen[n]++
	}
	for e := c.lru.front; e != nil; e = e.next {
		seen[e.h.val.name]++
	}
	for i := range 5000 {
		if seen[fmt.Sprint(i)] != 1 {
			t.Errorf("%d seen %d", i, seen[fmt.Sprint(i)])
		}
	}
	if got := len(tr.list()) + c.Len(); got != 5000 {
		t.Fatalf("freed + kept = %d, want 5000", got)
	}
}

// TestOutOfMemory checks that a build failing with ErrOutOfMemory makes the
// cache evict everything, releasing what no one holds, and retries once;
// and that a second failure is returned, not cached.
func TestOutOfMemory(t *testing.T) {
	oom := fmt.Errorf("clBuildProgram: %w", ErrOutOfMemory)
	var tr tracker
	c := New[string, *object](Options[*object]{Release: tr.release})
	held := mustGet(t, c, "held", builder("held", 10))
	mustGet(t, c, "idle", builder("idle", 10)).Release()

	tries := 0
	h := mustGet(t, c, "big", func(context.Context) (*object, int64, error) {
		if tries++; tries == 1 {
			return nil, 0, oom
		}
		return &object{name: "big"}, 10, nil
	})
	if tries != 2 || !slices.Equal(tr.list(), []string{"idle"}) {
		t.Fatalf("tries %d, freed %v: want a retry after the idle object was freed", tries, tr.list())
	}
	if _, ok := c.Get("held"); ok || c.Len() != 1 {
		t.Fatal("held object not evicted")
	}
	held.Release()
	h.Release()
	if !slices.Equal(tr.list(), []string{"idle", "held"}) {
		t.Fatalf("freed %v", tr.list())
	}

	tries = 0
	alwaysOOM := func(context.Context) (*object, int64, error) { tries++; return nil, 0, oom }
	if _, err := c.GetOrBuild(context.Background(), "huge", alwaysOOM); !errors.Is(err, ErrOutOfMemory) || tries != 2 {
		t.Fatalf("got %v after %d tries, want ErrOutOfMemory after 2", err, tries)
	}
	if _, err := c.GetOrBuild(context.Background(), "huge", alwaysOOM); !errors.Is(err, ErrOutOfMemory) || tries != 4 {
		t.Fatalf("second OOM was cached: %d tries", tries)
	}
	if st := c.Stats(); st.Evictions != 2+1 || st.Builds != 4+2+2 || st.FailedBuilds != 1+4 {
		t.Fatalf("stats %+v", st)
	}
}
