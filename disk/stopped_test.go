package disk

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// helperHoldSize takes the size file's lock of the cache in
// KCACHE_DISK_DIR, says so on standard output, and stops itself, as a
// process stopped (SIGSTOP, a debugger) in the middle of a write would.
func helperHoldSize() error {
	path := filepath.Join(versionDir(os.Getenv("KCACHE_DISK_DIR")), shardsName, shardSizeName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	os.Stdout.WriteString("locked\n")
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	time.Sleep(time.Hour)
	return nil
}

// TestStoppedSizeLockHolder: a stopped process holds the size file's lock.
// A Put must not wait the lock timeout (10 s) behind it: it stores its
// entry within a moment, and once the holder is gone the totals converge
// on what is on disk.
func TestStoppedSizeLockHolder(t *testing.T) {
	s := openTest(t, Options{MaxSize: 1 << 20})
	for i := range 10 {
		mustPut(t, s, i, 1000)
	}
	settle(t, s)
	cmd := helper(os.Args[0], "holdsize", "KCACHE_DISK_DIR="+s.root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("holder: %q, %v", buf, err)
	}
	start := time.Now()
	mustPut(t, s, 100, 2000)
	took := time.Since(start)
	checkGet(t, s, 100, 2000)
	t.Logf("Put took %v behind a stopped holder", took)
	if took > 2*time.Second {
		t.Errorf("Put took %v behind a stopped holder of the size file's lock", took)
	}
	cmd.Process.Kill()
	cmd.Wait()
	mustPut(t, s, 101, 1000) // starts the background work, if the first did not
	settle(t, s)
	_, total := walkSum(t, s)
	if size, err := s.Size(context.Background()); err != nil || size != total {
		t.Errorf("size file %d (%v), entries hold %d", size, err, total)
	}
}
