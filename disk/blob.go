package disk

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/wire"
)

// A blob carries one entry out of the cache and into another, as the
// onednn "cache blob" API does, for users who store binaries themselves (a
// database, a container image, a fleet's object store):
//
//	magic    "KCBLOB"
//	version  uvarint, blobVersion
//	record   uvarint length, then a .src record (see record.go)
//	binary   the rest: exactly the record's size in bytes
//
// Every byte is covered: the record by its own check, the binary by the
// record's SHA-256 and CRC-32C, the framing by its exact lengths.

const (
	blobMagic   = "KCBLOB"
	blobVersion = 1
)

// Blob is a decoded blob: an entry's record and its binary.
type Blob struct {
	Record Record
	Binary []byte
}

// MarshalBinary encodes b in the blob format. The record's size and
// checksums are recomputed from b.Binary.
func (b *Blob) MarshalBinary() ([]byte, error) {
	key, err := b.Record.Key.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("disk: encode blob: %w", err)
	}
	raw := newRawRecord(key, b.Binary, b.Record.BuildTime, b.Record.Created)
	return appendBlob(nil, raw.marshal(), b.Binary), nil
}

func appendBlob(dst, src, bin []byte) []byte {
	dst = append(dst, blobMagic...)
	dst = binary.AppendUvarint(dst, blobVersion)
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	dst = append(dst, src...)
	return append(dst, bin...)
}

// DecodeBlob decodes and verifies a blob. Anything malformed, truncated,
// of another version, or whose binary fails the record's SHA-256 or CRC-32C
// gives a *kcache.DecodeError, which is a miss. The returned Binary aliases
// data.
func DecodeBlob(data []byte) (Blob, error) {
	if len(data) < len(blobMagic) || string(data[:len(blobMagic)]) != blobMagic {
		return Blob{}, blobError("bad magic")
	}
	p := wire.NewDecoder(data[len(blobMagic):])
	if v := p.Uvarint(); p.OK && v != blobVersion {
		return Blob{}, blobError(fmt.Sprintf("blob version %d, want %d", v, blobVersion))
	}
	src := p.Bytes()
	if !p.OK {
		return Blob{}, blobError("truncated")
	}
	raw, err := parseRecord(src)
	if err != nil {
		return Blob{}, err
	}
	bin := p.Buf
	if !raw.checkSHA256(bin) || !raw.checkCRC(bin) {
		return Blob{}, blobError("binary size or checksum mismatch")
	}
	rec, err := raw.decodeKey()
	if err != nil {
		return Blob{}, err
	}
	return Blob{Record: rec, Binary: bin}, nil
}

func blobError(reason string) error {
	return &kcache.DecodeError{What: "blob", Reason: reason}
}

// Export returns key's entry as a blob, after checking its binary's SHA-256
// as well as its CRC-32C: a blob leaves this machine, so it gets the strong
// check. A missing or damaged entry is a miss. Export counts as a use.
func (s *Store) Export(ctx context.Context, key *kcache.Key) ([]byte, error) {
	h, err := s.find(ctx, key.Prepare())
	if err != nil {
		return nil, err
	}
	if !h.rec.checkSHA256(h.bin) {
		return nil, fmt.Errorf("disk: export: %w", recordError("binary fails its SHA-256"))
	}
	s.touch(h.path, h.mtime)
	// A blob carries a version 1 record, whatever version the entry is
	// stored in: the blob format stays what other versions read.
	src := h.rec.marshal()
	return appendBlob(make([]byte, 0, len(src)+len(h.bin)+16), src, h.bin), nil
}

// Import verifies a blob and stores its entry as Put would, with the build
// time the blob records. A blob that does not verify is an error wrapping
// kcache.ErrMiss, and nothing is stored.
func (s *Store) Import(ctx context.Context, blob []byte) error {
	b, err := DecodeBlob(blob)
	if err != nil {
		return fmt.Errorf("disk: import: %w", err)
	}
	return s.Put(ctx, &b.Record.Key, kcache.Entry{Binary: b.Binary, BuildTime: b.Record.BuildTime})
}
