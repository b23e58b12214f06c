package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache/disk"
)

// TestWriteEntriesJSON: the array written in parallel is, byte for byte,
// what json.Encoder writes for the same entries, in order.
func TestWriteEntriesJSON(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		entries := make([]*disk.Info, n)
		list := make([]entryJSON, n)
		for i := range entries {
			k := fakeKey("Fake <GPU> & co", i)
			entries[i] = &disk.Info{Key: k, Digests: k.Digests(), Size: int64(i), AccessTime: time.Unix(int64(i), 0)}
			list[i] = newEntryJSON(entries[i])
		}
		var got, want bytes.Buffer
		if err := writeEntriesJSON(&got, entries); err != nil {
			t.Fatal(err)
		}
		if err := json.NewEncoder(&want).Encode(list); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%d entries: got %q, want %q", n, got.String()[:min(got.Len(), 200)], want.String()[:min(want.Len(), 200)])
		}
	}
}

// TestLastUseToTheHour: the cache records last use to within an hour, so
// ls shows a recent use as "<1h" rather than a precise-looking "4m", and
// --older-than refuses ages it cannot tell apart.
func TestLastUseToTheHour(t *testing.T) {
	dir := t.TempDir()
	putFakes(t, testStore(t, dir), "Fake GPU", 2)
	out, code := onTerminal(t, dir, []string{"COLUMNS=120"}, "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[1], "  <1h  ") || !strings.Contains(lines[2], "  <1h  ") {
		t.Errorf("ls on a terminal: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"ls", "--older-than", "1m"}, {"prune", "--older-than", "30m"}, {"export", "--older-than", "59m", "x"}} {
		r := run(t, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "to within an hour") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the reason", args, r.code, r.stderr)
		}
	}
	if r := run(t, dir, "prune", "--older-than", "1h", "--dry-run"); r.code != 0 {
		t.Errorf("--older-than 1h: exit %d, %s", r.code, r.stderr)
	}
}
