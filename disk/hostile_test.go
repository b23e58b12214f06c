package disk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/killtest"
)

// hangLimit is how long returns waits before it calls an operation hung.
// It measures no speed: every operation here returns in microseconds, and
// one blocked in open(2) on a FIFO never returns at all.
const hangLimit = 30 * time.Second

// returns fails t if f does not return: a FIFO planted in the cache must
// never keep a lookup, a write or a pass waiting for a writer.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatalf("%s never returned: blocked on a FIFO", what)
	}
}

// TestPlantedFIFOs plants a FIFO where each file of the cache goes (a
// record, a version 1 binary, a leaf directory, a journal, a journal's
// temporary file, the size limit, the counters, the maintenance stamp)
// and runs what a process and the commands do: every one returns, the
// FIFO reads as a miss or as damage, and a Put replaces it. Before, open(2)
// waited for a writer for ever: Get, Put, Walk and Verify on a record,
// Open on max-size, Delete and every step on a leaf.
func TestPlantedFIFOs(t *testing.T) {
	places := map[string]func(s *Store) string{
		"record":           func(s *Store) string { return srcPath(s.leafDir(s.digests(testKey(1))), 0) },
		"version 1 binary": func(s *Store) string { return binPath(s.leafDir(s.digests(testKey(2))), 0) },
		"leaf":             func(s *Store) string { return s.leafDir(s.digests(testKey(1))) },
		"journal":          func(s *Store) string { return s.journalPath(shardOf(s, 1)) },
		"journal temp":     func(s *Store) string { return s.shardsDir() + "/" + tempPrefix + "planted" },
		"max-size":         func(s *Store) string { return filepath.Join(s.root, maxSizeName) },
		"counters":         func(s *Store) string { return filepath.Join(s.root, countersName) },
		"trim stamp":       func(s *Store) string { return s.dir + "/" + trimName },
	}
	for name, place := range places {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, Options{MaxSize: 1 << 20})
			mustPut(t, s, 0, 1000)
			putLegacy(t, s, 2, 1000)
			settle(t, s)
			p := place(s)
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour) // a killed step's temporary file, to the pass
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			returns(t, "Open", func() {
				if _, err := Open(Options{Dir: s.root}); err != nil {
					t.Errorf("Open: %v", err)
				}
			})
			returns(t, "Get", func() { isHit(t, s, 1, 1000); isHit(t, s, 2, 1000) })
			returns(t, "Walk", func() { s.Walk(ctx, func(Info) error { return nil }) })
			returns(t, "Verify", func() { s.Verify(ctx, false) })
			returns(t, "Counters", func() { s.Counters(ctx); s.AddCounters(ctx, Counters{DiskHits: 1}) })
			returns(t, "Delete", func() { s.Delete(ctx, testKey(1)) })
			returns(t, "Put", func() { s.Put(ctx, testKey(1), kcache.Entry{Binary: testBinary(1, 1000)}) })
			returns(t, "the maintenance pass", func() { s.recount(ctx) })
			returns(t, "Verify with repair", func() { s.Verify(ctx, true) })
			if name == "leaf" {
				// Something not a directory where a leaf goes keeps its key
				// a miss, as a stray file there does (TestEvictionSkipsUnreadable).
				returns(t, "Put over the leaf", func() { s.Put(ctx, testKey(1), kcache.Entry{Binary: testBinary(1, 1000)}) })
				isHit(t, s, 1, 1000)
				os.Remove(p)
			}
			returns(t, "Put again", func() { mustPut(t, s, 1, 1000); mustPut(t, s, 2, 1000) })
			checkGet(t, s, 1, 1000)
			checkGet(t, s, 2, 1000)
			returns(t, "Prune", func() { s.Prune(ctx, PruneOptions{MaxSize: 1}) })
			returns(t, "Clear", func() { s.Clear(ctx) })
			mustPut(t, s, 1, 1000)
			checkGet(t, s, 1, 1000)
		})
	}
}

// names returns the paths under dir and their sizes: what a pass that
// followed a link out of its cache would have removed.
func names(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for p, st := range snapshot(t, dir) {
		m[p] = st.size
		if st.mode.IsDir() {
			m[p] = -1
		}
	}
	return m
}

// sameNames reports every file of before (names' answer for a directory
// outside the passes' reach, where) that after lacks or has at another
// size, and every file after gained.
func sameNames(t *testing.T, where string, before, after map[string]int64) {
	t.Helper()
	for p, n := range before {
		if m, ok := after[p]; !ok || m != n {
			t.Errorf("%s, %s: was %d bytes, now %d (present %v)", where, p, n, m, ok)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s gained %s", where, p)
		}
	}
}

// TestPlantedSymlinks replaces each directory level of an entry's path
// with a symbolic link to the same level of another cache, which holds an
// entry last used long ago, a write in progress (a temporary file), a
// binary without its record and a build lock; then runs every pass and
// command of this cache over it. None may remove or create anything there.
// Before, the maintenance pass followed the link and removed the other
// cache's temporary file, binary and build lock as a dead writer's, and
// aged its entry out (the same for any directory the link named).
func TestPlantedSymlinks(t *testing.T) {
	for level := deviceLevel; level < levels; level++ {
		t.Run(strconv.Itoa(level), func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, Options{})
			other := openTest(t, Options{})
			mustPut(t, s, 0, 1000)
			mustPut(t, s, 1, 1000)
			mustPut(t, other, 1, 1000)
			settle(t, s)
			settle(t, other)
			theirs := other.leafDir(other.digests(testKey(1)))
			writeRaw(t, theirs+"/"+tempPrefix+"inflight", []byte("a write in progress"))
			writeRaw(t, binPath(theirs, 3), []byte("a binary whose record comes next"))
			writeRaw(t, theirs+"/"+lockName, nil)
			old := time.Now().Add(-30 * 24 * time.Hour)
			if err := os.Chtimes(srcPath(theirs, 0), old, old); err != nil {
				t.Fatal(err)
			}
			mine := s.leafDir(s.digests(testKey(1)))
			for range levels - 1 - level {
				mine, theirs = filepath.Dir(mine), filepath.Dir(theirs)
			}
			if err := os.RemoveAll(mine); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(theirs, mine); err != nil {
				t.Fatal(err)
			}
			before := names(t, other.root)
			s.Get(ctx, testKey(1)) // a read through the link is checked as any
			unlock, _ := s.Lock(ctx, testKey(1))
			unlock()
			s.Put(ctx, testKey(1), kcache.Entry{Binary: testBinary(1, 1000)})
			s.Put(ctx, testKey(2), kcache.Entry{Binary: testBinary(2, 1000)})
			s.Delete(ctx, testKey(1))
			if err := s.recount(ctx); err != nil {
				t.Fatal(err)
			}
			s.fullPass(ctx, passOptions{cutoff: time.Now().Add(-24 * time.Hour), wait: true})
			s.Verify(ctx, true)
			s.Prune(ctx, PruneOptions{OlderThan: time.Hour, MaxSize: 1})
			s.Clear(ctx)
			sameNames(t, "the other cache", before, names(t, other.root))
			checkGet(t, other, 1, 1000)
		})
	}
}

// killPoints are the steps of a write at which TestKilledAtEveryStep kills
// its writer: in a Put, after the leaf's lock, the slot's choice, the
// count, and the entry's file written but not renamed; in an eviction
// step, after the journals are read, the victims chosen, the journal's
// new content written but not renamed, and the journal renamed before the
// total is set; in a removal, between the record and the binary of an
// entry of version 1; in a Clear, between the rename aside and the
// removal.
var killPoints = []string{
	"put:locked", "put:slot", "put:counted", "put:staged",
	"listing", "evicting", "counting", "swap:staged", "swapped",
	"remove:uncommitted", "clear:renamed",
}

// helperKillAt stores entries in KCACHE_DISK_DIR past its size limit,
// then recounts, deletes and clears, and at the first arrival at the point
// KCACHE_DISK_AT writes "at <point>" and stops for the parent's SIGKILL.
func helperKillAt() error {
	ctx := context.Background()
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR"), MaxSize: 20 * 1200})
	if err != nil {
		return err
	}
	point := os.Getenv("KCACHE_DISK_AT")
	var once sync.Once
	s.hook = func(p string) {
		if p == point {
			once.Do(func() { fmt.Printf("at %s\n", p) })
			select {} // until killed
		}
	}
	for i := range 40 {
		s.Put(ctx, testKey(100+i), kcache.Entry{Binary: testBinary(100+i, 1000)})
	}
	s.recount(ctx)
	for i := range 4 {
		s.Delete(ctx, testKey(i))
	}
	s.Clear(ctx)
	select {} // the point may be a background step's
}

// TestKilledAtEveryStep SIGKILLs a writer at each step of a Put, of an
// eviction step, of a journal's swap, of a removal and of a Clear (a hook
// stops it there; no sleep decides where), then checks what a later
// process sees: every lookup is the entry stored or a miss, nothing is
// damaged, the totals come right after one pass, and the keys store and
// hit again.
func TestKilledAtEveryStep(t *testing.T) {
	for _, point := range killPoints {
		t.Run(point, func(t *testing.T) {
			ctx := context.Background()
			cache := filepath.Join(t.TempDir(), "cache")
			s := openTest(t, Options{Dir: cache})
			for i := range 4 {
				putLegacy(t, s, i, 1000) // removals of version 1 have two steps
			}
			for i := 4; i < 8; i++ {
				mustPut(t, s, i, 1000)
			}
			if err := s.recount(ctx); err != nil {
				t.Fatal(err)
			}
			cmd := helper(os.Args[0], "killat", "KCACHE_DISK_DIR="+cache, "KCACHE_DISK_AT="+point, noExitSleep)
			line, err := killtest.AfterLine(t, cmd)
			if line != "at "+point+"\n" {
				t.Fatalf("the writer never reached %s: %q, %v", point, line, err)
			}
			s = openTest(t, Options{Dir: cache, LockTimeout: 5 * time.Second})
			r, err := s.Verify(ctx, false)
			if err != nil || r.Damaged != 0 {
				t.Fatalf("Verify after a kill at %s = %+v, %v", point, r, err)
			}
			for i := range 8 {
				isHit(t, s, i, 1000)
			}
			for i := 100; i < 140; i++ {
				isHit(t, s, i, 1000)
			}
			if err := s.recount(ctx); err != nil {
				t.Fatal(err)
			}
			_, total := walkSum(t, s)
			if size, err := s.Size(ctx); err != nil || size != total {
				t.Fatalf("after a kill at %s and a pass: size file %d (%v), entries hold %d", point, size, err, total)
			}
			if r, err := s.Verify(ctx, true); err != nil || r.Damaged != 0 {
				t.Fatalf("Verify --repair = %+v, %v", r, err)
			}
			for i := range 8 {
				mustPut(t, s, i, 1000)
				checkGet(t, s, i, 1000)
			}
			for _, name := range []string{shardsName + "/" + shardSizeName, evictName} {
				f, err := s.lockFile(ctx, name, 0)
				if err != nil {
					t.Fatalf("%s still locked after the kill: %v", name, err)
				}
				f.Close()
			}
		})
	}
}

// contendKeys and contendGens are the keys the contending processes share
// and the binaries each key may hold: a key is deleted and stored again
// with another of its binaries while others read and evict it.
const contendKeys, contendGens = 12, 4

func contendBinary(k, g int) []byte { return testBinary(1000*k+g, 1500+100*g) }

// helperContend runs KCACHE_DISK_N random operations on the shared keys
// of the cache in KCACHE_DISK_DIR, limited to a few entries: lookups,
// which must find one of the key's own binaries or nothing; deletes
// followed by a store of another binary; stores; maintenance passes and
// prunes. What it sees wrong it appends to KCACHE_DISK_FAIL.
func helperContend() error {
	ctx := context.Background()
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR"), MaxSize: 5 * 1900, LockTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	s.sync = false
	fail := func(format string, a ...any) error {
		return appendLine(os.Getenv("KCACHE_DISK_FAIL"), fmt.Sprintf(format, a...))
	}
	rng := rand.New(rand.NewPCG(uint64(envInt("KCACHE_DISK_SEED")), 13))
	for range envInt("KCACHE_DISK_N") {
		k, g := rng.IntN(contendKeys), rng.IntN(contendGens)
		switch op := rng.IntN(20); {
		case op < 10:
			e, err := s.Get(ctx, testKey(k))
			if err != nil {
				if !errors.Is(err, kcache.ErrMiss) {
					return fail("get %d: not a miss: %v", k, err)
				}
				continue
			}
			ok := false
			for g := range contendGens {
				ok = ok || bytes.Equal(e.Binary, contendBinary(k, g))
			}
			if !ok {
				return fail("get %d: a binary no Put of the key stored (%d bytes)", k, len(e.Binary))
			}
		case op < 14:
			s.Delete(ctx, testKey(k))
			fallthrough
		case op < 18:
			if err := s.Put(ctx, testKey(k), kcache.Entry{Binary: contendBinary(k, g)}); err != nil {
				return fail("put %d: %v", k, err)
			}
		case op < 19:
			s.Prune(ctx, PruneOptions{MaxSize: 3 * 1900})
		default:
			s.recount(ctx)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.Close(ctx)
}

// TestEvictionRacingReaders runs four processes over the same dozen keys
// in a cache of five entries, each looking up, deleting and storing again
// with another binary, storing, pruning and recounting at random: every
// hit must be one of the key's own binaries, and afterwards nothing is
// damaged and the totals are exact.
func TestEvictionRacingReaders(t *testing.T) {
	const procs = 4
	n := 400
	if testing.Short() {
		n = 100
	}
	dir := t.TempDir()
	cache, failFile := filepath.Join(dir, "cache"), filepath.Join(dir, "fail")
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := helper(os.Args[0], "contend", "KCACHE_DISK_DIR="+cache, "KCACHE_DISK_FAIL="+failFile,
			"KCACHE_DISK_SEED="+strconv.Itoa(p), "KCACHE_DISK_N="+strconv.Itoa(n), noExitSleep)
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
	if data, err := os.ReadFile(failFile); err == nil {
		t.Fatalf("the processes saw:\n%s", data)
	}
	ctx := context.Background()
	s := openTest(t, Options{Dir: cache})
	if r, err := s.Verify(ctx, false); err != nil || r.Damaged != 0 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	if err := s.recount(ctx); err != nil {
		t.Fatal(err)
	}
	_, total := walkSum(t, s)
	if size, err := s.Size(ctx); err != nil || size != total {
		t.Fatalf("size file %d (%v), entries hold %d", size, err, total)
	}
}

// TestSharedEntryUnreadable: in a cache shared by a group, an entry one
// member wrote only for itself (mode 0600: a process without shared mode,
// a umask that won) is unreadable to another member, who must take it for
// a miss, not for damage: its Verify with repair left it, and its passes
// count it as nothing they can judge. Before, Verify counted it damaged and
// its repair removed the other member's sound entry.
func TestSharedEntryUnreadable(t *testing.T) {
	bin, dir := asNobody(t)
	cache := filepath.Join(dir, "cache")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	s := openTest(t, Options{Dir: cache, Shared: true})
	mustPut(t, s, 1, 100)
	mustPut(t, s, 3, 100)
	handOver(t, cache, 0, nobody, 0, 0)
	mine := srcPath(s.leafDir(s.digests(testKey(3))), 0)
	if err := os.Chmod(mine, 0o600); err != nil {
		t.Fatal(err)
	}
	runAsNobody(t, bin, "unreadable", cache)
	if _, err := os.Lstat(mine); err != nil {
		t.Fatalf("root's entry, unreadable to nobody: %v", err)
	}
	checkGet(t, s, 3, 100)
	checkGet(t, s, 1, 100)
}

// helperUnreadable runs as user nobody in the shared cache of
// TestSharedEntryUnreadable: key 1 is a hit, key 3 a miss, and Verify with
// repair finds no damage and removes nothing.
func helperUnreadable() error {
	ctx := context.Background()
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR"), Shared: true})
	if err != nil {
		return err
	}
	defer s.Close(ctx)
	if e, err := s.Get(ctx, testKey(1)); err != nil || !bytes.Equal(e.Binary, testBinary(1, 100)) {
		return fmt.Errorf("the readable entry: %v", err)
	}
	if _, err := s.Get(ctx, testKey(3)); !errors.Is(err, kcache.ErrMiss) {
		return fmt.Errorf("the unreadable entry: %v, want a miss", err)
	}
	r, err := s.Verify(ctx, true)
	if err != nil || r.Damaged != 0 || r.Removed != 0 || r.Entries != 1 {
		return fmt.Errorf("Verify --repair = %+v, %v: want 1 entry, nothing damaged or removed", r, err)
	}
	return nil
}

// helperImport imports the bundle KCACHE_DISK_BUNDLE into the cache in
// KCACHE_DISK_DIR, and at its first Put writes "storing" and stops for the
// parent's SIGKILL.
func helperImport() error {
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR")})
	if err != nil {
		return err
	}
	var once sync.Once
	s.hook = func(p string) {
		if p == "put:locked" {
			once.Do(func() { fmt.Println("storing") })
			select {} // until killed
		}
	}
	f, err := os.Open(os.Getenv("KCACHE_DISK_BUNDLE"))
	if err != nil {
		return err
	}
	_, err = s.ImportBundle(context.Background(), f, nil)
	return err
}

// TestKilledImportLeavesNothing kills an import once the bundle is
// verified and spooled, at its first store: nothing of it may stay in the
// cache's root, where no pass, no limit and no Clear would ever find it.
// Before, the spool (every verified blob of the bundle) stayed there for
// good.
func TestKilledImportLeavesNothing(t *testing.T) {
	src := openTest(t, Options{})
	for i := range 4 {
		mustPut(t, src, i, 50<<10)
	}
	bundle := filepath.Join(t.TempDir(), "b.kcb")
	f, err := os.Create(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.ExportBundle(context.Background(), f, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dst := openTest(t, Options{})
	cmd := helper(os.Args[0], "import", "KCACHE_DISK_DIR="+dst.root, "KCACHE_DISK_BUNDLE="+bundle, noExitSleep)
	line, err := killtest.AfterLine(t, cmd)
	if line != "storing\n" {
		t.Fatalf("the import never stored: %q, %v", line, err)
	}
	names, err := readRootNames(dst.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			t.Errorf("a killed import left %s in the cache's root", n)
		}
	}
	// What an earlier version's killed import left, Clear removes.
	writeRaw(t, filepath.Join(dst.root, importPrefix+"left"), []byte("blobs"))
	if err := dst.Clear(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := files(t, dst.root, importPrefix+"*"); len(left) != 0 {
		t.Errorf("Clear left %v", left)
	}
}

// TestPlantedFileLinks plants a symbolic link where each of the store's
// own files goes (the maintenance stamp, its lock, the size file, a
// journal, the step locks, a build lock, the counters' lock), to a file
// outside the cache and, beside it, to one that does not exist; and links
// the shards folder to a directory outside. After writes, a build lock, a
// maintenance pass and a recount, no file outside has changed and none
// was created. Before, the pass's stamp truncated the file trim.txt named
// and wrote the time into it, the size file and journals were written over
// or appended to, and a dangling link at a lock created its target.
func TestPlantedFileLinks(t *testing.T) {
	places := map[string]func(s *Store) string{
		"trim stamp": func(s *Store) string { return s.dir + "/" + trimName },
		"evict lock": func(s *Store) string { return s.dir + "/" + evictName },
		"size file":  func(s *Store) string { return s.shardsDir() + "/" + shardSizeName },
		"journal":    func(s *Store) string { return s.journalPath(shardOf(s, 1)) },
		"step locks": func(s *Store) string { return s.shardsDir() + "/" + stepsLockName },
		"build lock": func(s *Store) string { return s.leafDir(s.digests(testKey(1))) + "/" + lockName },
		"counters":   func(s *Store) string { return filepath.Join(s.root, countersLock) },
		"shards":     func(s *Store) string { return s.shardsDir() },
	}
	for name, place := range places {
		for _, dangling := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s dangling %v", name, dangling), func(t *testing.T) {
				ctx := context.Background()
				clock := newClock()
				s := openTest(t, Options{Now: clock.Now, MaxSize: 1 << 20})
				mustPut(t, s, 0, 1000)
				settle(t, s)
				outside := t.TempDir()
				victim := filepath.Join(outside, "victim")
				if name == "shards" {
					// A directory of files named as the folder's.
					for _, n := range []string{shardSizeName, stepsLockName, fmt.Sprintf("%02x", shardOf(s, 1))} {
						writeRaw(t, filepath.Join(outside, n), []byte("precious\n"))
					}
					victim = outside
				} else if !dangling {
					writeRaw(t, victim, []byte("precious\n"))
				}
				p := place(s)
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(victim, p); err != nil {
					t.Fatal(err)
				}
				before := names(t, outside)
				unlock, _ := s.Lock(ctx, testKey(1))
				s.Put(ctx, testKey(1), kcache.Entry{Binary: testBinary(1, 1000)})
				unlock()
				s.Put(ctx, testKey(2), kcache.Entry{Binary: testBinary(2, 1000)})
				s.AddCounters(ctx, Counters{DiskHits: 1})
				clock.Advance(2 * trimInterval)
				s.trim(ctx, clock.Now())
				s.recount(ctx)
				settle(t, s)
				sameNames(t, "outside the cache", before, names(t, outside))
				for p := range before {
					if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
						if b, _ := os.ReadFile(p); string(b) != "precious\n" {
							t.Errorf("%s outside the cache now holds %q", p, b)
						}
					}
				}
				checkGet(t, s, 0, 1000)
			})
		}
	}
}

// TestHugeFileNotARecord plants a sparse file of 1 GiB that is not a
// record where an entry goes (a file extended, or zeroed, by damage; one
// of 60 GiB costs the disk as little): a lookup, a Put and a deep Verify
// take it for damage without reading it whole. Before, each allocated and
// read the whole file, so that one of tens of GiB killed its host for want
// of memory. The assertion is on bytes allocated, not on time.
func TestHugeFileNotARecord(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	mustPut(t, s, 2, 1000)
	path := srcPath(s.leafDir(s.digests(testKey(1))), 0)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const huge = 1 << 30
	if err := f.Truncate(huge); err != nil {
		t.Fatal(err)
	}
	f.Close()
	allocated := func(what string, fn func()) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > huge/16 {
			t.Errorf("%s allocated %d bytes for a file that is not a record", what, n)
		}
	}
	allocated("Get", func() { isHit(t, s, 1, 1000) })
	allocated("Verify", func() {
		if r, err := s.Verify(ctx, false); err != nil || r.Damaged != 1 || r.Entries != 1 {
			t.Errorf("Verify = %+v, %v", r, err)
		}
	})
	allocated("Put", func() { mustPut(t, s, 1, 1000) })
	checkGet(t, s, 1, 1000)
}

// TestExtendedEntry extends an entry of 200 KB (its binary past what a
// lookup reads at once) to a sparse 1 GiB: a lookup, a deep Verify and a
// Put take it for damage, reading one byte past the length its record
// states, and the Put replaces it. Before, each allocated and read the
// whole file.
func TestExtendedEntry(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	mustPut(t, s, 1, 200<<10)
	path := srcPath(s.leafDir(s.digests(testKey(1))), 0)
	const huge = 1 << 30
	if err := os.Truncate(path, huge); err != nil {
		t.Fatal(err)
	}
	allocated := func(what string, fn func()) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > huge/16 {
			t.Errorf("%s allocated %d bytes for an entry of 200 KB", what, n)
		}
	}
	allocated("Get", func() {
		if isHit(t, s, 1, 200<<10) {
			t.Error("an extended entry was a hit")
		}
	})
	allocated("Verify", func() {
		if r, err := s.Verify(ctx, false); err != nil || r.Damaged != 1 {
			t.Errorf("Verify = %+v, %v", r, err)
		}
	})
	allocated("Put", func() { mustPut(t, s, 1, 200<<10) })
	checkGet(t, s, 1, 200<<10)
}

// helperClear clears the cache in KCACHE_DISK_DIR and, once it has renamed
// the version directory aside, writes "renamed" and stops for the
// parent's SIGKILL.
func helperClear() error {
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR")})
	if err != nil {
		return err
	}
	s.hook = func(p string) {
		if p == "clear:renamed" {
			fmt.Println("renamed")
			select {} // until killed
		}
	}
	return s.Clear(context.Background())
}

// TestKilledClearLeftoversGo kills a Clear between its rename of the
// version directory aside and the removal: the next daily maintenance
// pass removes what it left, which no limit counts. Before, only another
// Clear did, and the old cache's bytes stayed in the root meanwhile.
func TestKilledClearLeftoversGo(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now})
	for i := range 4 {
		mustPut(t, s, i, 10<<10)
	}
	settle(t, s)
	cmd := helper(os.Args[0], "clear", "KCACHE_DISK_DIR="+s.root, noExitSleep)
	line, err := killtest.AfterLine(t, cmd)
	if line != "renamed\n" {
		t.Fatalf("the Clear never renamed: %q, %v", line, err)
	}
	if left := files(t, s.root, "0.src"); len(left) != 4 {
		t.Fatalf("the killed Clear left %d entries aside, want 4", len(left))
	}
	writeRaw(t, filepath.Join(s.root, importPrefix+"left"), []byte("blobs"))
	counters := filepath.Join(s.root, tempPrefix+"counters") // a killed write of counters.txt
	writeRaw(t, counters, []byte("kcache-counters 1\n"))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(counters, old, old); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * trimInterval)
	mustPut(t, s, 9, 1000) // starts the day's pass
	settle(t, s)
	if left := files(t, s.root, "0.src"); len(left) != 1 {
		t.Errorf("after the day's pass: %q, want entry 9's alone", left)
	}
	if left := append(files(t, s.root, importPrefix+"*"), files(t, s.root, tempPrefix+"counters")...); len(left) != 0 {
		t.Errorf("after the day's pass: %q", left)
	}
	checkGet(t, s, 9, 1000)
}

// TestExtendedEntryOfLargeSource is TestExtendedEntry for an entry whose
// key holds a source of 300 KB: its header runs past what a lookup reads
// at once, and is read on until it states the entry's length.
func TestExtendedEntryOfLargeSource(t *testing.T) {
	s := openTest(t, Options{})
	key := testKey(1)
	key.Image.Source = append(bytes.Repeat([]byte("// a long comment line\n"), 300<<10/23), key.Image.Source...)
	bin := testBinary(1, 100<<10)
	if err := s.Put(context.Background(), key, kcache.Entry{Binary: bin}); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Get(context.Background(), key); err != nil || !bytes.Equal(e.Binary, bin) {
		t.Fatalf("Get of the entry as stored: %v", err)
	}
	path := srcPath(s.leafDir(s.digests(key)), 0)
	const huge = 1 << 30
	if err := os.Truncate(path, huge); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := s.Get(context.Background(), key)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, kcache.ErrMiss) {
		t.Errorf("Get of the extended entry: %v, want a miss", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > huge/16 {
		t.Errorf("Get allocated %d bytes for an entry of 400 KB", n)
	}
	runtime.ReadMemStats(&before)
	r, err := s.Verify(context.Background(), false)
	runtime.ReadMemStats(&after)
	if err != nil || r.Damaged != 1 {
		t.Errorf("Verify = %+v, %v", r, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > huge/16 {
		t.Errorf("Verify allocated %d bytes for an entry of 400 KB", n)
	}
}
