package disk

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kcache/kcache"
)

// The scale benchmark: a cache of N entries at its limit, then writers
// (1 or 8 processes) that each put scalePuts fresh entries as fast as they
// can, with a hit after each Put, while eviction runs in the background.
//
//	KCACHE_DISK_BENCH_ENTRIES  comma-separated sizes (default 1000: CI's smoke run)
//	KCACHE_DISK_BENCH_DIR      where the fixtures go (default the temporary directory)
//	KCACHE_DISK_BENCH_PUTS     Puts per writer (default 300)
//	KCACHE_DISK_BENCH_CLOSE    how long a writer's Close waits for eviction (default 10m)
//
// The fixture is written directly in the on-disk layout (records, binaries
// of scaleBinary bytes, journals, size file), not through N Puts; access
// times rise with the entry's number, so exact LRU would evict the lowest
// numbers first.

const (
	scaleBinary  = 64  // bytes: small, so that 10^6 entries fit a small disk
	scaleEvictTo = 0.9 // each crossing evicts a tenth of the cache
	scaleKeyBase = 1 << 30
)

func scaleEnv(name string, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func BenchmarkEvictionScale(b *testing.B) {
	puts, _ := strconv.Atoi(scaleEnv("KCACHE_DISK_BENCH_PUTS", "300"))
	for _, f := range strings.Split(scaleEnv("KCACHE_DISK_BENCH_ENTRIES", "1000"), ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			b.Fatal(err)
		}
		parent, err := os.MkdirTemp(scaleEnv("KCACHE_DISK_BENCH_DIR", os.TempDir()), "kcache-scale-")
		if err != nil {
			b.Fatal(err)
		}
		dir := filepath.Join(parent, "cache")
		inodes := buildScale(b, dir, n)
		for _, procs := range []int{1, 8} {
			b.Run(fmt.Sprintf("entries=%d/writers=%d", n, procs), func(b *testing.B) {
				for b.Loop() {
					r := runScale(b, dir, n, procs, puts)
					b.ReportMetric(float64(r.put[len(r.put)/2].Microseconds()), "put-p50-µs")
					b.ReportMetric(float64(r.put[len(r.put)*99/100].Microseconds()), "put-p99-µs")
					b.ReportMetric(float64(r.put[len(r.put)-1].Microseconds())/1000, "put-max-ms")
					b.ReportMetric(float64(r.hit[len(r.hit)/2].Microseconds()), "hit-p50-µs")
					b.ReportMetric(float64(r.hit[len(r.hit)*99/100].Microseconds()), "hit-p99-µs")
					b.ReportMetric(r.peak, "peak/max")
					b.ReportMetric(r.evictRate, "evicted/s")
					b.ReportMetric(float64(r.evicted), "evicted")
					b.ReportMetric(r.lru, "evicted-in-oldest-10%")
					b.ReportMetric(r.lruHalf, "evicted-in-oldest-50%")
					b.ReportMetric(float64(r.skipped), "not-stored")
					b.ReportMetric(inodes, "inodes/entry")
					if len(r.sched) > 0 {
						cpu, runnable := schedShares(r.sched, 1)
						b.ReportMetric(cpu, "put-oncore-share")
						b.ReportMetric(runnable, "put-runnable-share")
						cpu, runnable = schedShares(r.sched, 0.01)
						b.ReportMetric(cpu, "slowest1%-oncore-share")
						b.ReportMetric(runnable, "slowest1%-runnable-share")
					}
					for _, p := range phaseNames {
						if d := r.phases[p]; len(d) > 0 {
							b.ReportMetric(float64(d[len(d)/2].Microseconds()), p+"-p50-µs")
							b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), p+"-p99-µs")
						}
					}
				}
			})
		}
		os.RemoveAll(parent)
	}
}

// buildScale writes n entries directly in the on-disk layout and returns
// the inodes they take per entry.
func buildScale(b *testing.B, dir string, n int) float64 {
	s := openTest(b, Options{Dir: dir, EvictionDisabled: true})
	before := usedInodes(b, s.dir)
	base := time.Now().Add(-time.Duration(n+10) * time.Second)
	var mu sync.Mutex
	var journals [shardCount][]byte
	var totals shardTotals
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	const workers = 4
	for w := range workers {
		wg.Go(func() {
			var local [shardCount][]byte
			var sums [shardCount]int64
			for i := w; i < n && failed.Load() == nil; i += workers {
				id, size, err := writeScaleEntry(s, i, base.Add(time.Duration(i)*time.Second))
				if err != nil {
					failed.Store(&err)
					return
				}
				local[id.shard()] = append(local[id.shard()], journalRec{id, size}.marshal()...)
				sums[id.shard()] += size
			}
			mu.Lock()
			defer mu.Unlock()
			for x := range shardCount {
				journals[x] = append(journals[x], local[x]...)
				totals.bytes[x] += sums[x]
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatalf("building the fixture: %v", *err)
	}
	for x := range shardCount {
		totals.known[x] = true
		if len(journals[x]) > 0 {
			writeRaw(b, s.journalPath(x), journals[x])
		}
	}
	writeRaw(b, s.shardsDir()+"/"+shardSizeName, totals.marshal())
	writeRaw(b, s.dir+"/"+trimName, formatDecimal(time.Now().Unix()))
	return float64(usedInodes(b, s.dir)-before) / float64(n)
}

// writeScaleEntry writes entry i as a Put would, with access time at.
func writeScaleEntry(s *Store, i int, at time.Time) (leafID, int64, error) {
	k := testKey(i)
	d := k.Digests()
	id := idFor(d)
	leaf := id.path(s.dir)
	for p := len(s.dir); p < len(leaf); {
		next := strings.IndexByte(leaf[p+1:], '/')
		if next < 0 {
			p = len(leaf)
		} else {
			p += 1 + next
		}
		if err := unix.Mkdir(leaf[:p], uint32(privateModes.dir)); err != nil && err != unix.EEXIST {
			return id, 0, fmt.Errorf("mkdir %s: %w", leaf[:p], err)
		}
	}
	enc, _ := k.MarshalBinary()
	bin := testBinary(i, scaleBinary)
	raw := newRawRecord(enc, bin, time.Millisecond, at)
	src := raw.marshal()
	if err := os.WriteFile(binPath(leaf, 0), bin, privateModes.file); err != nil {
		return id, 0, err
	}
	if err := os.WriteFile(srcPath(leaf, 0), src, privateModes.file); err != nil {
		return id, 0, err
	}
	return id, int64(len(src) + len(bin)), os.Chtimes(srcPath(leaf, 0), at, at)
}

func usedInodes(b *testing.B, dir string) uint64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		b.Fatal(err)
	}
	return st.Files - st.Ffree
}

// scaleResult is what one run measured.
type scaleResult struct {
	put, hit  []time.Duration // sorted
	peak      float64         // the highest counted total over MaxSize
	evicted   int64
	evictRate float64 // entries evicted per second of a step's time
	lru       float64 // share of evicted fixture entries in the oldest tenth
	lruHalf   float64 // share of evicted fixture entries in the oldest half
	skipped   int64   // Puts not stored at the ceiling
	// phases holds, by phase of a stored Put, its durations (sorted): lock
	// (the leaf's directories, open and flock), slot (the probe), count
	// (journal and size file), write (the files, from count to return).
	phases map[string][]time.Duration
	// sched holds, for each Put, its duration and how long its thread
	// ran and waited for a core meanwhile (from the kernel's schedstat).
	sched []putSched
}

// putSched is one Put's time, split by what its thread was doing.
type putSched struct{ took, cpu, runnable time.Duration }

// schedShares returns, for the slowest share of Puts (by took), the
// fraction of their time their thread spent on a core and waiting for one.
// The rest it spent blocked in the kernel or asleep.
func schedShares(sched []putSched, slowest float64) (cpu, runnable float64) {
	s := slices.Clone(sched)
	slices.SortFunc(s, func(a, b putSched) int { return cmp.Compare(b.took, a.took) })
	s = s[:max(1, int(float64(len(s))*slowest))]
	var took, c, r time.Duration
	for _, p := range s {
		took, c, r = took+p.took, c+p.cpu, r+p.runnable
	}
	if took <= 0 {
		return 0, 0
	}
	return float64(c) / float64(took), float64(r) / float64(took)
}

// phaseNames are a Put's phases in order.
var phaseNames = []string{"lock", "slot", "count", "write"}

// runScale sets MaxSize to what the cache holds, runs the writers and
// measures.
func runScale(b *testing.B, dir string, n, procs, puts int) scaleResult {
	b.StopTimer()
	probe := openTest(b, Options{Dir: dir, EvictionDisabled: true})
	maxSize, err := probe.Size(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := helper(os.Args[0], "scaleput", "KCACHE_DISK_DIR="+dir, "KCACHE_DISK_MAX="+strconv.FormatInt(maxSize, 10),
			"KCACHE_DISK_N="+strconv.Itoa(puts), "KCACHE_DISK_SEED="+strconv.Itoa(scaleKeyBase+p*puts+int(time.Now().UnixNano()%1e6)*1000),
			"KCACHE_DISK_KEYS="+strconv.Itoa(n), "KCACHE_DISK_OUT="+filepath.Join(out, strconv.Itoa(p)))
		cmds = append(cmds, cmd)
	}
	b.StartTimer()
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
	}
	done := make(chan error, procs)
	for _, cmd := range cmds {
		go func() { done <- cmd.Wait() }()
	}
	var peak int64
	for running := procs; running > 0; {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("writer: %v", err)
			}
			running--
		case <-time.After(10 * time.Millisecond):
		}
		total, _ := probe.readTotals(context.Background()).total()
		peak = max(peak, total)
	}
	b.StopTimer()
	r := scaleResult{peak: float64(peak) / float64(maxSize), phases: map[string][]time.Duration{}}
	var stepTime time.Duration
	for p := range procs {
		readScaleOut(b, filepath.Join(out, strconv.Itoa(p)), &r, &stepTime)
	}
	slices.Sort(r.put)
	slices.Sort(r.hit)
	for _, d := range r.phases {
		slices.Sort(d)
	}
	if stepTime > 0 {
		r.evictRate = float64(r.evicted) / stepTime.Seconds()
	}
	r.lru, r.lruHalf = lruShares(probe, n)
	b.StartTimer()
	return r
}

// lruShares samples fixture entries and returns, of the evicted ones, the
// share that exact LRU would have evicted in a complete eviction (the
// oldest 1-scaleEvictTo of the fixture) and the share in the oldest half.
// A run may end with eviction still under way (Close's wait ran out): the
// first share still holds, since every step evicts the oldest part of its
// shards.
func lruShares(s *Store, n int) (oldest, half float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	sample := min(n, 20000)
	var gone []int
	for range sample {
		i := rng.IntN(n)
		if _, err := os.Lstat(srcPath(idFor(testKey(i).Digests()).path(s.dir), 0)); err != nil {
			gone = append(gone, i)
		}
	}
	if len(gone) == 0 {
		return 1, 1
	}
	k := int(float64(n) * (1 - scaleEvictTo))
	in, inHalf := 0, 0
	for _, i := range gone {
		if i < k {
			in++
		}
		if i < n/2 {
			inHalf++
		}
	}
	return float64(in) / float64(len(gone)), float64(inHalf) / float64(len(gone))
}

func readScaleOut(b *testing.B, path string, r *scaleResult, stepTime *time.Duration) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kind string
		var v int64
		if strings.HasPrefix(sc.Text(), "sched ") {
			var p putSched
			if _, err := fmt.Sscan(sc.Text(), &kind, &p.took, &p.cpu, &p.runnable); err != nil {
				b.Fatal(err)
			}
			r.sched = append(r.sched, p)
			continue
		}
		if _, err := fmt.Sscan(sc.Text(), &kind, &v); err != nil {
			b.Fatal(err)
		}
		switch kind {
		case "put":
			r.put = append(r.put, time.Duration(v))
		case "hit":
			r.hit = append(r.hit, time.Duration(v))
		case "evicted":
			r.evicted += v
		case "steptime":
			*stepTime += time.Duration(v)
		case "skipped":
			r.skipped += v
		default:
			r.phases[kind] = append(r.phases[kind], time.Duration(v))
		}
	}
}

// helperScalePut is one writer of the scale benchmark: KCACHE_DISK_N Puts
// of fresh keys from KCACHE_DISK_SEED, each followed by a hit on one of
// the newer half of the KCACHE_DISK_KEYS fixture entries; then Close. It
// writes its measurements to KCACHE_DISK_OUT.
func helperScalePut() error {
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR"), MaxSize: int64(envInt("KCACHE_DISK_MAX")), EvictTo: scaleEvictTo})
	if err != nil {
		return err
	}
	s.sync = false
	ctx := context.Background()
	keys, base := envInt("KCACHE_DISK_KEYS"), envInt("KCACHE_DISK_SEED")
	rng := rand.New(rand.NewPCG(uint64(base), 3))
	var out strings.Builder
	var skipped int
	// The Put's phases, from the hook's points: only the Put's goroutine
	// reaches a "put:" point, so the hook needs no lock for them.
	var last time.Time
	var counted bool
	phases := map[string]string{"put:locked": "lock", "put:slot": "slot", "put:counted": "count"}
	s.hook = func(point string) {
		if name, ok := phases[point]; ok {
			now := time.Now()
			fmt.Fprintf(&out, "%s %d\n", name, now.Sub(last))
			last, counted = now, name == "count"
		}
	}
	// The Puts run on one thread, whose schedstat then says how long each
	// Put ran on a core and how long it waited for one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := range envInt("KCACHE_DISK_N") {
		k, bin := testKey(base+i), testBinary(base+i, scaleBinary)
		cpu0, wait0, schedOK := threadSched()
		t0 := time.Now()
		last, counted = t0, false
		if err := s.Put(ctx, k, kcache.Entry{Binary: bin}); err != nil {
			return err
		}
		end := time.Now()
		fmt.Fprintf(&out, "put %d\n", end.Sub(t0))
		if cpu1, wait1, ok := threadSched(); ok && schedOK {
			fmt.Fprintf(&out, "sched %d %d %d\n", end.Sub(t0), cpu1-cpu0, wait1-wait0)
		}
		if counted {
			fmt.Fprintf(&out, "write %d\n", end.Sub(last))
		}
		if _, err := os.Lstat(srcPath(s.leafDir(s.digests(k)), 0)); err != nil {
			skipped++
		}
		h := keys/2 + rng.IntN(keys-keys/2)
		t0 = time.Now()
		if _, err := s.Get(ctx, testKey(h)); err == nil {
			fmt.Fprintf(&out, "hit %d\n", time.Since(t0))
		}
	}
	wait, err := time.ParseDuration(scaleEnv("KCACHE_DISK_BENCH_CLOSE", "10m"))
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := s.Close(cctx); err != nil && cctx.Err() == nil {
		return err
	}
	fmt.Fprintf(&out, "evicted %d\nsteptime %d\nskipped %d\n", s.counts.evicted.Load(), s.counts.stepTime.Load(), skipped)
	return os.WriteFile(os.Getenv("KCACHE_DISK_OUT"), []byte(out.String()), 0o600)
}

// threadSched reads the calling thread's schedstat: nanoseconds on a core
// and waiting for one. ok is false where the kernel does not keep it.
func threadSched() (cpu, wait time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, 0, false
	}
	var c, w int64
	if _, err := fmt.Sscan(string(b), &c, &w); err != nil {
		return 0, 0, false
	}
	return time.Duration(c), time.Duration(w), true
}
