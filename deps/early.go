package deps

import (
	"context"
	"sync"

	"github.com/kcache/kcache"
)

// A new process's first key of a source is its dependency record's: read,
// decoded, then a stat of every place it lists. The headers are known once
// the record is decoded; only whether they still hold waits for the
// stats. A caller that looks its binary up by the key can do so while the
// stats run (a disk read, a module load), provided it uses nothing it
// found before they all answered as recorded: AppendHeadersEarly.

// earlyInlinePlaces is the most places a record may list for
// AppendHeadersEarly to stat them on the caller's goroutine before it
// returns, as AppendHeaders does, rather than on a goroutine of their own
// while the caller looks its binary up. A one-header kernel's record lists
// a handful; in a new process, starting the goroutine and waiting for its
// answer cost more than the stats themselves (H100, cold first requests,
// medians: 14 and 6 us, against about 1 us a stat; bench/RESULTS-cuda.md,
// hit7). A record past it is checked as before: the stats of hundreds of
// headers are worth overlapping with a disk read and a module load.
const earlyInlinePlaces = 16

// Confirm reports whether the headers AppendHeadersEarly returned hold:
// every stat of the record they came from answered as recorded, and every
// file it pins was settled. It waits for the stats; it may be called any
// number of times, from any goroutine, and always gives the same answer.
type Confirm func() bool

// confirmed is the Confirm of headers that held on return.
func confirmed() bool { return true }

// AppendHeadersEarly is AppendHeaders, except where this process has no
// memo of in and in's dependency record loads and lists more than a few
// places (earlyInlinePlaces): it then appends the record's headers at once
// and checks the record by stat on another goroutine. The caller must not
// use anything found with the headers (a key, a binary) before confirm
// returns true; when it returns false the record was stale, and
// AppendHeaders, called again, scans. Elsewhere the headers hold on
// return, and confirm returns true at once. in must stay unchanged until
// confirm returns.
func (s *Scanner) AppendHeadersEarly(ctx context.Context, dst []kcache.Header, in Input) (_ []kcache.Header, confirm Confirm, err error) {
	m, confirm, err := s.memoOf(ctx, in, true)
	if err != nil {
		return dst, nil, err
	}
	if dst, err = m.appendHeaders(dst, s.fs.now()); err != nil {
		return dst, nil, err
	}
	return dst, confirm, nil
}

// confirmLater starts the stats of the record r of in (wd standing for
// its working directory, h its hash in the memo cache) and returns the
// Confirm that waits for them. The memo is remembered by the Confirm, on
// its caller's goroutine, only once it held.
func (s *Scanner) confirmLater(ctx context.Context, r loadedRecord, in Input, wd string, h uint64) Confirm {
	done := make(chan bool, 1)
	go func() { done <- r.holds(ctx, s, in) }()
	return sync.OnceValue(func() bool {
		ok := <-done
		if ok {
			s.memos.put(h, r.id, in, wd, r.m)
		}
		return ok
	})
}

// scanStartKey is the context key of WithScanStart's function.
type scanStartKey struct{}

// WithScanStart returns ctx carrying f, which a Scanner calls before it
// scans an input afresh: no memo of this process or dependency record
// gave its files, so the scan reads the source and every header (90-300
// ms on CCCL kernels, against 1-2 ms for a record). A caller uses it to
// begin at once the work that only a slow key needs (the CUDA cache's
// compile on its compile server). f is called on the scanning goroutine,
// once per input scanned, and must not block.
func WithScanStart(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, scanStartKey{}, f)
}
