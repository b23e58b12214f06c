package objcache

// Remove drops key's entry, whatever its state, as eviction would: its
// object is released once no caller holds it, and its dependents are
// dropped. A build under way goes on for the callers waiting on it, but its
// result is not kept. Remove reports whether key had an entry.
func (c *Cache[K, V]) Remove(key K) bool {
	return c.dropIf(key, func(*entry[K, V]) bool { return true })
}

// Forget drops key's cached build error, so that the next caller builds
// again: for when the cause is fixed (a header edited, a driver updated).
// A built object or a build under way stays. Forget reports whether key had
// a cached error.
func (c *Cache[K, V]) Forget(key K) bool {
	return c.dropIf(key, func(e *entry[K, V]) bool { return e.state.Load() == stateFailed })
}

// dropIf detaches key's entry if it has one and ok accepts it.
func (c *Cache[K, V]) dropIf(key K, ok func(*entry[K, V]) bool) bool {
	var t cleanup[V]
	c.mu.Lock()
	e := c.idx.Load().lookup(key)
	found := e != nil && ok(e)
	if found {
		c.detach(e, &t)
	}
	c.mu.Unlock()
	t.run()
	return found
}

// AddDependent ties something that must not outlive key's entry to it: drop
// runs once, when the entry leaves the cache for any reason (evicted by the
// threshold or on out-of-memory, removed, or closed). That is how a
// program's kernels, cached in another Cache keyed by {program, name},
// leave with their program: the kernel's builder, once it has the program,
// registers func() { kernels.Remove(kernelKey) } on the program's key.
//
// drop runs after c's lock is released, before the entry's object is
// released, so it may call into c or any other cache; but it must not wait
// for a build of c, since the callers of the build whose insert evicted the
// entry wake only once drop has returned. AddDependent reports
// false, keeping nothing, if key has no entry (the program is already gone):
// the caller then must not keep the dependent, e.g. by failing its build
// with a Transient error. Each registration is kept until the entry leaves;
// a dependent evicted and rebuilt meanwhile registers again, and its
// earlier drop becomes a harmless no-op.
func (c *Cache[K, V]) AddDependent(key K, drop func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.idx.Load().lookup(key)
	if e == nil {
		return false
	}
	e.deps = append(e.deps, drop)
	return true
}

// evictAll evicts every built entry, for a build that ran out of memory.
// Builds under way and cached errors stay: they hold no memory.
func (c *Cache[K, V]) evictAll() {
	var t cleanup[V]
	c.mu.Lock()
	for e := c.lru.front; e != nil; e = c.lru.front {
		c.detach(e, &t)
		c.evictions.Add(1)
	}
	c.mu.Unlock()
	t.run()
}

// Close drops every entry and cancels the builds under way; their waiters
// get their results, or ErrClosed if the build then fails. Objects still
// held are released by their last Release. Later calls to GetOrBuild
// return ErrClosed, and Get finds nothing. Close is idempotent.
func (c *Cache[K, V]) Close() {
	var t cleanup[V]
	c.mu.Lock()
	c.closed = true
	c.idx.Load().each(func(e *entry[K, V]) {
		if e.state.Load() == stateBuilding && e.cancel != nil { // nil while a caller loads (load.go)
			e.cancel()
		}
		c.unlink(e, &t)
	})
	c.idx.Store(&index[K, V]{})
	c.mu.Unlock()
	t.run()
}
