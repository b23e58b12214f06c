package disk

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

func TestExportImport(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, Options{})
	b := openTest(t, Options{})
	mustPut(t, a, 1, 5000)
	blob, err := a.Export(ctx, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Import(ctx, blob); err != nil {
		t.Fatal(err)
	}
	checkGet(t, b, 1, 5000)
	e, _ := b.Get(ctx, testKey(1))
	if e.BuildTime != time.Millisecond {
		t.Errorf("BuildTime %v after import", e.BuildTime)
	}
	if _, err := a.Export(ctx, testKey(2)); !errors.Is(err, kcache.ErrMiss) {
		t.Fatalf("Export of absent key: %v", err)
	}
	// Any damage to the blob is refused, and nothing is stored.
	c := openTest(t, Options{})
	for _, i := range []int{0, len(blobMagic) + 3, len(blob) / 2, len(blob) - 1} {
		bad := bytes.Clone(blob)
		bad[i] ^= 0x10
		if err := c.Import(ctx, bad); !errors.Is(err, kcache.ErrMiss) {
			t.Fatalf("byte %d damaged: Import = %v", i, err)
		}
	}
	if err := c.Import(ctx, blob[:len(blob)-1]); err == nil {
		t.Fatal("truncated blob imported")
	}
	if n, _ := walkSum(t, c); n != 0 {
		t.Fatalf("%d entries stored from damaged blobs", n)
	}
}

func TestBlobRoundTrip(t *testing.T) {
	rec, bin := testRecord(3, 777)
	data, err := (&Blob{Record: rec, Binary: bin}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBlob(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Binary, bin) || !got.Record.Key.Equal(&rec.Key) || got.Record.BuildTime != rec.BuildTime {
		t.Fatal("round trip changed the blob")
	}
}

func FuzzDecodeBlob(f *testing.F) {
	for i, n := range []int{0, 1, 300} {
		rec, bin := testRecord(i, n)
		data, _ := (&Blob{Record: rec, Binary: bin}).MarshalBinary()
		f.Add(data)
	}
	f.Add([]byte(blobMagic + "\x01\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBlob(data)
		if err != nil {
			if !errors.Is(err, kcache.ErrMiss) {
				t.Fatalf("error is not a miss: %v", err)
			}
			return
		}
		out, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeBlob(out)
		if err != nil {
			t.Fatalf("re-encoded blob does not decode: %v", err)
		}
		if !bytes.Equal(again.Binary, b.Binary) || !again.Record.Key.Equal(&b.Record.Key) ||
			again.Record.BuildTime != b.Record.BuildTime || !again.Record.Created.Equal(b.Record.Created) {
			t.Fatal("round trip changed the blob")
		}
	})
}
