package compileserver

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kcache/kcache/internal/wire"
)

// A frame is a fixed header and a payload:
//
//	magic "KCSV" | version u8 | type u8 | reserved u16 (0) | length u32 (big endian) | payload
//
// The payload is a sequence of fields, each a uvarint length and bytes (or
// a uvarint for numbers), in the order the message type defines. A reader
// that meets another version refuses the frame: client and server come
// from different kcache builds, and the client compiles itself.
const (
	frameMagic = "KCSV"
	// frameVersion 2 added Request.FilesLater and msgFiles.
	frameVersion = 2
	headerSize   = 12
	// maxFrame bounds a frame's payload: a CUDA source with its in-memory
	// headers, or a CUBIN, is far below it; a length above it is damage
	// or another protocol, and must not make the reader allocate it.
	maxFrame = 256 << 20
)

// Message types.
const (
	msgCompile      byte = 1
	msgCompileReply byte = 2
	msgStatus       byte = 3
	msgStatusReply  byte = 4
	msgStop         byte = 5
	msgStopReply    byte = 6
	// msgFiles follows a msgCompile whose request has FilesLater: the
	// key's digest and its files. The server answers the msgCompile.
	msgFiles byte = 7
)

// ErrProtocol is a frame or message that does not decode.
var ErrProtocol = errors.New("compileserver: malformed message")

// writeFrame writes one frame.
func writeFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("compileserver: message of %d bytes exceeds %d", len(payload), maxFrame)
	}
	buf := make([]byte, headerSize, headerSize+len(payload))
	copy(buf, frameMagic)
	buf[4] = frameVersion
	buf[5] = typ
	binary.BigEndian.PutUint32(buf[8:], uint32(len(payload)))
	_, err := w.Write(append(buf, payload...))
	return err
}

// readFrame reads one frame and returns its type and payload.
func readFrame(r io.Reader) (byte, []byte, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	if string(h[:4]) != frameMagic {
		return 0, nil, fmt.Errorf("%w: bad magic %q", ErrProtocol, h[:4])
	}
	if h[4] != frameVersion {
		return 0, nil, fmt.Errorf("%w: protocol version %d, want %d", ErrProtocol, h[4], frameVersion)
	}
	if h[6] != 0 || h[7] != 0 {
		return 0, nil, fmt.Errorf("%w: reserved bits set", ErrProtocol)
	}
	n := binary.BigEndian.Uint32(h[8:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrProtocol, n, maxFrame)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, fmt.Errorf("%w: truncated frame: %w", ErrProtocol, err)
	}
	return h[5], payload, nil
}

// encoder appends fields to a payload.
type encoder struct{ b []byte }

func (e *encoder) uint(v uint64)   { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) bytes(p []byte)  { e.uint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *encoder) string(s string) { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) strings(s []string) {
	e.uint(uint64(len(s)))
	for _, x := range s {
		e.string(x)
	}
}

// decoder reads fields from a payload. The first failure sticks: every
// later read returns zero values, and done reports it.
type decoder struct {
	wire.Decoder
	why string // the first failure's reason, where the protocol names one
}

func newDecoder(p []byte) *decoder { return &decoder{Decoder: wire.NewDecoder(p)} }

func (d *decoder) fail(what string) {
	if d.OK {
		d.why = what
	}
	d.Fail()
}

func (d *decoder) string() string { return string(d.Bytes()) }

func (d *decoder) strings() []string {
	n := d.Count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.string()
	}
	return out
}

func (d *decoder) digest() [32]byte {
	var out [32]byte
	p := d.Bytes()
	if d.OK && len(p) != len(out) {
		d.fail("digest of wrong length")
	}
	copy(out[:], p)
	return out
}

// done reports the first failure, or trailing bytes as one.
func (d *decoder) done() error {
	if d.OK && len(d.Buf) != 0 {
		d.fail("trailing bytes")
	}
	if d.OK {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrProtocol, cmp.Or(d.why, "a number or length beyond the frame"))
}
