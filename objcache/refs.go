package objcache

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Bits of refs.acq.
const (
	refDropped uint64 = 1 << 63        // the cache no longer holds the entry
	refCount   uint64 = refDropped - 1 // references taken
)

// An entry spreads its counters over stripes once inflateAfter of its
// acquisitions have lost a race on them: a lost race means two cores wrote
// the entry's cache line at the same time. A kernel launched from every
// core keeps its line moving between cores, and each hit waits for it: on
// 16 cores, 140 ns a hit instead of 8 with stripes (bench/RESULTS.md). Such
// an entry loses races by the thousand; one shared now and then takes long
// to lose 64, and stripes cost memory, so only hot entries get them.
const inflateAfter = 64

// stripesPerProc is the number of stripes per processor: goroutines pick a
// stripe by hashing their stack address, so there must be room enough that
// the goroutines running at once rarely share one. maxStripes bounds an
// entry's stripes to 4 KiB.
const (
	stripesPerProc = 4
	maxStripes     = 64
)

// refs counts the references to one entry's object. It is not generic: its
// code is compiled once, and called without a dictionary.
//
// References are counted as two monotonic counters rather than one count:
// taken (acq) and given back (rel). Every release follows its acquisition,
// so in total rel <= acq at all times, wherever each was counted; whoever
// reads all the rel counters, then all the acq counters, and finds equal
// sums knows that at some instant in between no one held the object. Once
// the entry is dropped, no acquisition succeeds, so no one ever will again.
//
// A hot entry's counters are spread over stripes, so that cores hitting the
// same entry write different cache lines; the central counters keep what
// was counted before, and the sums cover both.
type refs struct {
	acq       atomic.Uint64             // references taken centrally | refDropped
	rel       atomic.Uint64             // references given back centrally
	stripes   atomic.Pointer[stripeSet] // set once the entry proves hot; never unset
	contended atomic.Uint32             // races lost on acq
	freed     atomic.Bool               // the release hook has been claimed
}

// stripe is one cache line of counters.
type stripe struct {
	acq atomic.Uint64
	rel atomic.Uint64
	_   [64 - 16]byte
}

type stripeSet struct {
	shift uint // 64 - log2(len(s))
	s     []stripe
}

// goroutineHint returns a hash of the calling goroutine's stack address:
// stable while the goroutine runs, and most likely different between the
// goroutines running at once. Go exposes no processor or goroutine id, and
// a random stripe per call would move every stripe's cache line from core
// to core; with this, a goroutine keeps writing the same stripe. The bits
// below 2 KiB, the smallest stack, depend on call depth, so they go.
func goroutineHint() uint64 {
	var b byte
	return (uint64(uintptr(unsafe.Pointer(&b))) >> 11) * 0x9e3779b97f4a7c15
}

func (s *stripeSet) mine() *stripe { return &s.s[goroutineHint()>>s.shift] }

// acquire takes a reference. It fails once the entry is dropped, taking
// none; it then reports whether the caller must run the release hook,
// which a failed attempt on stripes may have to do (see release).
func (r *refs) acquire() (ok, free bool) {
	if s := r.stripes.Load(); s != nil {
		return r.acquireStriped(s)
	}
	a := r.acq.Load()
	if a < refDropped && r.acq.CompareAndSwap(a, a+1) {
		return true, false
	}
	return r.acquireContended()
}

// acquireContended is acquire after a lost race on acq, or on a dropped
// entry. It counts the loss; once losses show the entry is hot, it spreads
// the counters over stripes.
func (r *refs) acquireContended() (ok, free bool) {
	if r.acq.Load() >= refDropped {
		return false, false
	}
	if r.contended.Add(1) == inflateAfter {
		r.inflate()
	}
	for {
		if s := r.stripes.Load(); s != nil {
			return r.acquireStriped(s)
		}
		a := r.acq.Load()
		if a >= refDropped {
			return false, false
		}
		if r.acq.CompareAndSwap(a, a+1) {
			return true, false
		}
	}
}

// acquireStriped takes a reference on the caller's stripe, and checks the
// drop flag after counting it: a drop that the check misses comes later,
// and then counts this reference (see refs).
func (r *refs) acquireStriped(s *stripeSet) (ok, free bool) {
	s.mine().acq.Add(1)
	if r.acq.Load() < refDropped {
		return true, false
	}
	return false, r.release()
}

// inflate spreads r's counters over stripes.
func (r *refs) inflate() {
	n := min(stripesPerProc*runtime.GOMAXPROCS(0), maxStripes)
	shift := 64 - uint(bits.Len(uint(n-1)))
	r.stripes.CompareAndSwap(nil, &stripeSet{shift: shift, s: make([]stripe, 1<<(64-shift))})
}

// release gives back a reference. It reports whether the caller must run
// the release hook: the entry is dropped and this was the last reference.
func (r *refs) release() (free bool) {
	if s := r.stripes.Load(); s != nil {
		s.mine().rel.Add(1)
	} else {
		r.rel.Add(1)
	}
	return r.acq.Load() >= refDropped && r.settle()
}

// drop marks the entry dropped and returns the references taken, for the
// hit count. It reports whether no one holds the object, in which case the
// caller must run the release hook.
func (r *refs) drop() (taken uint64, free bool) {
	a := r.acq.Or(refDropped)
	if a >= refDropped {
		return 0, false
	}
	return r.taken(), r.settle()
}

// taken returns the references taken so far. Once the entry is dropped it
// may count, besides, the failed attempts of callers racing the drop.
func (r *refs) taken() uint64 {
	n := r.acq.Load() & refCount
	if s := r.stripes.Load(); s != nil {
		for i := range s.s {
			n += s.s[i].acq.Load()
		}
	}
	return n
}

// settle reports whether no one holds the dropped entry's object, claiming
// its release if so. It reads every rel counter, then every acq counter
// (see refs). Sums that do not match mean a holder is left, which settles
// when it releases. A surplus Release makes rel exceed acq: the first sum
// that covers it frees the object, possibly early, but never twice.
func (r *refs) settle() bool {
	s := r.stripes.Load()
	rel := r.rel.Load()
	if s != nil {
		for i := range s.s {
			rel += s.s[i].rel.Load()
		}
	}
	acq := r.acq.Load() & refCount
	if s != nil {
		for i := range s.s {
			acq += s.s[i].acq.Load()
		}
	}
	return rel >= acq && r.freed.CompareAndSwap(false, true)
}
