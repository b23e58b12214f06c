package disk

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

func testRecord(i, n int) (Record, []byte) {
	bin := testBinary(i, n)
	key, _ := testKey(i).MarshalBinary()
	raw := newRawRecord(key, bin, 3*time.Second, time.Unix(1700000000, 123))
	rec, err := raw.decodeKey()
	if err != nil {
		panic(err)
	}
	return rec, bin
}

func TestRecordRoundTrip(t *testing.T) {
	rec, bin := testRecord(7, 1000)
	data, err := rec.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Key.Equal(&rec.Key) || got.Size != 1000 || got.BuildTime != 3*time.Second ||
		!got.Created.Equal(time.Unix(1700000000, 123)) || got.SHA256 != rec.SHA256 || got.CRC32C != rec.CRC32C {
		t.Fatalf("round trip: got %+v, want %+v", got, rec)
	}
	raw, _ := parseRecord(data)
	if !raw.checkCRC(bin) || !raw.checkSHA256(bin) {
		t.Fatal("checksums do not match the binary")
	}
	bad := bytes.Clone(bin)
	bad[0] ^= 1
	if raw.checkCRC(bad) || raw.checkSHA256(bad) || raw.checkCRC(bin[:999]) {
		t.Fatal("checksums match a different binary")
	}
}

// TestRecordRejects checks that every truncation and every single flipped
// bit of a record is refused.
func TestRecordRejects(t *testing.T) {
	rec, _ := testRecord(1, 10)
	data, _ := rec.MarshalBinary()
	for n := range len(data) {
		if _, err := DecodeRecord(data[:n]); !errors.Is(err, kcache.ErrMiss) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
	for bit := range len(data) * 8 {
		b := bytes.Clone(data)
		b[bit/8] ^= 1 << (bit % 8)
		if _, err := DecodeRecord(b); err == nil {
			t.Fatalf("bit %d flipped: accepted", bit)
		}
	}
	if _, err := DecodeRecord(append(bytes.Clone(data), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

func TestRecordRejectsStructure(t *testing.T) {
	key, _ := testKey(1).MarshalBinary()
	good := newRawRecord(key, []byte("bin"), time.Second, time.Unix(1, 0))
	tests := []struct {
		name string
		mod  func(r *rawRecord)
		want string
	}{
		{"key garbage", func(r *rawRecord) { r.key = []byte("not a key") }, "malformed key"},
		{"key trailing byte", func(r *rawRecord) { r.key = append(bytes.Clone(r.key), 0) }, "malformed key"},
		{"negative build time", func(r *rawRecord) { r.buildTime = -1 }, "negative build time"},
		{"huge binary", func(r *rawRecord) { r.size = maxBinarySize + 1 }, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good
			tt.mod(&r)
			_, err := DecodeRecord(r.marshal())
			if err == nil || !errors.Is(err, kcache.ErrMiss) || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// A record of another version, with a correct check.
	data := good.marshal()
	data[len(recordMagic)] = recordVersion + 1
	data = fixCheck(data)
	if _, err := DecodeRecord(data); err == nil || !bytes.Contains([]byte(err.Error()), []byte("version")) {
		t.Fatalf("other version: %v", err)
	}
}

// fixCheck recomputes a record's trailing check after an edit.
func fixCheck(data []byte) []byte {
	out := bytes.Clone(data[:len(data)-4])
	sum := crc32c(out)
	return append(out, byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24))
}

func FuzzDecodeRecord(f *testing.F) {
	for i, n := range []int{0, 1, 100} {
		rec, _ := testRecord(i, n)
		data, _ := rec.MarshalBinary()
		f.Add(data)
	}
	f.Add([]byte(recordMagic))
	f.Add([]byte("KCSRC\x01\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := DecodeRecord(data)
		if err != nil {
			if !errors.Is(err, kcache.ErrMiss) {
				t.Fatalf("error is not a miss: %v", err)
			}
			return
		}
		out, err := rec.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeRecord(out)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !again.Key.Equal(&rec.Key) || again.Size != rec.Size || again.SHA256 != rec.SHA256 ||
			again.CRC32C != rec.CRC32C || again.BuildTime != rec.BuildTime || !again.Created.Equal(rec.Created) {
			t.Fatalf("round trip changed the record")
		}
	})
}

// FuzzParseEntry feeds the hit path's decoder of .src files (both
// versions): it must never panic, every failure must be a miss, and an
// entry it accepts must encode back to one that parses the same.
func FuzzParseEntry(f *testing.F) {
	for i, n := range []int{0, 1, 100} {
		rec, bin := testRecord(i, n)
		v1, _ := rec.MarshalBinary()
		f.Add(v1)
		key, _ := rec.Key.MarshalBinary()
		raw := newRawRecord(key, bin, rec.BuildTime, rec.Created)
		f.Add(raw.marshalEntry(bin))
	}
	f.Add([]byte("KCSRC\x02"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, bin, err := parseEntry(data)
		if err != nil {
			if !errors.Is(err, kcache.ErrMiss) {
				t.Fatalf("error is not a miss: %v", err)
			}
			return
		}
		if !raw.embedded {
			if bin != nil {
				t.Fatal("a version 1 record came with a binary")
			}
			return
		}
		again, bin2, err := parseEntry(raw.marshalEntry(bin))
		if err != nil || !again.embedded || !bytes.Equal(bin, bin2) || !bytes.Equal(again.key, raw.key) ||
			again.size != raw.size || again.sha != raw.sha || again.crc != raw.crc ||
			again.buildTime != raw.buildTime || again.created != raw.created {
			t.Fatalf("round trip changed the entry: %v", err)
		}
		if raw.checkCRC(bin) && (int64(len(bin)) != raw.size || crc32c(bin) != raw.crc) {
			t.Fatal("checkCRC accepted a binary that does not match")
		}
	})
}
