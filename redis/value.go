package redis

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/kcache/kcache"
	"github.com/klauspost/compress/zstd"
)

// A remote value is one Redis string:
//
//	magic       "KCRV"
//	version     uvarint, valueVersion
//	flags       one byte: flagZstd, flagSigned
//	key digest  32 bytes, kcache.Key.Digest
//	key record  uvarint length, then kcache.Key.MarshalBinary
//	build time  uvarint, nanoseconds
//	length      uvarint, the binary's length
//	sha256      32 bytes, of the binary
//	payload     uvarint length, then the binary, zstd-compressed if flagZstd
//	mac         32 bytes, HMAC-SHA256 of everything above; only if flagSigned
//
// Everything a reader needs to check the value travels with it: a reader
// compares the digest and the full key record with its own key (a value
// stored under the wrong name, or a digest collision, is not a hit), the
// binary with its length and SHA-256 (damage in transit or at rest), and,
// holding a secret, the MAC (a value written by anyone without the secret).
const (
	valueMagic   = "KCRV"
	valueVersion = 1

	flagZstd   = 1 << 0
	flagSigned = 1 << 1
	knownFlags = flagZstd | flagSigned
)

// maxBinary bounds the binary length a value may declare, so a hostile
// value cannot make a reader allocate without limit. It matches the disk
// tier's default image limit.
const maxBinary = 1 << 30

// maxRatioLog bounds a compressed payload's ratio, 2^15: no zstd stream
// holds more, since a block holds at most 128 KiB and takes 4 bytes at
// least (an RLE block). decode allocates the declared length before it
// decompresses, so without the bound a value of a few bytes declaring
// maxBinary made every reader allocate a GiB; with it, a GiB costs 32 KiB
// sent, as a genuine value of a GiB of zeros does.
const maxRatioLog = 15

// minCompress is the smallest binary worth compressing: below it zstd's
// frame overhead eats most of the gain, and the round trip dominates anyway.
const minCompress = 1 << 10

// ErrRejected marks a remote value that failed a check: wrong format, key,
// length, checksum or signature. It wraps kcache.ErrRejected, so the cache
// counts it as a rejected entry and treats it as a miss.
var ErrRejected = kcache.ErrRejected

// The encoder writes no frame checksum: the value's SHA-256 covers the
// binary already.
var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
	// The cap limit makes DecodeAll stop at its destination's capacity,
	// which decode sets to the declared length: a value that inflates
	// beyond what it declares fails instead of exhausting memory.
	decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(maxBinary), zstd.WithDecodeAllCapLimit(true))
)

// codec encodes and checks values, signing them when it holds a secret.
type codec struct {
	secret []byte // nil: values are neither signed nor required to be
	// limit is the largest binary a value may declare; 0 means maxBinary.
	limit uint64
	// raw stores binaries uncompressed, for comparisons.
	raw bool
}

// encode returns the value for e under the key whose digest is digest and
// whose canonical encoding is rec.
func (c codec) encode(digest kcache.Digest, rec []byte, e kcache.Entry) []byte {
	sum := sha256.Sum256(e.Binary)
	payload, flags := e.Binary, byte(0)
	if len(e.Binary) >= minCompress && !c.raw {
		z := encoder.EncodeAll(e.Binary, make([]byte, 0, len(e.Binary)/2))
		// Compression pays only when it saves an eighth: below that the
		// reader's decompression costs more than the bytes saved on the
		// wire of a fast network.
		if len(z) < len(e.Binary)-len(e.Binary)/8 {
			payload, flags = z, flagZstd
		}
	}
	if c.secret != nil {
		flags |= flagSigned
	}
	b := make([]byte, 0, 64+len(rec)+len(payload)+2*sha256.Size+binary.MaxVarintLen64*5)
	b = append(b, valueMagic...)
	b = binary.AppendUvarint(b, valueVersion)
	b = append(b, flags)
	b = append(b, digest[:]...)
	b = binary.AppendUvarint(b, uint64(len(rec)))
	b = append(b, rec...)
	b = binary.AppendUvarint(b, uint64(max(e.BuildTime, 0)))
	b = binary.AppendUvarint(b, uint64(len(e.Binary)))
	b = append(b, sum[:]...)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	b = append(b, payload...)
	if c.secret != nil {
		b = append(b, c.mac(b)...)
	}
	return b
}

// mac returns the HMAC-SHA256 of b under the codec's secret, in a new
// slice: appending to b could overwrite the bytes that follow it, such as
// the MAC being checked.
func (c codec) mac(b []byte) []byte {
	h := hmac.New(sha256.New, c.secret)
	h.Write(b)
	return h.Sum(nil)
}

// header is a value's fields before its payload is checked.
type header struct {
	flags     byte
	digest    kcache.Digest
	key       []byte
	buildTime time.Duration
	length    uint64
	sum       [sha256.Size]byte
	payload   []byte
}

// decode checks v against key and returns the entry it holds. Every
// failure wraps ErrRejected.
func (c codec) decode(key *kcache.Key, v []byte) (kcache.Entry, error) {
	h, err := c.parse(v)
	if err != nil {
		return kcache.Entry{}, err
	}
	rec, _ := key.MarshalBinary()
	if h.digest != key.Digest() || string(h.key) != string(rec) {
		return kcache.Entry{}, reject("value holds another key")
	}
	bin := h.payload
	if h.flags&flagZstd != 0 {
		if bin, err = decoder.DecodeAll(h.payload, make([]byte, 0, h.length)); err != nil {
			return kcache.Entry{}, reject("payload does not decompress: " + err.Error())
		}
	}
	if uint64(len(bin)) != h.length {
		return kcache.Entry{}, reject(fmt.Sprintf("binary is %d bytes, value says %d", len(bin), h.length))
	}
	if sha256.Sum256(bin) != h.sum {
		return kcache.Entry{}, reject("binary's SHA-256 does not match")
	}
	return kcache.Entry{Binary: bin, BuildTime: h.buildTime}, nil
}

// parse splits v into its fields and checks its signature, before anything
// costly (decompression) is done with bytes that may come from anyone.
func (c codec) parse(v []byte) (header, error) {
	var h header
	d := reader{buf: v}
	if string(d.take(len(valueMagic))) != valueMagic {
		return h, reject("not a kcache value")
	}
	if ver := d.uvarint(); d.err == nil && ver != valueVersion {
		return h, reject(fmt.Sprintf("format version %d, want %d", ver, valueVersion))
	}
	if f := d.take(1); len(f) == 1 {
		h.flags = f[0]
	}
	copy(h.digest[:], d.take(sha256.Size))
	h.key = d.take(int(d.length()))
	bt := d.uvarint()
	h.length = d.uvarint()
	copy(h.sum[:], d.take(sha256.Size))
	h.payload = d.take(int(d.length()))
	signed := len(v) - len(d.buf)
	mac := d.take(len(d.buf))
	switch {
	case d.err != nil:
		return h, reject(d.err.Error())
	case h.flags&^knownFlags != 0:
		return h, reject(fmt.Sprintf("unknown flags %#x", h.flags))
	case bt > uint64(1<<63-1) || h.length > c.maxLen():
		return h, reject("length or build time out of range")
	case h.flags&flagZstd == 0 && uint64(len(h.payload)) != h.length:
		return h, reject("payload length does not match")
	case h.flags&flagZstd != 0 && h.length > uint64(len(h.payload))<<maxRatioLog:
		return h, reject(fmt.Sprintf("binary of %d bytes declared for %d compressed: more than zstd can hold", h.length, len(h.payload)))
	}
	h.buildTime = time.Duration(bt)
	return h, c.verify(v[:signed], h.flags, mac)
}

// verify checks the signature part of a value whose signed bytes are body.
func (c codec) verify(body []byte, flags byte, mac []byte) error {
	switch {
	case flags&flagSigned == 0 && len(mac) != 0:
		return reject("trailing bytes")
	case flags&flagSigned != 0 && len(mac) != sha256.Size:
		return reject("truncated signature")
	case c.secret == nil:
		// A reader without a secret has chosen to trust the store; the
		// checksums above still catch damage.
		return nil
	case flags&flagSigned == 0:
		return reject("value is not signed")
	case !hmac.Equal(c.mac(body), mac):
		return reject("signature does not match: written by a client with another secret, or altered")
	}
	return nil
}

func (c codec) maxLen() uint64 {
	if c.limit == 0 {
		return maxBinary
	}
	return c.limit
}

func reject(reason string) error {
	return fmt.Errorf("redis: %w: %s", ErrRejected, reason)
}

// reader reads the fields of a value. The first failure sticks in err and
// every later read returns nothing.
type reader struct {
	buf []byte
	err error
}

var errShort = errors.New("value truncated")

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.buf) {
		r.err, r.buf = errShort, nil
		return nil
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.err, r.buf = errShort, nil
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

// length reads a field length, which can be no more than what is left.
func (r *reader) length() uint64 {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.buf)) {
		r.err, r.buf = errShort, nil
		return 0
	}
	return n
}
