package disk

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

func TestOpenNoDir(t *testing.T) {
	if _, err := Open(Options{}); !errors.Is(err, ErrNoDir) {
		t.Fatalf("Open without a directory: %v, want ErrNoDir", err)
	}
	if _, err := Open(Options{Dir: "relative/cache"}); err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Fatalf("Open of a relative directory: %v", err)
	}
	if _, err := Open(Options{Dir: "/x", EvictTo: 1.5}); err == nil {
		t.Fatal("Open with EvictTo 1.5 succeeded")
	}
}

func TestOpenUnsafeMode(t *testing.T) {
	for _, mode := range []os.FileMode{0o770, 0o720, 0o702, 0o777, 0o777 | os.ModeSticky} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			os.Mkdir(dir, 0o700)
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
			_, err := Open(Options{Dir: dir})
			if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "run chmod") {
				t.Fatalf("Open: %v, want ErrUnsafeDir", err)
			}
			// The version directory is checked too.
			os.Chmod(dir, 0o700)
			os.Mkdir(filepath.Join(dir, "v2"), 0o700)
			os.Chmod(filepath.Join(dir, "v2"), mode)
			if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrUnsafeDir) {
				t.Fatalf("Open with an unsafe version directory: %v", err)
			}
		})
	}
	for _, mode := range []os.FileMode{0o700, 0o750, 0o755, 0o500} {
		dir := filepath.Join(t.TempDir(), "cache")
		os.MkdirAll(filepath.Join(dir, "v2"), 0o700)
		os.Chmod(dir, mode)
		if _, err := Open(Options{Dir: dir}); err != nil {
			t.Errorf("mode %v: %v", mode, err)
		}
	}
}

func TestOpenOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory away")
	}
	dir := filepath.Join(t.TempDir(), "cache")
	os.Mkdir(dir, 0o700)
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "owned by uid") {
		t.Fatalf("Open of another user's directory: %v", err)
	}
	// Shared mode trusts the members of the directory's group, which
	// this process (root, group root) is not.
	if _, err := Open(Options{Dir: dir, Shared: true}); !errors.Is(err, ErrUnsafeDir) {
		t.Fatalf("Open of another user's directory: %v", err)
	}
}

func TestOpenThroughSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o700)
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := openTest(t, Options{Dir: link})
	mustPut(t, s, 1, 10)
	checkGet(t, s, 1, 10)
}

func TestOpenNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	writeRaw(t, f, nil)
	if _, err := Open(Options{Dir: f}); err == nil {
		t.Fatal("Open of a file succeeded")
	}
}

// mountTmpfs mounts a fresh tmpfs with the given options, or skips.
func mountTmpfs(t *testing.T, opts string) string {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a file system")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "mode=0700,"+opts); err != nil {
		t.Skipf("cannot mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func TestReadOnlyFileSystem(t *testing.T) {
	dir := mountTmpfs(t, "size=4m")
	ctx := context.Background()
	s := openTest(t, Options{Dir: dir})
	mustPut(t, s, 1, 1000)
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount read-only: %v", err)
	}
	clock := newClock()
	clock.Advance(1000 * time.Hour) // so that a hit tries to refresh the access time
	s, err := Open(Options{Dir: dir, Now: clock.Now})
	if err != nil {
		t.Fatalf("Open of a read-only cache: %v", err)
	}
	checkGet(t, s, 1, 1000)
	if _, err := s.Get(ctx, testKey(2)); !errors.Is(err, kcache.ErrMiss) {
		t.Fatalf("Get of an absent key: %v", err)
	}
	if err := s.Put(ctx, testKey(2), kcache.Entry{Binary: []byte("x")}); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Put: %v, want EROFS", err)
	}
	unlock, err := s.Lock(ctx, testKey(2))
	if err == nil {
		t.Fatal("Lock on a read-only file system succeeded")
	}
	unlock()
	if n, err := s.Size(ctx); err != nil || n == 0 {
		t.Fatalf("Size: %d, %v", n, err)
	}
	if _, err := Open(Options{Dir: filepath.Join(dir, "new")}); err == nil {
		t.Fatal("Open of a cache that cannot be created succeeded")
	}
}

func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "size=256k")
	ctx := context.Background()
	s := openTest(t, Options{Dir: dir})
	mustPut(t, s, 1, 1000)
	err := s.Put(ctx, testKey(2), kcache.Entry{Binary: testBinary(2, 1<<20)})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Put of 1 MiB into 256 KiB: %v, want ENOSPC", err)
	}
	if isHit(t, s, 2, 1<<20) {
		t.Fatal("failed Put left an entry")
	}
	settle(t, s)
	if tmp := files(t, dir, tempPrefix+"*"); len(tmp) != 0 {
		t.Fatalf("failed Put left temporary files: %v", tmp)
	}
	checkGet(t, s, 1, 1000)
	mustPut(t, s, 3, 1000)
	checkGet(t, s, 3, 1000)
	r, err := s.Verify(ctx, false)
	if err != nil || r.Entries != 2 || r.Damaged+r.Incomplete != 0 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}
