package layerstore

import (
	"bytes"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []Record{
		{Log: "", Binary: []byte{1}},
		{Log: "warning: unused variable\n", Binary: bytes.Repeat([]byte{7}, 4096)},
	} {
		got, err := DecodeRecord(r.Encode())
		if err != nil || got.Log != r.Log || !bytes.Equal(got.Binary, r.Binary) {
			t.Errorf("decode(encode(%q)) = %q, %v", r.Log, got.Log, err)
		}
	}
}

func TestRecordRejectsDamage(t *testing.T) {
	good := Record{Log: "log", Binary: []byte("binary")}.Encode()
	for name, b := range map[string][]byte{
		"empty":        nil,
		"foreign":      []byte("\x7fELF binary of the library"),
		"no binary":    Record{Log: "log"}.Encode(),
		"truncated":    good[:len(recordMagic)+2],
		"huge log len": append(append([]byte{}, recordMagic...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	} {
		if _, err := DecodeRecord(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(Record{Log: "warning", Binary: []byte("bin")}.Encode())
	f.Add(Record{Binary: []byte{0}}.Encode())
	f.Add([]byte("kcache-layer-1\n\x05ab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		if len(r.Binary) == 0 {
			t.Fatal("decoded a record without a binary")
		}
		again, err := DecodeRecord(r.Encode())
		if err != nil || again.Log != r.Log || !bytes.Equal(again.Binary, r.Binary) {
			t.Fatalf("re-encoding changed the record: %v", err)
		}
	})
}
