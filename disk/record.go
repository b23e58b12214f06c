package disk

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/wire"
)

// A .src file holds one record, the entry's commit marker, and since
// entry version 2 the binary too:
//
//	magic       "KCSRC"
//	version     uvarint, recordVersion (1) or entryVersion (2)
//	key         uvarint length, then the key's canonical encoding
//	            (kcache.Key.MarshalBinary)
//	size        uvarint, the .bin's length in bytes
//	sha256      32 bytes, SHA-256 of the .bin
//	crc32c      4 bytes little-endian, CRC-32C of the .bin
//	build time  varint, nanoseconds the build took
//	created     varint, Unix nanoseconds when the entry was written
//	check       4 bytes little-endian, CRC-32C of every byte before it
//	binary      version 2 only: the binary, exactly size bytes
//
// A version 1 record's binary is the .bin file beside it. Version 2 puts
// the binary in the record's file, so that a hit opens and reads one file
// instead of two: four system calls instead of eight, which on a small
// module was most of what a hit cost. Put writes version 2; entries of
// version 1 are read as before. The check covers the record's fields, and
// the binary is covered by the CRC-32C and SHA-256 they hold, as a .bin is.
//
// The trailing check tells a damaged record from a different key: without it
// a flipped bit in the key would read as a collision and the damage would
// stay. Both checksums of the binary are kept because they serve different
// readers: a hit verifies the CRC-32C, which runs at memory speed (about
// 15 GB/s here against SHA-256's 0.9 GB/s, which would more than double a
// 100 KB hit) and catches every torn write, truncation and burst of flipped
// bits a disk produces; Verify, Export and Import check the SHA-256, the
// content identity a blob carries to other machines. Neither defends against
// someone who can write the directory: they could rewrite the record too,
// which is why Open refuses directories others can write.

const (
	recordMagic   = "KCSRC"
	recordVersion = 1
	entryVersion  = 2
	// maxRecordSize bounds what a reader allocates for a .src file. The
	// record holds the key, image source and headers included, so it is as
	// large as the largest image cached (kcache.DefaultMaxImageSize, 1 GiB);
	// anything beyond twice that is not a record this package wrote.
	maxRecordSize = 2 << 30
	// maxBinarySize bounds the binary size a record may claim, so that a
	// forged record cannot make a reader allocate without limit. No device
	// binary comes near 64 GiB.
	maxBinarySize = 64 << 30
	// maxEntrySize bounds a .src file of version 2: a record and its
	// binary.
	maxEntrySize = maxRecordSize + maxBinarySize
)

// castagnoli is the CRC-32C table; amd64 and arm64 compute it in hardware.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is the decoded content of a .src file: the full key and what
// verifies the binary stored beside it.
type Record struct {
	Key       kcache.Key
	Size      int64         // length of the binary in bytes
	SHA256    [32]byte      // SHA-256 of the binary
	CRC32C    uint32        // CRC-32C (Castagnoli) of the binary
	BuildTime time.Duration // what the build cost, reported on a hit as time saved
	Created   time.Time     // when the entry was written
}

// MarshalBinary encodes r in the .src record format.
func (r *Record) MarshalBinary() ([]byte, error) {
	key, err := r.Key.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("disk: encode record: %w", err)
	}
	raw := rawRecord{key: key, size: r.Size, sha: r.SHA256, crc: r.CRC32C,
		buildTime: int64(r.BuildTime), created: r.Created.UnixNano()}
	return raw.marshal(), nil
}

// DecodeRecord decodes a .src record. Anything malformed, truncated,
// foreign, of another version, failing its check, with trailing bytes, or
// holding a key not in canonical form gives a *kcache.DecodeError, which is a
// miss (errors.Is(err, kcache.ErrMiss)).
func DecodeRecord(data []byte) (Record, error) {
	raw, err := parseRecord(data)
	if err != nil {
		return Record{}, err
	}
	return raw.decodeKey()
}

// rawRecord is a record with its key still encoded: a hit compares the
// encoded key byte for byte and never needs it decoded.
type rawRecord struct {
	// embedded says the binary follows the record in its file (entry
	// version 2), not in a .bin beside it.
	embedded  bool
	key       []byte
	size      int64
	sha       [32]byte
	crc       uint32
	buildTime int64
	created   int64
}

// newRawRecord returns the record of binary bin built for the key encoded
// as key.
func newRawRecord(key, bin []byte, buildTime time.Duration, created time.Time) rawRecord {
	return rawRecord{
		key:       key,
		size:      int64(len(bin)),
		sha:       sha256.Sum256(bin),
		crc:       crc32c(bin),
		buildTime: int64(buildTime),
		created:   created.UnixNano(),
	}
}

func (r *rawRecord) marshal() []byte { return r.appendRecord(nil, recordVersion, 0) }

// marshalEntry encodes r with its binary bin in one file (entryVersion).
func (r *rawRecord) marshalEntry(bin []byte) []byte {
	b := r.appendRecord(nil, entryVersion, len(bin))
	return append(b, bin...)
}

// appendRecord appends r's record of the given version, with room for
// extra bytes after it.
func (r *rawRecord) appendRecord(b []byte, version uint64, extra int) []byte {
	b = slices.Grow(b, len(recordMagic)+len(r.key)+80+extra)
	b = append(b, recordMagic...)
	b = binary.AppendUvarint(b, version)
	b = binary.AppendUvarint(b, uint64(len(r.key)))
	b = append(b, r.key...)
	b = binary.AppendUvarint(b, uint64(r.size))
	b = append(b, r.sha[:]...)
	b = binary.LittleEndian.AppendUint32(b, r.crc)
	b = binary.AppendVarint(b, r.buildTime)
	b = binary.AppendVarint(b, r.created)
	return binary.LittleEndian.AppendUint32(b, crc32c(b))
}

// parseEntry checks and splits the content of a .src file without
// decoding its key: a version 1 record (bin is nil; the binary is in the
// .bin beside it), or a version 2 record and the binary that follows it.
// Only the record is checked here; the caller checks bin against it
// (checkCRC), so that a damaged binary under a sound record is known to be
// that key's entry, damaged.
func parseEntry(data []byte) (r rawRecord, bin []byte, err error) {
	if len(data) < len(recordMagic)+4 || string(data[:len(recordMagic)]) != recordMagic {
		return r, nil, recordError("bad magic")
	}
	p := wire.NewDecoder(data[len(recordMagic):])
	if v := p.Uvarint(); !p.OK || v != entryVersion {
		r, err := parseRecord(data)
		return r, nil, err
	}
	r.embedded = true
	r.key = p.Bytes()
	size := p.Uvarint()
	copy(r.sha[:], p.Fixed(len(r.sha)))
	if c := p.Fixed(4); c != nil {
		r.crc = binary.LittleEndian.Uint32(c)
	}
	r.buildTime = p.Varint()
	r.created = p.Varint()
	end := len(data) - len(p.Buf)
	check := p.Fixed(4)
	switch {
	case !p.OK:
		return r, nil, recordError("truncated")
	case crc32c(data[:end]) != binary.LittleEndian.Uint32(check):
		return r, nil, recordError("checksum mismatch")
	}
	if err := r.setSize(size); err != nil {
		return r, nil, err
	}
	return r, p.Buf, nil
}

// setSize validates the fields a record's check cannot: the claimed size
// and the build time.
func (r *rawRecord) setSize(size uint64) error {
	switch {
	case size > maxBinarySize:
		return recordError(fmt.Sprintf("binary size %d out of range", size))
	case r.buildTime < 0:
		return recordError("negative build time")
	}
	r.size = int64(size)
	return nil
}

// parseRecord checks and splits a version 1 record without decoding its
// key.
func parseRecord(data []byte) (rawRecord, error) {
	var r rawRecord
	if len(data) < len(recordMagic)+4 || string(data[:len(recordMagic)]) != recordMagic {
		return r, recordError("bad magic")
	}
	body, check := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32c(body) != check {
		return r, recordError("checksum mismatch")
	}
	p := wire.NewDecoder(body[len(recordMagic):])
	if v := p.Uvarint(); p.OK && v != recordVersion {
		return r, recordError(fmt.Sprintf("record version %d, want %d", v, recordVersion))
	}
	r.key = p.Bytes()
	size := p.Uvarint()
	copy(r.sha[:], p.Fixed(len(r.sha)))
	if c := p.Fixed(4); c != nil {
		r.crc = binary.LittleEndian.Uint32(c)
	}
	r.buildTime = p.Varint()
	r.created = p.Varint()
	switch {
	case !p.OK:
		return r, recordError("truncated")
	case len(p.Buf) != 0:
		return r, recordError(fmt.Sprintf("%d trailing bytes", len(p.Buf)))
	}
	return r, r.setSize(size)
}

// decodeKey completes a parsed record. A key that does not re-encode to the
// same bytes is refused: this package writes only canonical keys, and a
// lookup compares encodings, so a non-canonical one could never be a hit.
func (r *rawRecord) decodeKey() (Record, error) {
	var k kcache.Key
	if err := k.UnmarshalBinary(r.key); err != nil {
		return Record{}, fmt.Errorf("disk: record key: %w", err)
	}
	if enc, _ := k.MarshalBinary(); !bytes.Equal(enc, r.key) {
		return Record{}, recordError("key not in canonical form")
	}
	return Record{
		Key:       k,
		Size:      r.size,
		SHA256:    r.sha,
		CRC32C:    r.crc,
		BuildTime: time.Duration(r.buildTime),
		Created:   time.Unix(0, r.created),
	}, nil
}

// checkCRC reports whether bin is the binary r describes, by length and
// CRC-32C: the check a hit makes.
func (r *rawRecord) checkCRC(bin []byte) bool {
	return int64(len(bin)) == r.size && crc32c(bin) == r.crc
}

// checkSHA256 reports whether bin is the binary r describes, by length and
// SHA-256: the check Verify and the blob functions make.
func (r *rawRecord) checkSHA256(bin []byte) bool {
	return int64(len(bin)) == r.size && sha256.Sum256(bin) == r.sha
}

func recordError(reason string) error {
	return &kcache.DecodeError{What: "record", Reason: reason}
}

// parser reads the record's fields. The first failure clears OK and every
// later read returns a zero value, so callers check OK once.
type parser = wire.Decoder

// crc32c returns the CRC-32C of b.
func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
