package objcache

import (
	"math/rand/v2"
	"testing"
)

// TestIndexModel runs random inserts and removals through index, marking
// removed entries gone as detach does, and checks it against a plain map
// across compactions.
func TestIndexModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := &index[int, int]{}
	model := map[int]*entry[int, int]{}
	compactions := 0
	for i := range 20000 {
		k := rng.IntN(3000)
		if e := model[k]; e != nil {
			e.state.Store(stateReady | stateGone)
			x = x.without(k, e)
			delete(model, k)
		} else {
			e := &entry[int, int]{key: k}
			x = x.with(k, e)
			model[k] = e
		}
		if len(x.delta) == 0 && x.stale == 0 {
			compactions++
		}
		if d := len(x.delta) + x.stale; d >= minDelta && d*d > len(x.base) {
			t.Fatalf("step %d: delta %d + stale %d not compacted, base %d", i, len(x.delta), x.stale, len(x.base))
		}
		if e := x.lookup(k); e != model[k] {
			t.Fatalf("step %d: lookup(%d) = %p, want %p", i, k, e, model[k])
		}
	}
	n := 0
	x.each(func(e *entry[int, int]) {
		n++
		if model[e.key] != e {
			t.Fatalf("each yields %d, not in the model", e.key)
		}
	})
	if n != len(model) || compactions == 0 {
		t.Fatalf("each yields %d entries, want %d; %d compactions", n, len(model), compactions)
	}
}
