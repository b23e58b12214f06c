package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestDecoder(t *testing.T) {
	var b []byte
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendVarint(b, -7)
	b = append(b, 1, 2, 3)
	b = binary.AppendUvarint(b, 2)
	b = append(b, 'h', 'i')
	d := NewDecoder(b)
	if u, v, f, s := d.Uvarint(), d.Varint(), d.Fixed(3), d.Bytes(); !d.OK || u != 300 || v != -7 || !bytes.Equal(f, []byte{1, 2, 3}) || string(s) != "hi" || len(d.Buf) != 0 {
		t.Fatalf("read %d %d %v %q ok=%v rest=%v", u, v, f, s, d.OK, d.Buf)
	}
	// A count its items could not fit in the rest fails.
	d = NewDecoder([]byte{3, 'a', 'b', 'c', 'd', 'e'})
	if n := d.Count(2); n != 0 || d.OK {
		t.Fatalf("3 items of 2 bytes in 5: count %d ok=%v", n, d.OK)
	}
	d = NewDecoder([]byte{2, 'a', 'b', 'c', 'd'})
	if n := d.Count(2); n != 2 || !d.OK {
		t.Fatalf("2 items of 2 bytes in 4: count %d ok=%v", n, d.OK)
	}
	// A failure sticks: every later read is zero.
	d = NewDecoder([]byte{5, 'a'})
	if s := d.Bytes(); s != nil || d.OK {
		t.Fatalf("a length past the end: %q ok=%v", s, d.OK)
	}
	if d.Uvarint() != 0 || d.Fixed(0) != nil || d.OK {
		t.Fatal("reads after a failure")
	}
}

// FuzzDecoder reads arbitrary bytes as every field kind: it must never
// panic, and a failure must stick.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{0x80, 0x80, 0x80, 1, 3, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(b)
		for d.OK && len(d.Buf) > 0 {
			switch len(d.Buf) % 4 {
			case 0:
				d.Uvarint()
			case 1:
				d.Varint()
			case 2:
				d.Bytes()
			default:
				d.Fixed(1 + int(d.Buf[0])%8) // at least one byte: every step reads
			}
		}
		if !d.OK && (d.Buf != nil || d.Uvarint() != 0) {
			t.Fatal("a failed decoder kept reading")
		}
	})
}
