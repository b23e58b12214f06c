package disk

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWalk(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now})
	mustPut(t, s, 1, 100)
	clock.Advance(time.Hour)
	mustPut(t, s, 2, 200)
	var infos []Info
	if err := s.Walk(context.Background(), func(in Info) error { infos = append(infos, in); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 {
		t.Fatalf("%d infos", len(infos))
	}
	for _, in := range infos {
		i := keyIndex(in.Key)
		if !in.OK() || in.BinarySize != int64(i*100) || in.Digests != testKey(i).Digests() ||
			in.BuildTime != time.Duration(i)*time.Millisecond || in.Slot != 0 {
			t.Errorf("info %+v", in)
		}
		if in.BinaryPath() != in.RecordPath() || in.Size != fileSize(in.RecordPath()) {
			t.Errorf("size %d", in.Size)
		}
		want := clock.Now().Add(time.Duration(i-2) * time.Hour)
		if !in.AccessTime.Equal(want) || !in.Created.Equal(want) {
			t.Errorf("key %d: access %v, created %v, want %v", i, in.AccessTime, in.Created, want)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := s.Walk(context.Background(), func(Info) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("Walk did not stop: %v after %d", err, n)
	}
}

func TestVerifyRepair(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	for i := range 6 {
		if i == 2 {
			putLegacy(t, s, i, 1000) // a record and a .bin, as before entry version 2
		} else {
			mustPut(t, s, i, 1000)
		}
	}
	leaf := func(i int) string { return s.leafDir(s.digests(testKey(i))) }
	flip(t, srcPath(leaf(0), 0), -1)                         // damaged binary: found only by a deep check
	flip(t, srcPath(leaf(1), 0), 20)                         // damaged record
	os.Remove(srcPath(leaf(2), 0))                           // binary without record: incomplete
	writeRaw(t, filepath.Join(leaf(3), tempPrefix+"x"), nil) // a temporary file: incomplete
	// A sound record in the wrong place.
	other := s.leafDir(s.digests(testKey(99)))
	os.MkdirAll(other, 0o700)
	data, _ := os.ReadFile(srcPath(leaf(4), 0))
	writeRaw(t, srcPath(other, 0), data)

	r, err := s.Verify(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Entries != 3 || r.Damaged != 3 || r.Incomplete != 2 || r.Removed != 0 || len(r.Problems) != 5 {
		t.Fatalf("Verify = %+v", r)
	}
	for _, p := range r.Problems {
		if !errors.Is(p.Err, ErrDamaged) && !errors.Is(p.Err, ErrIncomplete) {
			t.Errorf("problem %s: %v", p.Path, p.Err)
		}
	}
	r, err = s.Verify(ctx, true)
	if err != nil || r.Removed != 5 {
		t.Fatalf("repair: %+v, %v", r, err)
	}
	r, err = s.Verify(ctx, false)
	if err != nil || r.Entries != 3 || r.Damaged+r.Incomplete != 0 {
		t.Fatalf("after repair: %+v, %v", r, err)
	}
	if size, _ := s.Size(ctx); size != r.Bytes {
		t.Fatalf("size %d, verified bytes %d", size, r.Bytes)
	}
	for _, i := range []int{3, 4, 5} {
		checkGet(t, s, i, 1000)
	}
}

func TestClear(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	mustPut(t, s, 1, 100)
	// An older format version's tree, and a Clear interrupted before.
	os.MkdirAll(filepath.Join(s.root, "v0", "x"), 0o700)
	os.MkdirAll(filepath.Join(s.root, trashPrefix+"old", "y"), 0o700)
	writeRaw(t, filepath.Join(s.root, "README"), []byte("not ours"))
	if err := s.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ := readNames(s.root)
	if len(names) != 2 || names[0] != "README" || names[1] != "v2" {
		t.Fatalf("after Clear: %v", names)
	}
	if isHit(t, s, 1, 100) {
		t.Fatal("hit after Clear")
	}
	if size, err := s.Size(ctx); err != nil || size != 0 {
		t.Fatalf("Size = %d, %v", size, err)
	}
	mustPut(t, s, 1, 100)
	checkGet(t, s, 1, 100)
}
