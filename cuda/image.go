package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kcache/kcache"
)

// Image formats: what the driver is handed.
const (
	FormatCUBIN = "cubin" // machine code for one architecture: loads with no JIT
	FormatPTX   = "ptx"   // virtual ISA: the driver JIT-compiles it at load
)

// image is what the binary tiers store for one compiled program: the code
// the driver loads, and the lowered names of its name expressions, which
// a warm start needs without running NVRTC.
type image struct {
	format  string
	code    []byte
	lowered map[string]string // name expression -> mangled name
}

// imageMagic starts every stored image; imageVersion changes with the
// layout, so an entry written by another version is a miss, not a misread.
const (
	imageMagic   = "KCCUDA"
	imageVersion = 1
)

var formatCodes = map[string]byte{FormatCUBIN: 1, FormatPTX: 2}

// encode lays the image out as: magic, version, format, the number of
// lowered names, each name expression and mangled name (length-prefixed),
// then the code (length-prefixed). Names are written sorted, so one image
// always encodes to the same bytes.
func (im *image) encode() []byte {
	b := []byte(imageMagic)
	b = append(b, imageVersion, formatCodes[im.format])
	b = binary.AppendUvarint(b, uint64(len(im.lowered)))
	for _, expr := range slices.Sorted(maps.Keys(im.lowered)) {
		b = appendString(b, expr)
		b = appendString(b, im.lowered[expr])
	}
	b = binary.AppendUvarint(b, uint64(len(im.code)))
	return append(b, im.code...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// errImage is wrapped by every decoding failure; it is a miss to the
// tiers (see kcache.DecodeError).
var errImage = errors.New("malformed CUDA image")

// decodeImage reads an image written by encode. Any damage (a foreign
// entry, a truncated one, trailing bytes) is an error wrapping
// kcache.ErrMiss.
func decodeImage(b []byte) (*image, error) {
	bad := func(reason string) error {
		return fmt.Errorf("cuda: %w: %w", errImage, &kcache.DecodeError{What: "CUDA image", Reason: reason})
	}
	if len(b) < len(imageMagic)+2 || string(b[:len(imageMagic)]) != imageMagic {
		return nil, bad("no magic")
	}
	b = b[len(imageMagic):]
	if b[0] != imageVersion {
		return nil, bad(fmt.Sprintf("version %d", b[0]))
	}
	im := &image{}
	for f, code := range formatCodes {
		if code == b[1] {
			im.format = f
		}
	}
	if im.format == "" {
		return nil, bad(fmt.Sprintf("format %d", b[1]))
	}
	r := reader{b: b[2:]}
	n := r.uvarint()
	if n > uint64(len(r.b)) { // each name takes at least two bytes
		return nil, bad("name count exceeds the entry")
	}
	if n > 0 {
		im.lowered = make(map[string]string, n)
	}
	for range n {
		expr, name := r.string(), r.string()
		if _, dup := im.lowered[expr]; dup && r.err == nil {
			return nil, bad("duplicate name expression")
		}
		im.lowered[expr] = name
	}
	im.code = r.bytes()
	switch {
	case r.err != nil:
		return nil, bad(r.err.Error())
	case len(r.b) != 0:
		return nil, bad("trailing bytes")
	case len(im.code) == 0:
		return nil, bad("no code")
	}
	return im, nil
}

// reader reads length-prefixed fields; the first failure sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("bad length")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errors.New("truncated")
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) string() string { return string(r.bytes()) }
