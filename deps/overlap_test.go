package deps

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// overlapScanner is a Scanner as a new process makes one, with the
// production stats (relative to directories, in parallel), the tree's
// files counted as settled, and its reads counted.
func overlapScanner(store RecordStore) (*Scanner, *atomic.Int64) {
	s := NewScanner(nil, WithRecords(store))
	s.fs.now = func() time.Time { return time.Now().Add(time.Minute) }
	var reads atomic.Int64
	read := s.fs.readFile
	s.fs.readFile = func(p string) ([]byte, error) { reads.Add(1); return read(p) }
	return s, &reads
}

// TestRecordCheckOverlapped: the stats a record's check begins while the
// record is decoded answer as memo.valid does. A record of 500 headers
// (eight chunks of stats) serves a new process while it holds, and an
// edit of a header in the first or the last chunk, or a header created in
// a place found empty, makes the process scan and key the edit.
func TestRecordCheckOverlapped(t *testing.T) {
	_, in, paths := recordBenchTree(t, 500)
	// A search directory that does not exist, first: its places are
	// probed and found empty.
	in.Args = append([]string{"-Iempty"}, in.Args...)
	if len(paths) < 4*statChunk {
		t.Fatalf("%d places: too few for the check to run in chunks", len(paths))
	}
	store := newMemRecords()
	first, _ := overlapScanner(store)
	want, _ := scanRecorded(t, first, in)
	s, reads := overlapScanner(store)
	if got, _ := mustScan(t, s, in); !slices.Equal(got, want) || reads.Load() != 0 {
		t.Fatalf("served %d headers after %d reads; want the record's %d and no read", len(got), reads.Load(), len(want))
	}
	var files []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			files = append(files, p)
		}
	}
	edits := map[string]func(){
		"first chunk": func() { write(t, files[1], "#define EDITED_FIRST 1\n") },
		"last chunk":  func() { write(t, files[len(files)-1], "#define EDITED_LAST 1\n") },
		"a place found empty": func() {
			write(t, filepath.Join(in.WorkDir, "empty/lib/all.h"), "#define CREATED 1\n")
		},
	}
	for _, name := range []string{"first chunk", "last chunk", "a place found empty"} {
		t.Run(name, func(t *testing.T) {
			before, _ := mustScan(t, NewScanner(nil), in)
			edits[name]()
			s, reads := overlapScanner(store)
			got, _ := mustScan(t, s, in)
			fresh, _ := mustScan(t, NewScanner(nil), in)
			if !slices.Equal(got, fresh) {
				t.Errorf("key of %d headers, want a fresh scan's %d", len(got), len(fresh))
			}
			if slices.Equal(got, before) || reads.Load() == 0 {
				t.Errorf("served by a record that no longer holds (%d reads)", reads.Load())
			}
			s.writes.Wait()
		})
	}
}

// TestRecordCheckAborted: a record that fails to decode after its
// observations (here: trailing bytes, under a checksum that matches)
// answers false even once every chunk of its stats was begun, and its
// goroutines end.
func TestRecordCheckAborted(t *testing.T) {
	_, in, _ := recordBenchTree(t, 500)
	store := newMemRecords()
	s, _ := overlapScanner(store)
	scanRecorded(t, s, in)
	id, rec := store.only(t)
	body := append(rec[:len(rec)-crcSize:len(rec)-crcSize], 0)
	bad := binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, recordCRC))
	check := newRecordCheck(s.fs)
	if _, err := decodeRecordChecked(id, bad, check); !errors.Is(err, errBadRecord) {
		t.Fatalf("decoded a record with trailing bytes: %v", err)
	}
	if check.published != len(check.ready) || len(check.ready) < 2 {
		t.Fatalf("%d of %d chunks begun: the failure came too early to test the abort", check.published, len(check.ready))
	}
	if check.wait() {
		t.Error("a record that failed to decode held")
	}
	// And one that decodes holds.
	good := newRecordCheck(s.fs)
	if _, err := decodeRecordChecked(id, rec, good); err != nil || !good.wait() {
		t.Errorf("the whole record: %v, held %v", err, good.wait())
	}
	// Small records are checked after their decode, on the caller's
	// goroutine.
	small := newRecordCheck(s.fs)
	small.start(make([]observation, statChunk))
	if small.ready != nil {
		t.Error("a record of one chunk started goroutines")
	}
}
