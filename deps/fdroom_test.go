package deps

import (
	"os"
	"testing"
	"time"
)

// TestDescriptorRoom: the room falls by one for each descriptor opened,
// and the status line is read as the kernel writes it.
func TestDescriptorRoom(t *testing.T) {
	before, _ := countDescriptorRoom()
	if before <= 4 {
		t.Skipf("room %d: no /proc, or a table too full to test", before)
	}
	var files []*os.File
	for range 3 {
		f, err := os.Open(".")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	after, _ := countDescriptorRoom()
	for _, f := range files {
		f.Close()
	}
	if after != before-3 {
		t.Errorf("room %d with 3 descriptors more, %d before", after, before)
	}
	for _, c := range []struct {
		text string
		size int
		ok   bool
	}{
		{"Name:\tx\nFDSize:\t256\nGroups:\n", 256, true},
		{"Name:\tx\nFDSize:\t64", 64, true},
		{"Name:\tx\nFDSize:\t\nGroups:\n", 0, false},
		{"Name:\tx\nFDSize:\t-1\n", 0, false},
		{"FDSize:\t64\n", 0, false}, // not at a line's start: no status writes it first
		{"Name:\tx\n", 0, false},
	} {
		if n, ok := statusTableSize([]byte(c.text)); n != c.size || ok != c.ok {
			t.Errorf("statusTableSize(%q) = %d, %v; want %d, %v", c.text, n, ok, c.size, c.ok)
		}
	}
}

// TestDescriptorBudget: a budget gives at most the room less the margin,
// never more than a check's goroutines hold, and what is given back may be
// taken again.
func TestDescriptorBudget(t *testing.T) {
	lastRoom.Store(nil)
	var b descriptorBudget
	taken := 0
	for b.take() {
		taken++
		if taken > checkDescriptors() {
			t.Fatalf("a budget gave more than %d descriptors", checkDescriptors())
		}
	}
	room, _ := countDescriptorRoom()
	if want := min(max(room-descriptorMargin, 0), checkDescriptors()); taken != want && room > 0 {
		t.Errorf("took %d, want %d", taken, want)
	}
	if taken > 0 {
		b.give()
		if !b.take() {
			t.Error("a descriptor given back could not be taken again")
		}
	}
}

// TestDescriptorBudgetGrowsTable: a check that finds the table short of
// its room takes only what there is, and has the table grown off its
// path, so that a later check finds room for all its directories.
func TestDescriptorBudgetGrowsTable(t *testing.T) {
	room, _ := countDescriptorRoom()
	if room == 0 {
		t.Skip("no /proc to learn the room from")
	}
	// Fill the table to a few slots short of a check's room.
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for room > descriptorMargin+2 {
		f, err := os.Open(".")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		room, _ = countDescriptorRoom()
	}
	lastRoom.Store(nil) // the check counts the room as it is now
	short := &descriptorBudget{}
	taken := 0
	for short.take() {
		taken++
	}
	// Two past the margin when the table was filled; a few more where
	// another test's goroutine closed some since.
	if taken > 6 {
		t.Errorf("a check took %d descriptors where the table had room for %d past the margin", taken, room-descriptorMargin)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if room, _ = countDescriptorRoom(); room >= checkDescriptors()+descriptorMargin {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table was not grown: room %d, a check wants %d", room, checkDescriptors()+descriptorMargin)
		}
		time.Sleep(5 * time.Millisecond)
	}
	later := &descriptorBudget{}
	for range checkDescriptors() {
		if !later.take() {
			t.Fatal("a check after the growth found no room")
		}
	}
}

// TestDescriptorRoomCounted: the room is counted once for the checks of
// a roomFresh, and counted again after it.
func TestDescriptorRoomCounted(t *testing.T) {
	if room, _ := countDescriptorRoom(); room <= 4 {
		t.Skip("no /proc, or a table too full to test")
	}
	lastRoom.Store(nil)
	first, _ := descriptorRoom()
	f, err := os.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if again, _ := descriptorRoom(); again != first {
		t.Errorf("room %d counted again within roomFresh, %d before", again, first)
	}
	lastRoom.Store(&roomCount{room: first, at: time.Now().Add(-roomFresh)})
	if later, _ := descriptorRoom(); later != first-1 {
		t.Errorf("room %d after roomFresh with one descriptor more, %d before", later, first)
	}
}
