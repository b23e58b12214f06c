package compileserver

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"
)

func sampleRequest() *Request {
	return &Request{Key: [32]byte{1, 2, 3}, Compiler: "nvrtc 13.0", Env: []string{"NVRTC_X=1"}, WorkDir: "/w",
		Name: "k.cu", Code: []byte("__global__ void k() {}"), Options: []string{"-arch=sm_90", "-I", "inc"},
		Headers:         []Header{{Name: "a.h", Content: []byte("#pragma once")}, {Name: "empty.h"}},
		NameExpressions: []string{"k<1>"}, Format: "cubin",
		Files:   []File{{Path: "/inc/b.h", Digest: [32]byte{9}}, {Path: "/inc/c.h", Kind: FileAbsent}, {Path: "Nov 24 2026", Kind: FileDay}},
		MaxWait: time.Second}
}

// normalize makes empty and nil slices compare equal, as the wire does
// not tell them apart.
func normalize(r *Request) *Request {
	c := *r
	for i := range c.Headers {
		if len(c.Headers[i].Content) == 0 {
			c.Headers[i].Content = nil
		}
	}
	if len(c.Code) == 0 {
		c.Code = nil
	}
	return &c
}

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []*Request{sampleRequest(), {}} {
		got, err := decodeRequest(encodeRequest(r))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(r)) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
		}
	}
}

func TestReplyRoundTrip(t *testing.T) {
	r := &Reply{Status: StatusCompileError, Message: "m", Code: []byte{0, 1}, Lowered: []string{"_Z1kILi1EEvv"},
		Log: "error", PCH: PCHUsed, Compile: 3 * time.Millisecond}
	got, err := decodeReply(encodeReply(r))
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
}

// TestFrameRejects: damaged frames are ErrProtocol, never a huge
// allocation or a panic.
func TestFrameRejects(t *testing.T) {
	var good bytes.Buffer
	if err := writeFrame(&good, msgCompile, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	damage := func(i int, b byte) []byte {
		p := bytes.Clone(good.Bytes())
		p[i] = b
		return p
	}
	cases := map[string][]byte{
		"magic":     damage(0, 'X'),
		"version":   damage(4, frameVersion+1),
		"reserved":  damage(6, 1),
		"too long":  damage(8, 0xff),
		"truncated": good.Bytes()[:good.Len()-1],
	}
	for name, p := range cases {
		_, _, err := readFrame(bytes.NewReader(p))
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", name, err)
		}
	}
	typ, payload, err := readFrame(bytes.NewReader(good.Bytes()))
	if err != nil || typ != msgCompile || string(payload) != "payload" {
		t.Errorf("good frame: %d %q %v", typ, payload, err)
	}
}

// TestDecodeRejects: lengths beyond the payload, unknown enums and
// trailing bytes are errors.
func TestDecodeRejects(t *testing.T) {
	enc := encodeRequest(sampleRequest())
	for i := range enc {
		if _, err := decodeRequest(enc[:i]); err == nil {
			t.Fatalf("request cut at %d of %d decoded", i, len(enc))
		}
	}
	if _, err := decodeRequest(append(bytes.Clone(enc), 0)); err == nil {
		t.Error("trailing byte accepted")
	}
	if _, err := decodeReply([]byte{byte(StatusFailed) + 1, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("unknown status accepted")
	}
	huge := (&encoder{})
	huge.uint(1 << 40)
	if _, err := decodeRequest(huge.b); err == nil {
		t.Error("digest length 2^40 accepted")
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add(encodeRequest(sampleRequest()))
	f.Add(encodeRequest(&Request{}))
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := decodeRequest(p)
		if err != nil {
			return
		}
		// What decodes encodes back to a payload that decodes the same.
		again, err := decodeRequest(encodeRequest(r))
		if err != nil || !reflect.DeepEqual(normalize(again), normalize(r)) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, again, r)
		}
	})
}

func FuzzDecodeReply(f *testing.F) {
	f.Add(encodeReply(&Reply{Status: StatusOK, Code: []byte{1}, Lowered: []string{"x"}}))
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := decodeReply(p)
		if err != nil {
			return
		}
		if _, err := decodeReply(encodeReply(r)); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	writeFrame(&b, msgCompile, encodeRequest(sampleRequest()))
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, p []byte) {
		typ, payload, err := readFrame(bytes.NewReader(p))
		if err != nil {
			return
		}
		if len(payload) > len(p) {
			t.Fatalf("payload of %d bytes from %d", len(payload), len(p))
		}
		if typ == msgCompile {
			decodeRequest(payload)
		}
	})
}

func FuzzDecodeFiles(f *testing.F) {
	f.Add(encodeFiles([32]byte{1}, sampleRequest().Files))
	f.Add(encodeFiles([32]byte{}, nil))
	f.Fuzz(func(t *testing.T, p []byte) {
		key, files, err := decodeFiles(p)
		if err != nil {
			return
		}
		k2, f2, err := decodeFiles(encodeFiles(key, files))
		if err != nil || k2 != key || len(f2) != len(files) || (len(files) > 0 && !reflect.DeepEqual(f2, files)) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, f2, files)
		}
	})
}

func FuzzDecodeWork(f *testing.F) {
	f.Add(encodeWork(sampleRequest(), true))
	f.Add(encodeWork(&Request{FilesLater: true}, false))
	f.Fuzz(func(t *testing.T, p []byte) {
		pch, r, err := decodeWork(p)
		if err != nil {
			return
		}
		pch2, again, err := decodeWork(encodeWork(r, pch))
		if err != nil || pch2 != pch || !reflect.DeepEqual(normalize(again), normalize(r)) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, again, r)
		}
	})
}
