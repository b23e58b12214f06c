package redis

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

func encodeFor(c codec, key *kcache.Key, e kcache.Entry) []byte {
	rec, _ := key.MarshalBinary()
	return c.encode(key.Digest(), rec, e)
}

func TestValueRoundTrip(t *testing.T) {
	random := make([]byte, 100<<10)
	rand.Read(random)
	key := testKey(1)
	for _, tc := range []struct {
		name     string
		bin      []byte
		secret   string
		wantZstd bool
	}{
		{"empty", nil, "", false},
		{"small", []byte("tiny binary"), "", false},
		{"compressible", binaryOf(key, 100<<10), "", true},
		{"incompressible", random, "", false},
		{"signed", binaryOf(key, 6<<20), "s3cret", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := codec{}
			if tc.secret != "" {
				c.secret = []byte(tc.secret)
			}
			e := kcache.Entry{Binary: tc.bin, BuildTime: 1234 * time.Millisecond}
			v := encodeFor(c, key, e)
			h, err := c.parse(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.flags&flagZstd != 0; got != tc.wantZstd {
				t.Errorf("compressed = %v, want %v (%d bytes for %d)", got, tc.wantZstd, len(v), len(tc.bin))
			}
			got, err := c.decode(key, v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Binary, tc.bin) || got.BuildTime != e.BuildTime {
				t.Errorf("decoded %d bytes, %v; want %d bytes, %v", len(got.Binary), got.BuildTime, len(tc.bin), e.BuildTime)
			}
		})
	}
}

// TestValueRejected: every value that fails a check is rejected, and the
// error is both a rejection and a miss.
func TestValueRejected(t *testing.T) {
	key := testKey(1)
	e := kcache.Entry{Binary: binaryOf(key, 4096)}
	signer := codec{secret: []byte("fleet secret")}
	signed := encodeFor(signer, key, e)
	unsigned := encodeFor(codec{}, key, e)
	flip := func(v []byte, i int) []byte {
		v = bytes.Clone(v)
		v[i] ^= 1
		return v
	}
	for _, tc := range []struct {
		name   string
		reader codec
		value  []byte
		key    *kcache.Key
	}{
		{"tampered payload", codec{}, flip(unsigned, len(unsigned)-10), key},
		{"tampered signed payload", signer, flip(signed, len(signed)-40), key},
		{"tampered signature", signer, flip(signed, len(signed)-1), key},
		{"unsigned, reader has a secret", signer, unsigned, key},
		{"signed with another secret", codec{secret: []byte("other")}, signed, key},
		{"another key", codec{}, unsigned, testKey(2)},
		{"truncated", codec{}, unsigned[:len(unsigned)-1], key},
		{"trailing bytes", codec{}, append(bytes.Clone(unsigned), 0), key},
		{"not a value", codec{}, []byte("hello"), key},
		{"empty", codec{}, nil, key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.reader.decode(tc.key, tc.value)
			if !errors.Is(err, kcache.ErrRejected) || !errors.Is(err, kcache.ErrMiss) {
				t.Fatalf("decode = %v, want a rejection that is a miss", err)
			}
		})
	}
	// A reader without a secret trusts the store: a signed value is fine.
	if _, err := (codec{}).decode(key, signed); err != nil {
		t.Errorf("reader without a secret rejected a signed value: %v", err)
	}
}

// FuzzDecode feeds the decoder arbitrary bytes: it must never panic,
// allocate past its limit or accept a value whose binary does not check
// out, whatever the input.
func FuzzDecode(f *testing.F) {
	key := testKey(1)
	for _, c := range []codec{{}, {secret: []byte("k")}} {
		f.Add(encodeFor(c, key, kcache.Entry{Binary: []byte("small")}), c.secret != nil)
		f.Add(encodeFor(c, key, kcache.Entry{Binary: binaryOf(key, 8192), BuildTime: time.Second}), c.secret != nil)
	}
	f.Add([]byte(valueMagic), false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, v []byte, signed bool) {
		c := codec{limit: 1 << 20}
		if signed {
			c.secret = []byte("k")
		}
		e, err := c.decode(key, v)
		if err != nil {
			if !errors.Is(err, kcache.ErrRejected) {
				t.Fatalf("error %v is not a rejection", err)
			}
			return
		}
		// Whatever was accepted re-encodes to a value that decodes alike.
		again, err := c.decode(key, encodeFor(c, key, e))
		if err != nil || !bytes.Equal(again.Binary, e.Binary) {
			t.Fatalf("accepted value does not round-trip: %v", err)
		}
	})
}

// TestValueClaimsMoreThanItHolds: a value of a few bytes whose zstd
// payload declares a binary of a GiB is rejected before the reader
// allocates for it. Before, every lookup of it allocated the GiB (4 GiB
// for 4 lookups), then found 4 bytes.
func TestValueClaimsMoreThanItHolds(t *testing.T) {
	key := testKey(1)
	c := codec{}
	v := encodeFor(c, key, kcache.Entry{Binary: binaryOf(key, 4<<10)})
	h, err := c.parse(v)
	if err != nil || h.flags&flagZstd == 0 {
		t.Fatalf("a compressed value: %v, flags %#x", err, h.flags)
	}
	// The same value with its declared length raised to maxBinary: the
	// length's varint sits just before the SHA-256 and the payload.
	rec, _ := key.MarshalBinary()
	uv := func(n uint64) int { return len(binary.AppendUvarint(nil, n)) }
	// magic, version, flags, digest, record, build time (0)
	at := len(valueMagic) + uv(valueVersion) + 1 + 32 + uv(uint64(len(rec))) + len(rec) + uv(0)
	forged := append([]byte{}, v[:at]...)
	forged = binary.AppendUvarint(forged, maxBinary)
	forged = append(forged, v[at+uv(h.length):]...)
	if _, err := c.parse(forged); !errors.Is(err, ErrRejected) {
		t.Fatalf("forged length: %v; want rejected", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 4 {
		if _, err := c.decode(key, forged); !errors.Is(err, ErrRejected) {
			t.Fatalf("forged length decoded: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("4 lookups of a %d-byte value allocated %d MiB", len(forged), got>>20)
	}
}
