package disk

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kcache/kcache"
)

// slotFile returns the path of key i's slot 0.
func slotFile(s *Store, i int) string {
	return srcPath(s.leafDir(s.digests(testKey(i))), 0)
}

// TestEntryReadSizes: a hit reads an entry in one read into a buffer of
// entryBufSize, and reads a larger one to its end after an fstat; every
// size around the buffer's comes back whole.
func TestEntryReadSizes(t *testing.T) {
	s := openTest(t, Options{})
	sizes := []int{0, 1, 100, entryBufSize - 600, entryBufSize - 1, entryBufSize, entryBufSize + 1, 3*entryBufSize + 17}
	for i, n := range sizes {
		mustPut(t, s, i, n)
	}
	for i, n := range sizes {
		checkGet(t, s, i, n)
		data, err := os.ReadFile(slotFile(s, i))
		if err != nil {
			t.Fatal(err)
		}
		if total, ok := entryLength(data); !ok || total != int64(len(data)) {
			t.Errorf("size %d: entryLength %d, %v; the file holds %d", n, total, ok, len(data))
		}
	}
}

// TestEntryReadDamage: an entry cut short, or with bytes after its
// binary, is a miss and is reported as damage, whether or not it fits the
// first read; it never comes back as a hit.
func TestEntryReadDamage(t *testing.T) {
	for _, n := range []int{1000, entryBufSize - 10, 2 * entryBufSize} {
		for _, damage := range []string{"cut", "appended", "cut to its record"} {
			s := openTest(t, Options{})
			mustPut(t, s, 1, n)
			path := slotFile(s, 1)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "cut":
				data = data[:len(data)-1]
			case "appended":
				data = append(data, 0)
			case "cut to its record":
				data = data[:len(data)-n]
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(context.Background(), testKey(1)); !errors.Is(err, kcache.ErrMiss) {
				t.Errorf("%d bytes, %s: Get err %v, want a miss", n, damage, err)
			}
		}
	}
}

// TestEntryReadNotAFile: a directory in an entry's place is a miss, not a
// hang or a crash.
func TestEntryReadNotAFile(t *testing.T) {
	s := openTest(t, Options{})
	mustPut(t, s, 1, 100)
	path := slotFile(s, 1)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), testKey(1)); !errors.Is(err, kcache.ErrMiss) {
		t.Errorf("Get err %v, want a miss", err)
	}
}

// TestHitAccessTime: a hit spares the fstat of an entry written within
// the hour, and still refreshes the access time of one older than that,
// once, as touch decides on the file's own time.
func TestHitAccessTime(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now})
	mustPut(t, s, 1, 100)
	path := slotFile(s, 1)
	written := mtimeOf(t, path)
	if !written.Equal(clock.Now()) {
		t.Fatalf("entry stamped %v, clock %v", written, clock.Now())
	}
	clock.Advance(40 * time.Minute)
	checkGet(t, s, 1, 100)
	if got := mtimeOf(t, path); !got.Equal(written) {
		t.Errorf("a hit 40 minutes after the write moved the access time to %v", got)
	}
	clock.Advance(2 * time.Hour)
	checkGet(t, s, 1, 100)
	refreshed := mtimeOf(t, path)
	if !refreshed.Equal(clock.Now()) {
		t.Errorf("a hit 160 minutes after the write: access time %v, want %v", refreshed, clock.Now())
	}
	clock.Advance(10 * time.Minute)
	checkGet(t, s, 1, 100)
	if got := mtimeOf(t, path); !got.Equal(refreshed) {
		t.Errorf("a hit 10 minutes after a refresh moved the access time to %v", got)
	}
}

func mtimeOf(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// FuzzReadEntryFile: for any file content, readEntryFile returns the
// whole file, or, where the content's header states a length within what
// one read took, a prefix at least that long, or a prefix that does not
// start as a record; entryLength never panics
// and never states less than the header it parsed.
func FuzzReadEntryFile(f *testing.F) {
	rec := newRawRecord([]byte("key"), []byte("binary"), time.Second, time.Unix(1, 0))
	f.Add(rec.marshalEntry([]byte("binary")))
	f.Add(rec.marshal())
	f.Add([]byte(recordMagic))
	f.Add(append(rec.marshalEntry([]byte("binary")), make([]byte, entryBufSize)...))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		total, ok := entryLength(data)
		if ok && total < int64(len(recordMagic)+4) {
			t.Fatalf("entryLength %d below a header's size", total)
		}
		path := filepath.Join(dir, "e.src")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := openRead(path)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		got, _, err := readEntryFile(fd, path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, got) {
			t.Fatal("read bytes that are not the file's")
		}
		if len(got) < len(data) && !notRecord(got) {
			if total, ok := entryLength(got); !ok || int64(len(got)) < total {
				t.Fatalf("stopped at %d of %d bytes; entryLength %d, %v", len(got), len(data), total, ok)
			}
		}
	})
}
