package main

import (
	"bytes"
	"encoding/json"
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
