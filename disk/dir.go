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
func prepareDir(root, dir string, m modes) error {
	for _, d := range [...]string{root, dir} {
		if err := m.mkdirAll(d); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("disk: cache directory: %w", err)
		}
		if err := checkDir(d, m.shared()); err != nil {
			return err
		}
	}
	return nil
}

// checkDir reports why dir is not safe to read cached binaries from. It
// follows a symbolic link at dir (a cache moved to another disk is often
// linked into place) and judges the directory it names. A binary in the
// cache is code its user will run, so only those who could run code as
// the user anyway may write there: the user and root, and in shared mode
// the members of the directory's group, if the user is one of them.
func checkDir(dir string, shared bool) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("disk: cache directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("disk: cache directory %s is not a directory", dir)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("disk: cache directory: %w", err)
	}
	perm := info.Mode().Perm()
	inGroup := memberOf(st.Gid)
	switch owner := int(st.Uid); {
	case perm&0o002 != 0:
		return fmt.Errorf("%w: %s is writable by others (mode %04o); run chmod o-w on it", ErrUnsafeDir, dir, perm)
	case perm&0o020 != 0 && !shared:
		return fmt.Errorf("%w: %s is writable by its group (mode %04o); run chmod g-w on it, or share the cache with the group (KCACHE_SHARED=1)", ErrUnsafeDir, dir, perm)
	case perm&0o020 != 0 && !inGroup:
		return fmt.Errorf("%w: %s is writable by group %d, which this user is not in", ErrUnsafeDir, dir, st.Gid)
	case owner == os.Geteuid() || owner == 0:
	case shared && inGroup:
	case shared:
		return fmt.Errorf("%w: %s is owned by uid %d and group %d; this user (uid %d) is not in that group", ErrUnsafeDir, dir, st.Uid, st.Gid, os.Geteuid())
	default:
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d) or root; share it with a group (KCACHE_SHARED=1) or take it over", ErrUnsafeDir, dir, st.Uid, os.Geteuid())
	}
	return nil
}

// memberOf reports whether this process is in group gid.
func memberOf(gid uint32) bool {
	if int(gid) == os.Getegid() {
		return true
	}
	groups, err := os.Getgroups()
	if err != nil {
		return false
	}
	for _, g := range groups {
		if g == int(gid) {
			return true
		}
	}
	return false
}
