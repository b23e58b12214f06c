package compileserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// SocketPath returns where the server of this user listens:
// $XDG_RUNTIME_DIR/kcache/serve.sock when the runtime directory is set
// (systemd makes it per user, mode 0700, and removes it at logout), else
// kcache-UID/serve.sock in the temporary directory. The directory is
// created mode 0700 if missing, and refused if another user owns it or
// others may enter it: a socket there could be another user's server.
func SocketPath() (string, error) {
	dir := filepath.Join(os.TempDir(), "kcache-"+strconv.Itoa(os.Getuid()))
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		dir = filepath.Join(rt, "kcache")
	}
	if err := privateDir(dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, "serve.sock"), nil
}

// privateDir makes dir, or checks it is a directory (not a link) of this
// user that no one else may enter.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("compileserver: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("compileserver: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("compileserver: %s is not a directory", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("compileserver: %s belongs to another user", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("compileserver: %s is open to other users (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}

// peerUID returns the user id of the process at the other end of c, as
// the kernel recorded it when it connected (SO_PEERCRED): it cannot be
// forged by the peer.
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, fmt.Errorf("compileserver: not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if serr != nil {
		return -1, fmt.Errorf("compileserver: SO_PEERCRED: %w", serr)
	}
	return int(cred.Uid), nil
}
