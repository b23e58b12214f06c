package disk

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kcache/kcache"
)

// TestAppendLeafIsLayout pins the leaf path a lookup builds on its stack
// to the layout's: the device, fan, image, spec and options levels, each
// named by its digest's first digestHexLen hex digits, and the slot's
// record name after it.
func TestAppendLeafIsLayout(t *testing.T) {
	for i := range 50 {
		d := kcache.Digests{
			Device:  sha256.Sum256([]byte("device" + strconv.Itoa(i))),
			Image:   sha256.Sum256([]byte("image" + strconv.Itoa(i))),
			Spec:    sha256.Sum256([]byte("spec" + strconv.Itoa(i))),
			Options: sha256.Sum256([]byte("options" + strconv.Itoa(i))),
		}
		dir := "/cache/root/v2"
		image := shortHex(d.Image)
		want := dir + "/" + shortHex(d.Device) + "/" + image[:fanHexLen] + "/" + image + "/" +
			shortHex(d.Spec) + "/" + shortHex(d.Options)
		if got := leafIn(dir, d); got != want {
			t.Fatalf("leafIn = %q, want %q", got, want)
		}
		var stack [8]byte // too small: the path grows onto the heap, as for a long root
		leaf := appendLeaf(stack[:0], dir, d)
		if string(leaf) != want || len(leaf)-len(dir) != leafPathLen {
			t.Fatalf("appendLeaf = %q (%d below the root), want %q", leaf, len(leaf)-len(dir), want)
		}
		for n := range maxSlots {
			pz := appendSlotZ(leaf, n)
			if string(pz) != srcPath(want, n)+"\x00" {
				t.Fatalf("slot %d: %q, want %q", n, pz, srcPath(want, n)+"\x00")
			}
			if string(leaf) != want {
				t.Fatalf("slot %d changed the leaf: %q", n, leaf)
			}
		}
	}
}

// TestOpenReadZ checks the open of a NUL-terminated path: it opens what
// unix.Open opens, reports a missing file as fs.ErrNotExist, and refuses a
// path without its terminator or with a NUL inside, which the kernel
// would cut short.
func TestOpenReadZ(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.src")
	if err := os.WriteFile(path, []byte("entry"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := openReadZ(unix.AT_FDCWD, append([]byte(path), 0))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || string(buf[:n]) != "entry" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if _, err := openReadZ(unix.AT_FDCWD, append([]byte(filepath.Join(dir, "1.src")), 0)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
	for _, bad := range [][]byte{[]byte(path), append([]byte(path+"\x00x"), 0), nil} {
		if fd, err := openReadZ(unix.AT_FDCWD, bad); err == nil {
			unix.Close(fd)
			t.Fatalf("openReadZ(%q) opened a file", bad)
		}
	}
}
