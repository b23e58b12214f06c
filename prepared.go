package kcache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// Prepared is a key's canonical encoding and digests, computed together,
// once. A lookup prepares its key once and hands the result to the object
// tier and to every binary tier (PreparedGetter), instead of sorting,
// encoding and hashing the key again at each step: on a warm hit of a
// small module that work cost as much as reading the entry.
//
// A Prepared is a snapshot: changing the Key afterwards changes neither
// its encoding nor its digests. It is immutable and safe to share.
type Prepared struct {
	key     *Key
	digests Digests
	enc     []byte
}

// Prepare computes k's canonical encoding (MarshalBinary) and its digests
// (Digests) in one pass.
func (k *Key) Prepare() *Prepared {
	enc, bounds := k.canonical().encode()
	p := &Prepared{key: k, enc: enc}
	h := sha256.New()
	parts := [...]struct {
		tag string
		out *Digest
	}{
		{tagDevice, &p.digests.Device},
		{tagImage, &p.digests.Image},
		{tagSpec, &p.digests.Spec},
		{tagOptions, &p.digests.Options},
	}
	// One buffer for the four components' prefixes: written through the
	// hash.Hash interface, a buffer on the stack would escape on each.
	scratch := make([]byte, 0, 64)
	for i, part := range parts {
		componentInto(h, scratch, part.tag, enc[bounds[i]:bounds[i+1]], part.out)
	}
	p.digests.Key = p.digests.sumKey()
	return p
}

// sumKey returns the whole key's digest: over the component digests,
// each length-prefixed, after its tag and the format version.
func (d *Digests) sumKey() Digest {
	var buf [128 + 4*(sha256.Size+1)]byte
	e := encoder{buf: buf[:0]}
	e.str(tagKey)
	e.uvarint(FormatVersion)
	for _, c := range [...]*Digest{&d.Device, &d.Image, &d.Spec, &d.Options} {
		e.bytes(c[:])
	}
	return sha256.Sum256(e.buf)
}

// componentInto writes into out the digest of one component's encoding:
// its tag and the format version first, so that components whose
// encodings happen to be equal bytes still differ. h is reset and reused,
// and so is scratch, for the prefix.
func componentInto(h hash.Hash, scratch []byte, tag string, enc []byte, out *Digest) {
	e := encoder{buf: scratch[:0]}
	e.str(tag)
	e.uvarint(FormatVersion)
	h.Reset()
	h.Write(e.buf)
	h.Write(enc)
	h.Sum(out[:0])
}

// Key returns the key p was prepared from.
func (p *Prepared) Key() *Key { return p.key }

// Digests returns the key's digests, as Key.Digests computes them.
func (p *Prepared) Digests() Digests { return p.digests }

// Encoding returns the key's canonical encoding, as Key.MarshalBinary
// returns it. The caller must not modify it.
func (p *Prepared) Encoding() []byte { return p.enc }

// encode returns the canonical encoding of k, which must be canonical
// already, and where each component's encoding starts and ends in it:
// component i is enc[bounds[i]:bounds[i+1]].
func (k *Key) encode() (enc []byte, bounds [5]int) {
	e := encoder{buf: make([]byte, 0, k.encodedSizeHint())}
	e.buf = append(e.buf, keyMagic...)
	e.uvarint(FormatVersion)
	bounds[0] = len(e.buf)
	e.buf = k.appendDevice(e.buf)
	bounds[1] = len(e.buf)
	e.buf = k.appendImage(e.buf)
	bounds[2] = len(e.buf)
	e.buf = k.appendSpec(e.buf)
	bounds[3] = len(e.buf)
	e.buf = k.appendOptions(e.buf)
	bounds[4] = len(e.buf)
	return e.buf, bounds
}

// encodedSizeHint is an upper estimate of the encoding's length, so that
// encoding allocates once: every field's bytes plus a varint of at most
// binary.MaxVarintLen64 bytes for each field.
func (k *Key) encodedSizeHint() int {
	n := len(keyMagic) + len(k.Device.Platform) + len(k.Device.Name) + len(k.Device.Version) +
		len(k.Device.Driver) + len(k.Compiler.Name) + len(k.Compiler.Version) + len(k.Compiler.Library) +
		len(k.Compiler.Files) + len(k.Image.Format) + len(k.Image.Source) +
		len(k.Options.Compile) + len(k.Options.Link)
	fields := 20
	for _, h := range k.Image.Headers {
		n += len(h.Name) + len(h.Digest)
	}
	for _, s := range k.Spec {
		n += len(s.Value)
	}
	for _, v := range k.Options.Env {
		n += len(v.Name) + len(v.Value)
	}
	fields += 2*len(k.Image.Headers) + 2*len(k.Spec) + 2*len(k.Options.Env)
	return n + fields*binary.MaxVarintLen64
}

// PreparedGetter is implemented by stores that can look a key up from its
// prepared encoding and digests, so that a hit computes neither again. It
// must return what Get(ctx, p.Key()) would.
type PreparedGetter interface {
	GetPrepared(ctx context.Context, p *Prepared) (Entry, error)
}
