package deps

import (
	"os"
	"testing"
)

// TestGrowDescriptorTable: the table grows by at least the room asked,
// past its size before; and the status line is read as the kernel writes
// it.
func TestGrowDescriptorTable(t *testing.T) {
	size := func() int {
		t.Helper()
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Skip("no /proc/self/status")
		}
		n, ok := descriptorTableSize(status)
		if !ok {
			t.Fatalf("no FDSize in\n%s", status)
		}
		return n
	}
	before := size()
	growDescriptorTable(64)
	if after := size(); after < before+64 {
		t.Errorf("FDSize %d after growing by 64 from %d", after, before)
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
		if n, ok := descriptorTableSize([]byte(c.text)); n != c.size || ok != c.ok {
			t.Errorf("descriptorTableSize(%q) = %d, %v; want %d, %v", c.text, n, ok, c.size, c.ok)
		}
	}
}
