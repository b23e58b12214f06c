package cuda

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/kcache/kcache"
)

func sampleImages() []*image {
	return []*image{
		{format: FormatCUBIN, code: []byte("\x7fELF cubin bytes")},
		{format: FormatPTX, code: []byte(".version 9.0\n.target sm_90\n"), lowered: map[string]string{"add<int>": "_Z3addIiEvPT_", "add<float>": "_Z3addIfEvPT_"}},
	}
}

func TestImageRoundTrip(t *testing.T) {
	for _, im := range sampleImages() {
		b := im.encode()
		got, err := decodeImage(b)
		if err != nil {
			t.Fatalf("decode(%s): %v", im.format, err)
		}
		if got.format != im.format || !bytes.Equal(got.code, im.code) || !reflect.DeepEqual(got.lowered, im.lowered) {
			t.Errorf("round trip of %+v gave %+v", im, got)
		}
		if !bytes.Equal(got.encode(), b) {
			t.Errorf("re-encoding %s differs", im.format)
		}
	}
}

func TestImageDecodeRejects(t *testing.T) {
	good := sampleImages()[1].encode()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"foreign", []byte("\x7fELF\x02\x01\x01")},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte{}, good...), 0)},
		{"version", append([]byte(imageMagic), 9, 1, 0, 1, 'x')},
		{"format", append([]byte(imageMagic), imageVersion, 7, 0, 1, 'x')},
		{"no code", append([]byte(imageMagic), imageVersion, 1, 0, 0)},
		{"huge count", append([]byte(imageMagic), imageVersion, 1, 0xff, 0xff, 0xff, 0x0f)},
		{"duplicate", append([]byte(imageMagic), imageVersion, 1, 2, 1, 'a', 1, 'b', 1, 'a', 1, 'c', 1, 'x')},
	} {
		_, err := decodeImage(tc.b)
		if err == nil {
			t.Errorf("%s: decoded", tc.name)
			continue
		}
		if !errors.Is(err, kcache.ErrMiss) {
			t.Errorf("%s: %v is not a miss", tc.name, err)
		}
	}
}

func FuzzDecodeImage(f *testing.F) {
	for _, im := range sampleImages() {
		f.Add(im.encode())
	}
	f.Add([]byte(imageMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		im, err := decodeImage(b)
		if err != nil {
			if !errors.Is(err, kcache.ErrMiss) {
				t.Fatalf("error %v is not a miss", err)
			}
			return
		}
		// Whatever decodes re-encodes to the same image.
		again, err := decodeImage(im.encode())
		if err != nil || again.format != im.format || !bytes.Equal(again.code, im.code) || !reflect.DeepEqual(again.lowered, im.lowered) {
			t.Fatalf("re-decoding %+v gave %+v, %v", im, again, err)
		}
	})
}
