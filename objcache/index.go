package objcache

// minDelta is the smallest delta at which an index compacts. Below it a
// compaction costs more than the lookups it saves: a dozen entries copy in
// well under a microsecond, and a missed base lookup is a few nanoseconds.
const minDelta = 8

// index is an immutable snapshot of the key-to-entry mapping. Readers load
// it through Cache.idx with no lock; writers, under Cache.mu, build a new
// one and publish it.
//
// Copying one map on every insert would make n inserts cost O(n²): fine for
// a few hundred programs, not for a hundred thousand kernels. So the
// snapshot is two maps: base, large and rebuilt only on compaction, and
// delta, the entries added since, copied on every insert. Removing an entry
// of base does not copy base either: the entry is marked gone (stateGone)
// and skipped by lookup until the next compaction. Compaction runs once
// delta and the gone entries of base outnumber the square root of base, so
// an insert costs O(√n) amortized, and a hit on an entry of base, the common
// case, is one map lookup.
type index[K comparable, V any] struct {
	base  map[K]*entry[K, V]
	delta map[K]*entry[K, V]
	stale int // entries of base that are gone
}

// lookup returns the live entry for k, or nil.
func (x *index[K, V]) lookup(k K) *entry[K, V] {
	if e := x.base[k]; e != nil && e.state.Load()&stateGone == 0 {
		return e
	}
	return x.delta[k]
}

// with returns x plus e under k. k must have no live entry in x.
func (x *index[K, V]) with(k K, e *entry[K, V]) *index[K, V] {
	delta := make(map[K]*entry[K, V], len(x.delta)+1)
	for dk, de := range x.delta {
		delta[dk] = de
	}
	delta[k] = e
	return (&index[K, V]{base: x.base, delta: delta, stale: x.stale}).compacted()
}

// without returns x less e, which is stored under k. An entry of base must
// already be marked gone.
func (x *index[K, V]) without(k K, e *entry[K, V]) *index[K, V] {
	if x.delta[k] != e {
		return (&index[K, V]{base: x.base, delta: x.delta, stale: x.stale + 1}).compacted()
	}
	delta := make(map[K]*entry[K, V], len(x.delta)-1)
	for dk, de := range x.delta {
		if dk != k {
			delta[dk] = de
		}
	}
	return &index[K, V]{base: x.base, delta: delta, stale: x.stale}
}

// compacted returns x, or once its delta and gone entries have grown past
// the square root of its base, one map holding its live entries.
func (x *index[K, V]) compacted() *index[K, V] {
	d := len(x.delta) + x.stale
	if d < minDelta || d*d <= len(x.base) {
		return x
	}
	base := make(map[K]*entry[K, V], len(x.base)-x.stale+len(x.delta))
	x.each(func(e *entry[K, V]) { base[e.key] = e })
	return &index[K, V]{base: base}
}

// each calls f for every live entry of x.
func (x *index[K, V]) each(f func(*entry[K, V])) {
	for _, e := range x.base {
		if e.state.Load()&stateGone == 0 {
			f(e)
		}
	}
	for _, e := range x.delta {
		f(e)
	}
}
