package disk

import (
	"fmt"
	"testing"
	"time"
)

// TestClockSetBack sets a long-running process's clock back 30 days after
// a maintenance pass. Before, the process kept the next pass's time it had
// cached (a month away now) and ran no pass, and the entry used before the
// change, stamped 30 days in the future, would never have aged out. Now
// the cached time is checked against the stamp, and the pass stamps a
// future access time as now, from which the entry ages as any other.
func TestClockSetBack(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now, AgeThreshold: 48 * time.Hour})
	putSettled(t, s, 0, 100) // the first pass; the next cached for a day on
	clock.Advance(-30 * 24 * time.Hour)
	putSettled(t, s, 1, 100)
	clock.Advance(50 * time.Hour)
	putSettled(t, s, 2, 100) // a pass, cutoff 49 h back: 0 and 1 are older
	if got := present(t, s); fmt.Sprint(got) != "[2]" {
		t.Fatalf("50 h after the clock went back a month: left %v, want [2]", got)
	}
}

// TestFutureEntryAges: an entry written by a process whose clock ran a
// month ahead ages from the first pass that sees it, rather than a month
// later.
func TestFutureEntryAges(t *testing.T) {
	ahead := newClock()
	ahead.Advance(30 * 24 * time.Hour)
	a := openTest(t, Options{Now: ahead.Now, EvictionDisabled: true})
	putSettled(t, a, 0, 100)
	clock := newClock()
	s := openTest(t, Options{Dir: a.root, Now: clock.Now, AgeThreshold: 48 * time.Hour})
	putSettled(t, s, 1, 100) // the stamp is a month ahead: a pass
	clock.Advance(50 * time.Hour)
	putSettled(t, s, 2, 100)
	if got := present(t, s); fmt.Sprint(got) != "[2]" {
		t.Fatalf("50 h on: left %v, want [2]", got)
	}
}
