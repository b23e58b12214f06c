package kcache

import (
	"encoding/binary"
	"fmt"
)

// keyMagic opens every encoded key, so a foreign or misplaced file is
// rejected on its first bytes.
const keyMagic = "KCKEY"

// MarshalBinary returns the canonical encoding of k: the magic, the format
// version, then each component in a fixed order, every variable-length field
// prefixed by its length. Set-like fields are sorted first, so equal keys
// have equal encodings. The encoding is pinned by golden tests.
func (k *Key) MarshalBinary() ([]byte, error) {
	enc, _ := k.canonical().encode()
	return enc, nil
}

// UnmarshalBinary decodes a key encoded by MarshalBinary. Any malformed,
// truncated or foreign input, or trailing bytes, give a *DecodeError.
func (k *Key) UnmarshalBinary(data []byte) error {
	d := decoder{buf: data}
	if len(data) < len(keyMagic) || string(data[:len(keyMagic)]) != keyMagic {
		return &DecodeError{What: "key", Reason: "bad magic"}
	}
	d.buf = d.buf[len(keyMagic):]
	if v := d.uvarint(); d.err == nil && v != FormatVersion {
		return &DecodeError{What: "key", Reason: fmt.Sprintf("format version %d, want %d", v, FormatVersion)}
	}
	var out Key
	out.Device = Device{Platform: d.str(), Name: d.str(), Version: d.str(), Driver: d.str()}
	out.Compiler = Compiler{Name: d.str(), Version: d.str(), Library: d.str(), LibrarySize: d.varint(), LibraryTime: d.varint()}
	out.Compiler.Files = d.digest("bad compiler files digest")
	out.Image.Format = d.str()
	out.Image.Source = d.bytes()
	for n := d.count(); n > 0 && d.err == nil; n-- {
		h := Header{Name: d.str(), Digest: d.digest("bad header digest")}
		out.Image.Headers = append(out.Image.Headers, h)
	}
	for n := d.count(); n > 0 && d.err == nil; n-- {
		id := d.uvarint()
		if id > 1<<32-1 {
			d.fail("spec constant id out of range")
		}
		out.Spec = append(out.Spec, SpecConstant{ID: uint32(id), Value: d.bytes()})
	}
	out.Options.Compile = d.str()
	out.Options.Link = d.str()
	for n := d.count(); n > 0 && d.err == nil; n-- {
		out.Options.Env = append(out.Options.Env, EnvVar{Name: d.str(), Value: d.str()})
	}
	if d.err == nil && len(d.buf) != 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.buf)))
	}
	if d.err != nil {
		return d.err
	}
	*k = out
	return nil
}

func (k *Key) appendDevice(b []byte) []byte {
	e := encoder{buf: b}
	e.str(k.Device.Platform)
	e.str(k.Device.Name)
	e.str(k.Device.Version)
	e.str(k.Device.Driver)
	e.str(k.Compiler.Name)
	e.str(k.Compiler.Version)
	e.str(k.Compiler.Library)
	e.varint(k.Compiler.LibrarySize)
	e.varint(k.Compiler.LibraryTime)
	e.bytes(k.Compiler.Files[:])
	return e.buf
}

func (k *Key) appendImage(b []byte) []byte {
	e := encoder{buf: b}
	e.str(k.Image.Format)
	e.bytes(k.Image.Source)
	e.uvarint(uint64(len(k.Image.Headers)))
	for _, h := range k.Image.Headers {
		e.str(h.Name)
		e.bytes(h.Digest[:])
	}
	return e.buf
}

func (k *Key) appendSpec(b []byte) []byte {
	e := encoder{buf: b}
	e.uvarint(uint64(len(k.Spec)))
	for _, s := range k.Spec {
		e.uvarint(uint64(s.ID))
		e.bytes(s.Value)
	}
	return e.buf
}

func (k *Key) appendOptions(b []byte) []byte {
	e := encoder{buf: b}
	e.str(k.Options.Compile)
	e.str(k.Options.Link)
	e.uvarint(uint64(len(k.Options.Env)))
	for _, v := range k.Options.Env {
		e.str(v.Name)
		e.str(v.Value)
	}
	return e.buf
}

// encoder appends length-prefixed fields to buf.
type encoder struct{ buf []byte }

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }
func (e *encoder) bytes(b []byte)   { e.uvarint(uint64(len(b))); e.buf = append(e.buf, b...) }

// decoder reads what encoder wrote. The first failure sticks in err and every
// later read returns a zero value, so callers check err once at the end.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(reason string) {
	if d.err == nil {
		d.err = &DecodeError{What: "key", Reason: reason}
	}
	d.buf = nil
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// count reads an element count. Every element takes at least one byte, so a
// count larger than what is left is corrupt; checking it here keeps a
// damaged file from asking for a huge allocation.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.buf)) {
		d.fail("count exceeds input")
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)) {
		d.fail("length exceeds input")
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) str() string { return string(d.bytes()) }

// digest reads a Digest written by encoder.bytes; any other length fails
// with reason.
func (d *decoder) digest(reason string) Digest {
	var out Digest
	if b := d.bytes(); len(b) == len(out) {
		copy(out[:], b)
	} else {
		d.fail(reason)
	}
	return out
}
