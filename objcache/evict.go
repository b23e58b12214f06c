package objcache

// evictionList is the spec's eviction list: the built entries, intrusively
// linked, ordered by entry.pos, least recently used at the front.
//
// Hits do not reorder it: that would take a lock on every hit. A hit only
// stamps its entry with the current epoch (Cache.hit), and eviction, under
// Cache.mu, moves an entry stamped after it was placed to its place by
// stamp before deciding it is the least recently used. Since the epoch
// advances on every insert, this is exact LRU at the granularity of
// inserts: hits between two inserts are ties, broken by list order.
type evictionList[K comparable, V any] struct {
	front, back *entry[K, V]
}

// pushBack adds e as the most recently used.
func (l *evictionList[K, V]) pushBack(e *entry[K, V]) {
	e.prev, e.next, e.listed = l.back, nil, true
	if l.back != nil {
		l.back.next = e
	} else {
		l.front = e
	}
	l.back = e
}

// remove unlinks e.
func (l *evictionList[K, V]) remove(e *entry[K, V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.front = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.back = e.prev
	}
	e.prev, e.next, e.listed = nil, nil, false
}

// place links e after the last entry whose pos is not greater than e.pos.
// Searching from the back is short: a stamp is recent by construction.
func (l *evictionList[K, V]) place(e *entry[K, V]) {
	p := l.back
	for p != nil && p.pos > e.pos {
		p = p.prev
	}
	if p == nil {
		e.prev, e.next, e.listed = nil, l.front, true
		if l.front != nil {
			l.front.prev = e
		} else {
			l.back = e
		}
		l.front = e
		return
	}
	if p == l.back {
		l.pushBack(e)
		return
	}
	e.prev, e.next, e.listed = p, p.next, true
	p.next.prev = e
	p.next = e
}

// lru returns the least recently used entry, or nil if l is empty, first
// moving the entries hit since they were placed to their place by stamp.
// It ends: the epoch does not advance while Cache.mu is held, so each move
// raises an entry's pos toward a bound that does not move.
func (l *evictionList[K, V]) lru() *entry[K, V] {
	for e := l.front; e != nil; e = l.front {
		s := e.stamp.Load()
		if s <= e.pos {
			return e
		}
		l.remove(e)
		e.pos = s
		l.place(e)
	}
	return nil
}

// cleanup collects what leaving entries owe the outside world, to be done
// once Cache.mu is released: dependents may call into this or another
// cache, and release hooks may be slow.
type cleanup[V any] struct {
	deps  []func()
	frees []*Handle[V]
}

// run drops the dependents first, then releases the objects: a kernel goes
// before the program it was created from.
func (t *cleanup[V]) run() {
	for _, drop := range t.deps {
		drop()
	}
	for _, h := range t.frees {
		h.free()
	}
}

// insert lists e, just built, as the most recently used, and evicts least
// recently used entries while the total is over the threshold. c.mu is held.
func (c *Cache[K, V]) insert(e *entry[K, V], t *cleanup[V]) {
	e.pos = c.epoch.Add(1)
	e.stamp.Store(e.pos)
	c.lru.pushBack(e)
	c.size += e.size
	c.count++
	for c.threshold > 0 && c.size > c.threshold {
		c.detach(c.lru.lru(), t)
		c.evictions.Add(1)
	}
}

// detach takes e out of the cache: out of the index and the eviction list,
// its object dropped (released now if no one holds it, else by the last
// Release), its dependents dropped once t runs. c.mu is held.
func (c *Cache[K, V]) detach(e *entry[K, V], t *cleanup[V]) {
	c.unlink(e, t)
	c.idx.Store(c.idx.Load().without(e.key, e))
}

// unlink is detach but for the index, for callers that replace the whole
// index at once.
func (c *Cache[K, V]) unlink(e *entry[K, V], t *cleanup[V]) {
	st := e.state.Load()
	e.state.Store(st | stateGone)
	switch {
	case e.listed && st == stateFailed:
		c.errs.remove(e)
		c.errB -= e.size
		c.errN--
	case e.listed:
		c.lru.remove(e)
		c.size -= e.size
		c.count--
	}
	if st == stateReady {
		c.dropObject(e, t)
	}
	t.deps = append(t.deps, e.deps...)
	e.deps = nil
}

// dropObject drops e's built object, scheduling its release if no one holds
// it, and adds e's final hit count to the cache's: Stats adds up only the
// entries in the index. c.mu is held.
func (c *Cache[K, V]) dropObject(e *entry[K, V], t *cleanup[V]) {
	taken, free := e.h.drop()
	c.retiredHits.Add(taken - e.preTaken)
	if free {
		t.frees = append(t.frees, &e.h)
	}
}
