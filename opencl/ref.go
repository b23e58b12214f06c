package opencl

import "sync/atomic"

// ref is the one CL reference a wrapper owns. Release swaps the handle to 0
// first, so a second Release (or a racing one) finds nothing to free and a
// CL object is never released twice through the same wrapper. Calls made
// after Release pass handle 0, which OpenCL rejects with CL_INVALID_*
// rather than touching freed memory. A call already in flight when Release
// runs is not protected: like Close, Release must not race with use.
type ref struct {
	h atomic.Uintptr
}

func (r *ref) handle() uintptr { return r.h.Load() }

// release drops the reference with fn. The status is ignored on purpose:
// the only failures are an invalid handle, which the swap rules out, and
// out-of-host-memory, where the caller could do nothing better either.
func (r *ref) release(fn func(uintptr) int32) {
	if h := r.h.Swap(0); h != 0 {
		fn(h)
	}
}
