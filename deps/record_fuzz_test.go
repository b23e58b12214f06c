package deps

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/kcache/kcache"
)

// FuzzRecord feeds bytes, as a RecordStore returns them from disk, to the
// record decoder: it may not panic or allocate without bound, it must
// refuse anything it cannot parse with errBadRecord, and what it accepts
// must be written back to an equal memo. The fuzzer is given the body
// past the checksum, which random bytes would never pass; the whole
// decoder is run too, with the checksum made to match.
func FuzzRecord(f *testing.F) {
	_, in := recordTree(f)
	store := newMemRecords()
	s := NewScanner(nil, WithRecords(store))
	counting(s)
	scanRecorded(f, s, in)
	var id kcache.Digest
	for k, rec := range store.m {
		id = k
		f.Add(rec[len(recordMagic) : len(rec)-crcSize])
	}
	f.Add([]byte{recordVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseRecord(id, body)
		if err != nil {
			if !errors.Is(err, errBadRecord) {
				t.Fatalf("error %v is not errBadRecord", err)
			}
			return
		}
		whole := append([]byte(recordMagic), body...)
		sum := crc32.Checksum(whole, recordCRC)
		if _, err := decodeRecord(id, binary.LittleEndian.AppendUint32(whole, sum)); err != nil {
			t.Fatalf("the body parsed, the record did not: %v", err)
		}
		again, err := decodeRecord(id, encodeRecord(id, m))
		if err != nil {
			t.Fatalf("a memo decoded from a record does not encode: %v", err)
		}
		if !sameMemo(again, m) {
			t.Fatalf("re-encoded %+v\nwant %+v", again, m)
		}
		// A record of a process's private directory is re-rooted
		// after its decode: whatever it holds, that may only refuse it.
		if err := rerootRecord(m, Input{MainDir: "/p", PrivateDir: "/p"}, "/wd"); err != nil && !errors.Is(err, errBadRecord) {
			t.Fatalf("re-rooting failed with %v, not errBadRecord", err)
		}
	})
}
