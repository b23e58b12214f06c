package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites writes from many goroutines at once (run with
// -race) and checks that every write arrived whole.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("line\n"))
			}
		}()
	}
	wg.Wait()
	got := b.String()
	if n := strings.Count(got, "line\n"); n != 3200 || len(got) != 3200*len("line\n") {
		t.Errorf("%d whole lines in %d bytes, want 3200", n, len(got))
	}
}
