package objcache

// Kept build errors are bounded apart from Options.Threshold, by count and
// by bytes. They are not charged to the threshold because the two hold
// different things: the threshold bounds live runtime objects, in the
// driver's or the device's memory, that cost a build or a load to get back;
// an error holds a compiler log on the Go heap. Charged together, a run of
// broken kernels would evict live programs to keep logs, and with the
// threshold off (its default) errors would be unbounded again. An error is
// kept only so that a broken kernel is not recompiled on every call: the
// most recently used ones do that, and one evicted costs one more failed
// compile, after which it is kept again.
const (
	// DefaultMaxErrors is the number of build errors kept by default. A
	// process that fails more distinct builds than this is generating
	// sources (autotuning, say) and does not ask for most of them again.
	DefaultMaxErrors = 1024
	// DefaultMaxErrorBytes bounds the bytes of the kept errors by default:
	// a thousand typical compiler logs of a few KiB.
	DefaultMaxErrorBytes = 4 << 20
	// errorOverhead is what an entry costs besides its error's text: the
	// entry itself and its slots in the index, roughly.
	errorOverhead = 256
)

// keepError lists e, whose build failed with an error worth keeping, as
// the most recently used error, having first evicted the least recently
// used ones until e fits within the bounds. e itself is kept even if it
// alone exceeds the bytes bound: its callers hold its error anyway, and
// dropping it would have a broken kernel with a huge log recompiled on
// every call. c.mu is held.
func (c *Cache[K, V]) keepError(e *entry[K, V], t *cleanup[V]) {
	e.size = int64(len(e.err.Error())) + errorOverhead
	for c.errN > 0 && (c.errN+1 > c.maxErrors || c.errB+e.size > c.maxErrB) {
		c.detach(c.errs.lru(), t)
	}
	e.pos = c.epoch.Add(1)
	e.stamp.Store(e.pos)
	c.errs.pushBack(e)
	c.errB += e.size
	c.errN++
}

// errorHit counts a hit on e's kept error and records its use, as Cache.hit
// does for objects, so that errors asked for again are evicted last.
func (c *Cache[K, V]) errorHit(e *entry[K, V]) {
	c.errorHits.Add(1)
	if ep := c.epoch.Load(); e.stamp.Load() != ep {
		e.stamp.Store(ep)
	}
}
