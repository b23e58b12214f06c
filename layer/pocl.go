package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// PoCL's variables, which the layer reads and sets for the process.
const (
	envPoCLKernelCache = "POCL_KERNEL_CACHE"
	envPoCLCacheDir    = "POCL_CACHE_DIR"
)

// privatePoCLDir gives the process a PoCL cache directory of its own when
// PoCL's kernel cache is off (POCL_KERNEL_CACHE=0), and returns it ("" when
// it sets none). With its cache off, PoCL still writes each program's
// files, in a directory of its cache directory named after the program's
// hash: processes that load the same binary at once, as every process
// does through the layer on a warm start, then remove or overwrite each
// other's files and abort ("Final linking of kernel k failed"; 2 to 3 of
// 24 pyopencl processes, four at a time). A directory per process keeps
// them apart. The setting must be made before PoCL reads it, at its first
// device query; the ICD loader initialises its layers before that.
//
// The directory is not removed at exit, when PoCL's threads may still
// write in it: a later process removes it once its owner is gone.
func privatePoCLDir(getenv func(string) string, setenv func(string, string) error) (string, error) {
	if getenv(envPoCLKernelCache) != "0" {
		return "", nil
	}
	parent := filepath.Join(os.TempDir(), fmt.Sprintf("kcache-pocl-%d", os.Getuid()))
	if err := ownDir(parent); err != nil {
		return "", err
	}
	removeOrphans(parent)
	dir := filepath.Join(parent, strconv.Itoa(os.Getpid()))
	// A directory of this process id is a dead process's: ids are reused.
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("kcache layer: private PoCL directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("kcache layer: private PoCL directory: %w", err)
	}
	if err := setenv(envPoCLCacheDir, dir); err != nil {
		return "", fmt.Errorf("kcache layer: setting %s: %w", envPoCLCacheDir, err)
	}
	return dir, nil
}

// ownDir makes dir, a directory of the shared temporary directory, or
// checks that the one there is a directory of this user's, which no one
// else can write: another user's could plant files PoCL would load.
func ownDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("kcache layer: private PoCL directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("kcache layer: private PoCL directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("kcache layer: %s is not a private directory of this user's", dir)
	}
	return nil
}

// removeOrphans removes the directories of processes that no longer run.
// Failures are ignored: an orphan left is disk space, removed next time.
func removeOrphans(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}
