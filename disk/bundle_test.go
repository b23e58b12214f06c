package disk

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/klauspost/compress/zstd"
)

// exportAll returns a bundle of every entry of s.
func exportAll(t testing.TB, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.ExportBundle(context.Background(), &buf, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBundleRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{})
	for i := range 10 {
		mustPut(t, src, i, 500+i)
	}
	var buf bytes.Buffer
	rep, err := src.ExportBundle(ctx, &buf, func(in *Info) bool { return keyIndex(in.Key) < 8 })
	if err != nil || rep.Entries != 8 || rep.Skipped != 0 {
		t.Fatalf("export: %+v, %v", rep, err)
	}
	dst := openTest(t, Options{})
	in, err := dst.ImportBundle(ctx, bytes.NewReader(buf.Bytes()), func(k *kcache.Key) bool { return keyIndex(k) != 3 })
	if err != nil || in.Entries != 8 || in.Imported != 7 || in.Skipped != 1 || in.Bytes <= 0 {
		t.Fatalf("import: %+v, %v", in, err)
	}
	for i := range 10 {
		if hit := isHit(t, dst, i, 500+i); hit != (i < 8 && i != 3) {
			t.Errorf("entry %d: hit %v", i, hit)
		}
	}
	checkGet(t, dst, 5, 505)
	// The build time travels with the entry: a hit on the new machine
	// reports the time it saved.
	if e, _ := dst.Get(ctx, testKey(5)); e.BuildTime != 5*time.Millisecond {
		t.Errorf("build time %v after import", e.BuildTime)
	}
	if total, _ := dst.Size(ctx); total != walkTotal(t, dst) {
		t.Errorf("size file %d, walk %d", total, walkTotal(t, dst))
	}
	if names := files(t, dst.Dir(), ".import-*"); len(names) != 0 {
		t.Errorf("import left %v", names)
	}
}

func walkTotal(t testing.TB, s *Store) int64 {
	_, n := walkSum(t, s)
	return n
}

// bundleOf builds a bundle from tar members, for damaged-bundle cases.
func bundleOf(t testing.TB, members ...[2]string) []byte {
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range members {
		if err := writeTarFile(tw, m[0], []byte(m[1]), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func blobOf(t testing.TB, i int) (name string, blob string) {
	s := openTest(t, Options{})
	mustPut(t, s, i, 100)
	b, err := s.Export(context.Background(), testKey(i))
	if err != nil {
		t.Fatal(err)
	}
	return bundleDir + testKey(i).Digest().String() + blobSuffix, string(b)
}

func TestBundleDamageRefused(t *testing.T) {
	src := openTest(t, Options{})
	for i := range 4 {
		mustPut(t, src, i, 300)
	}
	good := exportAll(t, src)
	flipped := bytes.Clone(good)
	flipped[len(flipped)*2/3] ^= 0x10
	n1, b1 := blobOf(t, 1)
	n2, b2 := blobOf(t, 2)
	badBin := []byte(b1)
	badBin[len(badBin)-1] ^= 1
	manifest := [2]string{bundleManifest, bundleHeader}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"not zstd", []byte("hello, world")},
		{"truncated", good[:len(good)-40]},
		{"flipped byte", flipped},
		{"no manifest", bundleOf(t, [2]string{n1, b1})},
		{"other version", bundleOf(t, [2]string{bundleManifest, "kcache-bundle 2\n"}, [2]string{n1, b1})},
		{"wrong name", bundleOf(t, manifest, [2]string{n1, b1}, [2]string{n1, b2})},
		{"twice", bundleOf(t, manifest, [2]string{n1, b1}, [2]string{n1, b1})},
		{"stray file", bundleOf(t, manifest, [2]string{n2, b2}, [2]string{"entries/../../evil", b1})},
		{"bad binary", bundleOf(t, manifest, [2]string{n2, b2}, [2]string{n1, string(badBin)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := openTest(t, Options{})
			_, err := dst.ImportBundle(context.Background(), bytes.NewReader(tt.data), nil)
			if !errors.Is(err, ErrBadBundle) {
				t.Fatalf("import = %v, want ErrBadBundle", err)
			}
			// Nothing half-imported: the good entry before the damage is
			// not in the cache either.
			if n, _ := walkSum(t, dst); n != 0 {
				t.Errorf("%d entries imported from a damaged bundle", n)
			}
		})
	}
}

func FuzzReadBundle(f *testing.F) {
	src := openTest(f, Options{})
	for i := range 2 {
		mustPut(f, src, i, 64)
	}
	good := exportAll(f, src)
	f.Add(good)
	f.Add(good[:len(good)/2])
	n1, b1 := blobOf(f, 1)
	f.Add(bundleOf(f, [2]string{bundleManifest, bundleHeader}, [2]string{n1, b1}))
	f.Add(bundleOf(f, [2]string{bundleManifest, bundleHeader}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		err := ReadBundle(context.Background(), bytes.NewReader(data), func(b *Blob, raw []byte) error {
			// Whatever it hands over has been verified.
			again, err := DecodeBlob(raw)
			if err != nil || !again.Record.Key.Equal(&b.Record.Key) {
				t.Fatalf("ReadBundle passed an unverifiable blob: %v", err)
			}
			n++
			return nil
		})
		if err != nil && !errors.Is(err, ErrBadBundle) {
			t.Fatalf("error does not wrap ErrBadBundle: %v", err)
		}
	})
}
