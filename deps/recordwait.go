package deps

import (
	"context"
	"time"

	"github.com/kcache/kcache/internal/ctxwait"
)

// WithRecordWait sets how long a scan that stores a dependency record
// waits for the write before it returns and leaves the write to go on in
// the background (default 100 ms). Zero returns at once: for a caller that
// runs the scan on an application's thread and waits for the writes on
// its own way out (WaitRecords), so that a record's write overlaps what
// the application does next instead of delaying it.
func WithRecordWait(d time.Duration) Option {
	return func(s *Scanner) { s.recordWait = d }
}

// WaitRecords waits until the record writes under way are done, or ctx is
// done; it reports whether they all finished. A process that exits while
// a write is under way loses that record (the store's writes are atomic:
// no torn record is left), and its next process scans again.
func (s *Scanner) WaitRecords(ctx context.Context) bool {
	return ctxwait.WaitGroup(ctx, &s.writes)
}
