package main

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

// errRecord reports a stored entry that is not a layer record.
var errRecord = errors.New("kcache layer: malformed record")

// record is what the layer stores per program and device: the binary and
// the compiler's log of the build that made it, which the application sees
// through CL_PROGRAM_BUILD_LOG as if it had built the program itself.
type record struct {
	log    string
	binary []byte
}

func (r record) encode() []byte {
	out := make([]byte, 0, len(recordMagic)+binary.MaxVarintLen64+len(r.log)+len(r.binary))
	out = append(out, recordMagic...)
	out = binary.AppendUvarint(out, uint64(len(r.log)))
	out = append(out, r.log...)
	return append(out, r.binary...)
}

// decodeRecord parses what encode wrote. A record without a binary is
// malformed: the driver cannot make a program from nothing.
func decodeRecord(b []byte) (record, error) {
	rest, ok := bytes.CutPrefix(b, recordMagic)
	if !ok {
		return record{}, errRecord
	}
	n, w := binary.Uvarint(rest)
	if w <= 0 || n > maxLog || n >= uint64(len(rest)-w) {
		return record{}, errRecord
	}
	rest = rest[w:]
	return record{log: string(rest[:n]), binary: rest[n:]}, nil
}
