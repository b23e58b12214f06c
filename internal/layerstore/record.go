package layerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// recordMagic starts every entry the layer stores, so that bytes written by
// anything else under the same key are refused rather than handed to the
// driver. The layer's keys carry their own image format, so the library's
// raw binaries never meet it; the magic is the second line of defence.
var recordMagic = []byte("kcache-layer-1\n")

// maxLog bounds the build log a record may carry: compilers' logs are
// warnings, kilobytes at most; a larger length is damage.
const maxLog = 16 << 20

// ErrRecord reports a stored entry that is not a layer record.
var ErrRecord = errors.New("kcache layer: malformed record")

// Record is what the layer stores per program and device: the binary and
// the compiler's log of the build that made it, which the application sees
// through CL_PROGRAM_BUILD_LOG as if it had built the program itself. The
// layer writes records of what it read in the application's process, and
// the background worker (Order) of what it built.
type Record struct {
	Log    string
	Binary []byte
}

// Encode returns the record's stored form.
func (r Record) Encode() []byte {
	out := make([]byte, 0, len(recordMagic)+binary.MaxVarintLen64+len(r.Log)+len(r.Binary))
	out = append(out, recordMagic...)
	out = binary.AppendUvarint(out, uint64(len(r.Log)))
	out = append(out, r.Log...)
	return append(out, r.Binary...)
}

// DecodeRecord parses what Encode wrote; what does not parse is an error
// wrapping ErrRecord. A record without a binary is malformed: the driver
// cannot make a program from nothing.
func DecodeRecord(b []byte) (Record, error) {
	rest, ok := bytes.CutPrefix(b, recordMagic)
	if !ok {
		return Record{}, ErrRecord
	}
	n, w := binary.Uvarint(rest)
	if w <= 0 || n > maxLog || n >= uint64(len(rest)-w) {
		return Record{}, ErrRecord
	}
	rest = rest[w:]
	return Record{Log: string(rest[:n]), Binary: rest[n:]}, nil
}
