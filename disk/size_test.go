package disk

import (
	"math"
	"strconv"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0\n", 0, true},
		{"1\n", 1, true},
		{"8589934592\n", 8589934592, true},
		{strconv.FormatInt(math.MaxInt64, 10) + "\n", math.MaxInt64, true},
		{"", 0, false},
		{"\n", 0, false},
		{"12", 0, false},                    // torn: no newline
		{"12\n3", 0, false},                 // torn: leftovers of a longer number
		{"12\n\n", 0, false},                // trailing bytes
		{"012\n", 0, false},                 // leading zero
		{"-1\n", 0, false},                  // negative
		{"+1\n", 0, false},                  // sign
		{" 1\n", 0, false},                  // space
		{"1 \n", 0, false},                  // space
		{"1e3\n", 0, false},                 // not decimal
		{"0x10\n", 0, false},                // not decimal
		{"9223372036854775808\n", 0, false}, // overflows int64
		{"99999999999999999999\n", 0, false},
	}
	for _, tt := range tests {
		got, err := parseDecimal([]byte(tt.in))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseDecimal(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0\n", "123\n", "9223372036854775807\n", "-1\n", "12\n3", "", "007\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseDecimal(data)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("parsed a negative total %d", n)
		}
		// The format is canonical: what parses is exactly what
		// formatDecimal writes.
		if got := string(formatDecimal(n)); got != string(data) {
			t.Fatalf("parse(%q) = %d, which formats as %q", data, n, got)
		}
	})
}
