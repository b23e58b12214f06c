package disk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// Multi-process tests re-execute the test binary as a child running
// TestHelperProcess, with the role in helperEnv and its parameters in
// further KCACHE_DISK_* variables.
const helperEnv = "KCACHE_DISK_HELPER"

// TestHelperProcess is not a test: it is the child side of the
// multi-process tests.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(helperEnv)
	if role == "" {
		t.Skip("child process of the multi-process tests")
	}
	roles := map[string]func() error{
		"build":      helperBuild,
		"churn":      helperChurn,
		"readonly":   helperReadOnly,
		"unsafe":     helperUnsafe,
		"shared":     helperShared,
		"hits":       helperHits,
		"writer":     helperWriter,
		"scaleput":   helperScalePut,
		"stray":      helperStray,
		"oneput":     helperOnePut,
		"holdsize":   helperHoldSize,
		"step":       helperStep,
		"killat":     helperKillAt,
		"contend":    helperContend,
		"unreadable": helperUnreadable,
		"import":     helperImport,
		"clear":      helperClear,
	}
	run, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		os.Exit(2)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helper returns a command that runs the test binary bin in role.
func helper(bin, role string, env ...string) *exec.Cmd {
	cmd := exec.Command(bin, "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// appendLine appends a line to the file at path. O_APPEND writes of a
// line are atomic, so concurrent processes never interleave.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(line + "\n")
	return err
}

// helperBuild runs the caller's protocol over KCACHE_DISK_KEYS keys and
// logs each build it does to KCACHE_DISK_BUILDS.
func helperBuild() error {
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR")})
	if err != nil {
		return err
	}
	ctx := context.Background()
	keys := envInt("KCACHE_DISK_KEYS")
	for i := range keys {
		k := testKey(i)
		if _, err := s.Get(ctx, k); err == nil {
			continue
		}
		unlock, err := s.Lock(ctx, k)
		if err != nil {
			return fmt.Errorf("lock %d: %w", i, err)
		}
		if _, err := s.Get(ctx, k); err == nil {
			unlock() // another process built it while we waited
			continue
		}
		time.Sleep(5 * time.Millisecond) // the "build"
		if err := appendLine(os.Getenv("KCACHE_DISK_BUILDS"), strconv.Itoa(i)); err != nil {
			return err
		}
		err = s.Put(ctx, k, kcache.Entry{Binary: testBinary(i, 2000+i), BuildTime: 5 * time.Millisecond})
		unlock()
		if err != nil {
			return fmt.Errorf("put %d: %w", i, err)
		}
	}
	for i := range keys {
		e, err := s.Get(ctx, testKey(i))
		if err != nil || !bytes.Equal(e.Binary, testBinary(i, 2000+i)) {
			return fmt.Errorf("key %d after the run: %v", i, err)
		}
	}
	return nil
}

func TestMultiProcessSingleFlight(t *testing.T) {
	const procs, keys = 8, 50
	dir := t.TempDir()
	builds := filepath.Join(dir, "builds")
	var cmds []*exec.Cmd
	for range procs {
		cmd := helper(os.Args[0], "build", "KCACHE_DISK_DIR="+filepath.Join(dir, "cache"),
			"KCACHE_DISK_KEYS="+strconv.Itoa(keys), "KCACHE_DISK_BUILDS="+builds)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}
	data, err := os.ReadFile(builds)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	if len(lines) != keys || len(count) != keys {
		t.Fatalf("%d builds of %d keys, want exactly %d: %v", len(lines), len(count), keys, count)
	}
	s := openTest(t, Options{Dir: filepath.Join(dir, "cache")})
	r, err := s.Verify(context.Background(), false)
	if err != nil || r.Entries != keys || r.Damaged+r.Incomplete != 0 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

// churnKeys and churnSize shape the churn: 64 keys of 1 to 16 KB under a
// 256 KB limit, so that Puts evict often.
const churnKeys = 64

func churnSize(i int) int { return 1000 + (i*7919)%15000 }

// helperChurn puts, gets, deletes and locks at random until killed, with a
// clock that jumps a day every 25 operations so that maintenance passes
// run often too. Anything wrong it sees goes to KCACHE_DISK_FAIL.
func helperChurn() error {
	var offset atomic.Int64
	s, err := Open(Options{
		Dir:          os.Getenv("KCACHE_DISK_DIR"),
		MaxSize:      256 << 10,
		AgeThreshold: 36 * time.Hour,
		LockTimeout:  10 * time.Second,
		Now:          func() time.Time { return time.Now().Add(time.Duration(offset.Load())) },
	})
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) {
		appendLine(os.Getenv("KCACHE_DISK_FAIL"), fmt.Sprintf(format, args...))
	}
	fmt.Println("ready")
	rng := rand.New(rand.NewPCG(uint64(envInt("KCACHE_DISK_SEED")), 1))
	ctx := context.Background()
	for op := 1; ; op++ {
		if op%25 == 0 {
			offset.Add(int64(25 * time.Hour))
		}
		i := rng.IntN(churnKeys)
		k := testKey(i)
		switch r := rng.IntN(10); {
		case r < 4:
			if err := s.Put(ctx, k, kcache.Entry{Binary: testBinary(i, churnSize(i))}); err != nil {
				fail("put %d: %v", i, err)
			}
		case r < 8:
			e, err := s.Get(ctx, k)
			if err == nil && !bytes.Equal(e.Binary, testBinary(i, churnSize(i))) {
				fail("WRONG BINARY for key %d", i)
			}
		case r < 9:
			if err := s.Delete(ctx, k); err != nil {
				fail("delete %d: %v", i, err)
			}
		default:
			unlock, err := s.Lock(ctx, k)
			if err != nil {
				fail("lock %d: %v", i, err)
				continue
			}
			s.Put(ctx, k, kcache.Entry{Binary: testBinary(i, churnSize(i))})
			unlock()
		}
	}
}

// TestKilledWriters SIGKILLs processes in the middle of writes, evictions
// and maintenance passes, then checks that nothing is damaged, nothing
// stays locked, and the cache works.
func TestKilledWriters(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 12
	}
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	failFile := filepath.Join(dir, "fail")
	rng := rand.New(rand.NewPCG(7, 7))
	interrupted := 0 // kills that left a write half done
	for round := range rounds {
		cmd := helper(os.Args[0], "churn", "KCACHE_DISK_DIR="+cache,
			"KCACHE_DISK_FAIL="+failFile, "KCACHE_DISK_SEED="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("child did not start: %q, %v", line, err)
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		go io.Copy(io.Discard, out)
		cmd.Wait()
		// The invariant holds after every kill, not just the last.
		s := openTest(t, Options{Dir: cache})
		r, err := s.Verify(context.Background(), false)
		if err != nil || r.Damaged != 0 {
			t.Fatalf("round %d: Verify = %+v, %v", round, r, err)
		}
		if r.Incomplete > 0 {
			interrupted++
		}
		// A kill in the middle of an eviction step leaves the totals off;
		// the next pass sets them right.
		if err := s.recount(context.Background()); err != nil {
			t.Fatalf("round %d: recount: %v", round, err)
		}
		_, total := walkSum(t, s)
		if size, err := s.Size(context.Background()); err != nil || size != total {
			t.Fatalf("round %d: size file %d (%v) after a pass, entries hold %d", round, size, err, total)
		}
	}
	if data, err := os.ReadFile(failFile); err == nil {
		t.Fatalf("children saw failures:\n%s", data)
	}
	t.Logf("%d of %d kills left a write half done", interrupted, rounds)
	checkAfterKills(t, cache)
}

func checkAfterKills(t *testing.T, cache string) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: cache, BuildWait: 5 * time.Second, LockTimeout: 5 * time.Second})
	r, err := s.Verify(ctx, false)
	if err != nil || r.Damaged != 0 {
		t.Fatalf("Verify after kills = %+v, %v", r, err)
	}
	t.Logf("after kills: %d entries, %d bytes, %d leftovers of interrupted writes", r.Entries, r.Bytes, r.Incomplete)
	for i := range churnKeys {
		isHit(t, s, i, churnSize(i))
	}
	// Nothing stays locked: every lock is free at once.
	for _, name := range []string{shardsName + "/" + shardSizeName, evictName} {
		f, err := s.lockFile(ctx, name, 0)
		if err != nil {
			t.Fatalf("%s still locked: %v", name, err)
		}
		f.Close()
	}
	err = s.eachLeaf(ctx, nil, func(leaf string) error {
		unlock, err := s.lockLeaf(ctx, leaf, false, 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("leaf %s still locked: %w", leaf, err)
		}
		if err == nil {
			unlock()
		}
		if f, err := s.lockPath(ctx, leaf+"/"+lockName, s.openLockFile, "", 0); err == nil {
			f.Close()
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("build lock in %s still held: %w", leaf, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range churnKeys {
		mustPut(t, s, i, churnSize(i))
		checkGet(t, s, i, churnSize(i))
	}
	if r, err = s.Verify(ctx, true); err != nil || r.Damaged != 0 {
		t.Fatalf("repair = %+v, %v", r, err)
	}
	if r, err = s.Verify(ctx, false); err != nil || r.Damaged+r.Incomplete != 0 || r.Entries != churnKeys {
		t.Fatalf("after repair = %+v, %v", r, err)
	}
	if size, _ := s.Size(ctx); size != r.Bytes {
		t.Fatalf("size file %d, entries %d bytes", size, r.Bytes)
	}
}

// helperReadOnly runs as another user against a cache it owns but may not
// write: reads work, writes fail cleanly.
func helperReadOnly() error {
	ctx := context.Background()
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR"), Now: func() time.Time { return time.Now().Add(48 * time.Hour) }})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	e, err := s.Get(ctx, testKey(1))
	if err != nil || !bytes.Equal(e.Binary, testBinary(1, 100)) {
		return fmt.Errorf("get of a present key: %v", err)
	}
	if _, err := s.Get(ctx, testKey(2)); !errors.Is(err, kcache.ErrMiss) {
		return fmt.Errorf("get of an absent key: %v", err)
	}
	if err := s.Put(ctx, testKey(2), kcache.Entry{Binary: []byte("x")}); !errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("put: %v, want a permission error", err)
	}
	if unlock, err := s.Lock(ctx, testKey(2)); err == nil {
		unlock()
		return errors.New("lock in an unwritable cache succeeded")
	}
	if err := s.Delete(ctx, testKey(1)); !errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("delete: %v, want a permission error", err)
	}
	if n, err := s.Size(ctx); err != nil || n == 0 {
		return fmt.Errorf("size: %d, %v", n, err)
	}
	if r, err := s.Verify(ctx, false); err != nil || r.Entries != 1 {
		return fmt.Errorf("verify: %+v, %v", r, err)
	}
	return nil
}

// helperUnsafe runs as another user against a cache it does not own.
func helperUnsafe() error {
	_, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR")})
	if !errors.Is(err, ErrUnsafeDir) {
		return fmt.Errorf("open of another user's cache: %v, want ErrUnsafeDir", err)
	}
	return nil
}

// handOver gives everything under dir to uid and gid, with directories
// made dirMode and files fileMode; a zero mode leaves the modes as they are.
func handOver(t *testing.T, dir string, uid, gid int, dirMode, fileMode os.FileMode) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
		mode := fileMode
		if d.IsDir() {
			mode = dirMode
		}
		if mode == 0 {
			return nil
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// nobody is the uid and gid the permission tests run children as.
const nobody = 65534

// asNobody prepares a copy of the test binary that user nobody can run
// and returns its path and a scratch directory nobody can reach.
func asNobody(t *testing.T) (bin, dir string) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another user")
	}
	dir, err := os.MkdirTemp("", "kcache-disk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "disk.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

func runAsNobody(t *testing.T, bin, role, cache string) {
	cmd := helper(bin, role, "KCACHE_DISK_DIR="+cache)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("child as uid %d: %v\n%s", nobody, err, out)
	}
}

func TestUnwritableCacheOtherUser(t *testing.T) {
	bin, dir := asNobody(t)
	cache := filepath.Join(dir, "cache")
	s := openTest(t, Options{Dir: cache})
	mustPut(t, s, 1, 100)
	// Hand the cache to nobody, read-only: directories r-x, files r--.
	handOver(t, cache, nobody, nobody, 0o500, 0o400)
	runAsNobody(t, bin, "readonly", cache)
}

func TestOtherUsersCacheRefused(t *testing.T) {
	bin, dir := asNobody(t)
	cache := filepath.Join(dir, "cache")
	s := openTest(t, Options{Dir: cache})
	mustPut(t, s, 1, 100)
	// Reachable by nobody, but another user's: neither root nor nobody.
	const other = 4242
	if err := os.Chown(cache, other, other); err != nil {
		t.Fatal(err)
	}
	os.Chmod(cache, 0o755)
	runAsNobody(t, bin, "unsafe", cache)
}

// TestRootsCacheReadable: a cache root warmed (a container image's) is
// read by another user, who cannot write it: root could run code as that
// user anyway, so trusting its binaries widens nothing.
func TestRootsCacheReadable(t *testing.T) {
	bin, dir := asNobody(t)
	cache := filepath.Join(dir, "cache")
	s := openTest(t, Options{Dir: cache})
	mustPut(t, s, 1, 100)
	handOver(t, cache, 0, 0, 0o755, 0o644)
	runAsNobody(t, bin, "readonly", cache)
}

// TestSharedCache: a cache made shared by root for group nobody is used,
// read and written, by user nobody in shared mode, and what nobody writes
// is the group's; without shared mode nobody refuses it.
func TestSharedCache(t *testing.T) {
	bin, dir := asNobody(t)
	cache := filepath.Join(dir, "cache")
	old := syscall.Umask(0o022) // the usual umask, which shared mode must get past
	defer syscall.Umask(old)
	s := openTest(t, Options{Dir: cache, Shared: true})
	mustPut(t, s, 1, 100)
	handOver(t, cache, 0, nobody, 0, 0) // modes as the shared store made them
	for _, p := range []string{cache, versionDir(cache)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o770 || fi.Mode()&fs.ModeSetgid == 0 {
			t.Errorf("%s: mode %v, want drwxrws---", p, fi.Mode())
		}
	}
	runAsNobody(t, bin, "shared", cache)
	// The store root opened before it gave the cache to the group reads
	// what nobody wrote; opened now, root refuses it: root is not in the
	// group, whose members could plant code that root would run.
	if e, err := s.Get(context.Background(), testKey(2)); err != nil || !bytes.Equal(e.Binary, testBinary(2, 100)) {
		t.Fatalf("nobody's entry: %v", err)
	}
	if _, err := Open(Options{Dir: cache, Shared: true}); !errors.Is(err, ErrUnsafeDir) {
		t.Errorf("root opened a cache writable by a group it is not in: %v", err)
	}
	if _, err := Open(Options{Dir: cache}); !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "KCACHE_SHARED") {
		t.Errorf("a group-writable cache opened without shared mode: %v, want ErrUnsafeDir naming KCACHE_SHARED", err)
	}
}

// helperShared runs as user nobody, in group nobody, against a shared
// cache of that group that root owns: it finds root's entry, stores its
// own, group-writable, and refuses the cache outside shared mode.
func helperShared() error {
	dir := os.Getenv("KCACHE_DISK_DIR")
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrUnsafeDir) {
		return fmt.Errorf("open without shared mode: %v, want ErrUnsafeDir", err)
	}
	s, err := Open(Options{Dir: dir, Shared: true})
	if err != nil {
		return err
	}
	defer s.Close(context.Background())
	ctx := context.Background()
	if e, err := s.Get(ctx, testKey(1)); err != nil || !bytes.Equal(e.Binary, testBinary(1, 100)) {
		return fmt.Errorf("root's entry: %v", err)
	}
	if err := s.Put(ctx, testKey(2), kcache.Entry{Binary: testBinary(2, 100)}); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) == nobody && fi.Mode().Perm()&0o060 != 0o060 {
			return fmt.Errorf("%s: mode %v, want group read and write", p, fi.Mode())
		}
		return nil
	})
}

// helperHits opens the cache in KCACHE_DISK_DIR, stores key 1 (100 KB) if
// it is missing, and reads it KCACHE_DISK_N times: run under strace -c with
// two values of N to count the system calls of one hit.
func helperHits() error {
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR")})
	if err != nil {
		return err
	}
	if _, err := s.Get(context.Background(), testKey(1)); err != nil {
		if err := s.Put(context.Background(), testKey(1), kcache.Entry{Binary: testBinary(1, 100<<10)}); err != nil {
			return err
		}
	}
	for range envInt("KCACHE_DISK_N") {
		if _, err := s.Get(context.Background(), testKey(1)); err != nil {
			return err
		}
	}
	return nil
}

// writerEntry is the size of the entries helperWriter puts.
const writerEntry = 4 << 10

// helperWriter puts KCACHE_DISK_N entries of 4 KiB as fast as it can,
// keys numbered from KCACHE_DISK_SEED, under a limit of KCACHE_DISK_MAX
// bytes, then closes the store, waiting for its background work.
func helperWriter() error {
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR"), MaxSize: int64(envInt("KCACHE_DISK_MAX"))})
	if err != nil {
		return err
	}
	s.sync = false
	// TestManyWritersStayBounded stops every writer while it walks the
	// tree, for tens of milliseconds under the race detector: a write that
	// waited for the size file's lock across the stop would take it for a
	// stopped holder's and write uncounted, past the bound the test checks.
	s.sizeLockWait = s.opts.LockTimeout
	ctx := context.Background()
	base := envInt("KCACHE_DISK_SEED")
	for i := range envInt("KCACHE_DISK_N") {
		k := base + i
		if err := s.Put(ctx, testKey(k), kcache.Entry{Binary: testBinary(k, writerEntry)}); err != nil {
			return fmt.Errorf("put %d: %w", k, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.Close(ctx)
}

// TestManyWritersStayBounded runs 8 processes writing as fast as they can
// into a cache limited to 1 MiB, samples the total on disk meanwhile (each
// sample a walk with the writers stopped), and checks that it never goes
// above 1.1 x MaxSize and ends within MaxSize.
func TestManyWritersStayBounded(t *testing.T) {
	const procs, maxSize = 8, 1 << 20
	per := 150
	if testing.Short() {
		per = 60
	}
	cache := filepath.Join(t.TempDir(), "cache")
	watch := openTest(t, Options{Dir: cache})
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := helper(os.Args[0], "writer", "KCACHE_DISK_DIR="+cache, "KCACHE_DISK_N="+strconv.Itoa(per),
			"KCACHE_DISK_SEED="+strconv.Itoa(p*per), "KCACHE_DISK_MAX="+strconv.Itoa(maxSize))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	done := make(chan error, procs)
	for _, cmd := range cmds {
		go func() { done <- cmd.Wait() }()
	}
	var peak int64
	samples := 0
	for running := procs; running > 0; {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("writer: %v", err)
			}
			running--
		case <-time.After(5 * time.Millisecond):
		}
		// The writers are stopped while the tree is walked: a walk that
		// ran beside them would count an entry evicted after its leaf was
		// listed together with one stored after, which never coexisted,
		// and report a peak that never was (1.131 x once under load).
		signalAll(cmds, syscall.SIGSTOP)
		total, err := watch.walkTotal(context.Background())
		signalAll(cmds, syscall.SIGCONT)
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, total)
		samples++
	}
	_, final := walkSum(t, watch)
	t.Logf("peak %d bytes (%.3f x MaxSize) over %d samples; final %d", peak, float64(peak)/maxSize, samples, final)
	if peak > maxSize*11/10 {
		t.Errorf("peak total %d above 1.1 x MaxSize (%d)", peak, maxSize)
	}
	if final > maxSize {
		t.Errorf("quiet cache holds %d, above MaxSize %d", final, maxSize)
	}
	if size, err := watch.Size(context.Background()); err != nil || size != final {
		t.Errorf("size file %d (%v), entries hold %d", size, err, final)
	}
}

// signalAll sends sig to every process of cmds that has not been waited
// for; one that has exited is passed over.
func signalAll(cmds []*exec.Cmd, sig syscall.Signal) {
	for _, cmd := range cmds {
		_ = cmd.Process.Signal(sig)
	}
}

// helperStray runs as a user who cannot read one directory of its cache:
// its writes overflow the limit, and eviction must bring the cache down
// regardless, reporting the directory.
func helperStray() error {
	const per = 1000
	ctx := context.Background()
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR"), MaxSize: 12 * 1300})
	if err != nil {
		return err
	}
	for i := range 40 {
		if err := s.Put(ctx, testKey(i), kcache.Entry{Binary: testBinary(i, per)}); err != nil {
			return fmt.Errorf("put %d: %w", i, err)
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := s.wait(cctx) // one pass at a time, so that each sees the stray
		cancel()
		if err != nil {
			return err
		}
	}
	if err := s.Close(ctx); err != nil {
		return err
	}
	total, err := s.walkTotal(ctx)
	if err != nil || total > s.opts.MaxSize {
		return fmt.Errorf("cache holds %d bytes (%v), limit %d", total, err, s.opts.MaxSize)
	}
	if size, err := s.Size(ctx); err != nil || size != total {
		return fmt.Errorf("size file %d (%v), entries %d", size, err, total)
	}
	r, err := s.Verify(ctx, false)
	if err != nil || r.Unreadable == 0 {
		return fmt.Errorf("verify: %+v, %v: the stray is not reported", r, err)
	}
	return nil
}

// TestStrayDirectoryOfAnotherUser leaves, in a cache of user nobody, a
// directory only root can read, as a run under sudo does: nobody's
// processes skip it and keep their cache within its limit.
func TestStrayDirectoryOfAnotherUser(t *testing.T) {
	bin, dir := asNobody(t)
	cache := filepath.Join(dir, "cache")
	s := openTest(t, Options{Dir: cache})
	mustPut(t, s, 999, 100)
	settle(t, s)
	err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
	fan := filepath.Dir(filepath.Dir(filepath.Dir(s.leafDir(s.digests(testKey(999))))))
	stray := filepath.Join(fan, "0123456789abcdef0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(stray, "0123456789abcdef0123456789abcdef"), 0o700); err != nil {
		t.Fatal(err)
	}
	runAsNobody(t, bin, "stray", cache)
}
