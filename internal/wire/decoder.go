// Package wire reads the binary encodings kcache writes (on disk, the disk
// tier's records and blobs and the scanner's dependency records; on a
// socket, the compile server's frames): varints, fixed fields and
// length-prefixed bytes from a buffer, with a sticky failure, so a decoder
// of untrusted bytes checks once, at its end, instead of after every
// field. It knows no format: each package owns its own.
package wire

import (
	"encoding/binary"
	"math"
)

// Decoder reads fields from Buf. The first read that fails clears OK and
// Buf, and every later read returns a zero value.
type Decoder struct {
	// Buf holds what is left to read.
	Buf []byte
	// OK is false once a read has failed.
	OK bool
}

// NewDecoder returns a Decoder of b.
func NewDecoder(b []byte) Decoder { return Decoder{Buf: b, OK: true} }

// Fail marks the decoding failed and returns nil, for callers that return
// a slice.
func (d *Decoder) Fail() []byte { d.OK, d.Buf = false, nil; return nil }

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 {
	v, n := binary.Uvarint(d.Buf)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.Buf = d.Buf[n:]
	return v
}

// Varint reads a signed varint.
func (d *Decoder) Varint() int64 {
	v, n := binary.Varint(d.Buf)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.Buf = d.Buf[n:]
	return v
}

// Fixed reads the next n bytes, as a slice of the buffer whose capacity
// ends with them.
func (d *Decoder) Fixed(n int) []byte {
	if n < 0 || len(d.Buf) < n {
		return d.Fail()
	}
	b := d.Buf[:n:n]
	d.Buf = d.Buf[n:]
	return b
}

// Count reads a count of items that take at least min bytes each, and
// fails when the rest of the buffer could not hold them: a damaged count
// must not make a decoder allocate more than its input holds.
func (d *Decoder) Count(min int) int {
	n := d.Uvarint()
	if n > uint64(len(d.Buf)/max(min, 1)) {
		d.Fail()
		return 0
	}
	return int(n)
}

// Bytes reads a length-prefixed (unsigned varint) run of bytes.
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
	if n > math.MaxInt || n > uint64(len(d.Buf)) {
		return d.Fail()
	}
	return d.Fixed(int(n))
}
