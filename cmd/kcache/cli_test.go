package main

import "testing"

// TestPlural: counts of one thing are singular ("1 file", not "1 files").
func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "file", "0 files"}, {1, "file", "1 file"}, {2, "file", "2 files"},
		{1, "entry", "1 entry"}, {3, "damaged entry", "3 damaged entries"}, {2, "difference", "2 differences"},
	} {
		if got := plural(tt.n, tt.noun); got != tt.want {
			t.Errorf("plural(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}
