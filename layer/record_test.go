package main

import (
	"bytes"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []record{
		{log: "", binary: []byte{1}},
		{log: "warning: unused variable\n", binary: bytes.Repeat([]byte{7}, 4096)},
	} {
		got, err := decodeRecord(r.encode())
		if err != nil || got.log != r.log || !bytes.Equal(got.binary, r.binary) {
			t.Errorf("decode(encode(%q)) = %q, %v", r.log, got.log, err)
		}
	}
}

func TestRecordRejectsDamage(t *testing.T) {
	good := record{log: "log", binary: []byte("binary")}.encode()
	for name, b := range map[string][]byte{
		"empty":        nil,
		"foreign":      []byte("\x7fELF binary of the library"),
		"no binary":    record{log: "log"}.encode(),
		"truncated":    good[:len(recordMagic)+2],
		"huge log len": append(append([]byte{}, recordMagic...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	} {
		if _, err := decodeRecord(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(record{log: "warning", binary: []byte("bin")}.encode())
	f.Add(record{binary: []byte{0}}.encode())
	f.Add([]byte("kcache-layer-1\n\x05ab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		if len(r.binary) == 0 {
			t.Fatal("decoded a record without a binary")
		}
		again, err := decodeRecord(r.encode())
		if err != nil || again.log != r.log || !bytes.Equal(again.binary, r.binary) {
			t.Fatalf("re-encoding changed the record: %v", err)
		}
	})
}
