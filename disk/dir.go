package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// prepareDir creates the cache root and the version directory if needed
// and checks that both are safe to read: owned by this user and not
// writable by group or others. An existing directory is never chmod'ed:
// the user set its mode, and quietly loosening or tightening it would hide
// the problem. A version directory that is missing and cannot be created
// is an error: such a cache could hold nothing.
func prepareDir(root, dir string) error {
	for _, d := range [...]string{root, dir} {
		if err := os.MkdirAll(d, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("disk: cache directory: %w", err)
		}
		if err := checkDir(d); err != nil {
			return err
		}
	}
	return nil
}

// checkDir reports why dir is not safe to read cached binaries from. It
// follows a symbolic link at dir (a cache moved to another disk is often
// linked into place) and judges the directory it names.
func checkDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("disk: cache directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("disk: cache directory %s is not a directory", dir)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err == nil && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d)", ErrUnsafeDir, dir, st.Uid, os.Geteuid())
	}
	if perm := info.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o); run chmod go-w on it", ErrUnsafeDir, dir, perm)
	}
	return nil
}
