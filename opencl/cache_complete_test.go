package opencl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// launching is the options of a process that launches what it loads and
// commits explicitly, after its first launches.
var launching = CacheOptions{CommitDelay: time.Hour}

// storedBinary returns the binary the disk tier of ts holds for src.
func (ts *tierSet) storedBinary(t *testing.T, src Source) []byte {
	t.Helper()
	key, err := ts.cache.Key(testFixture(t).dev, src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ts.store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return e.Binary
}

// uniqueSource is testSource with options no other run of the test
// process used: PoCL's own kernel cache, on in the tests, would otherwise
// hand a later run the work-group functions an earlier one compiled.
func uniqueSource(tag string) Source {
	return Source{Code: []byte(testSource), Options: fmt.Sprintf("-D%s -DRUN=%d", tag, time.Now().UnixNano())}
}

// prefill stores src's binary as kcache build does: read right after the
// build, before any launch.
func prefill(t *testing.T, dir string, src Source) []byte {
	t.Helper()
	ts := newTierSet(t, dir) // CommitDelay < 0
	ts.program(t, src)
	bin := ts.storedBinary(t, src)
	if !lacksLaunchCode(bin) {
		t.Fatalf("a binary read before any launch holds launch-time code: %q", Specializations(bin))
	}
	return bin
}

// TestPrefilledEntryIsCompletedOnce: the first process that loads an entry
// stored before any launch rebuilds it, and its binary, read after its
// first launches, replaces the entry; later processes load it as it is.
func TestPrefilledEntryIsCompletedOnce(t *testing.T) {
	dir := t.TempDir()
	src := uniqueSource("COMPLETED_ONCE")
	before := prefill(t, dir, src)

	first := newTierSetWith(t, dir, launching)
	p := first.program(t, src)
	if p.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("first process after the prefill: outcome %v, want built (the rebuild)", p.Outcome)
	}
	first.saxpy(t, p, 2)
	if !bytes.Equal(first.storedBinary(t, src), before) {
		t.Fatal("the entry changed before the rebuilt program's commit")
	}
	p.Commit(context.Background())
	after := first.storedBinary(t, src)
	if lacksLaunchCode(after) || len(after) <= len(before) {
		t.Fatalf("entry not completed: %d bytes (was %d), shapes %q", len(after), len(before), Specializations(after))
	}
	p.Commit(context.Background()) // once only
	if !bytes.Equal(first.storedBinary(t, src), after) {
		t.Error("a second Commit changed the entry")
	}

	second := newTierSetWith(t, dir, launching)
	q := second.program(t, src)
	if q.Outcome != kcache.OutcomeDisk {
		t.Fatalf("second process: outcome %v, want disk", q.Outcome)
	}
	second.saxpy(t, q, 3)
	q.Commit(context.Background())
	second.cache.Close() // releases the program: nothing to store
	if s := second.bins.Stats(); s.Builds != 0 || s.Disk.Hits != 1 {
		t.Errorf("second process stats %+v: want one disk hit and no build", s)
	}
	if !bytes.Equal(second.storedBinary(t, src), after) {
		t.Error("a process that loaded a complete entry wrote it")
	}
}

// TestPrefilledEntryRebuiltByOneProcess: processes that find the same
// incomplete entry at once agree through the tiers on one rebuild.
func TestPrefilledEntryRebuiltByOneProcess(t *testing.T) {
	dir := t.TempDir()
	src := uniqueSource("ONE_REBUILD")
	prefill(t, dir, src)
	const n = 4
	sets := make([]*tierSet, n)
	for i := range sets {
		sets[i] = newTierSetWith(t, dir, launching)
	}
	outcomes := make([]kcache.Outcome, n)
	var wg sync.WaitGroup
	for i, ts := range sets {
		wg.Go(func() {
			p, err := ts.cache.Program(context.Background(), testFixture(t).dev, src)
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Release()
			outcomes[i] = p.Outcome
			k, err := p.Kernel("saxpy")
			if err != nil {
				t.Error(err)
				return
			}
			if err := k.Use(func(k *Kernel) error { return runSaxpy(ts.ctx, ts.q, k, 256, float32(i)) }); err != nil {
				t.Error(err)
			}
			p.Commit(context.Background())
		})
	}
	wg.Wait()
	built := 0
	for _, o := range outcomes {
		if o == kcache.OutcomeBuilt {
			built++
		}
	}
	if built != 1 {
		t.Errorf("outcomes %v: %d rebuilds, want 1", outcomes, built)
	}
	if bin := sets[0].storedBinary(t, src); lacksLaunchCode(bin) {
		t.Error("entry not completed")
	}
}

// TestRebuildWithoutLaunchLeavesEntry: a rebuilt program read before any
// launch holds nothing more; the entry stays as it was, and the claim
// keeps later processes from rebuilding in turn.
func TestRebuildWithoutLaunchLeavesEntry(t *testing.T) {
	dir := t.TempDir()
	src := uniqueSource("NO_LAUNCH")
	before := prefill(t, dir, src)
	first := newTierSetWith(t, dir, launching)
	p := first.program(t, src)
	if p.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("outcome %v, want built", p.Outcome)
	}
	p.Commit(context.Background())
	if !bytes.Equal(first.storedBinary(t, src), before) {
		t.Error("a rebuild that launched nothing replaced the entry")
	}
	second := newTierSetWith(t, dir, launching)
	if q := second.program(t, src); q.Outcome != kcache.OutcomeDisk {
		t.Errorf("second process: outcome %v, want disk: only one process rebuilds", q.Outcome)
	}
}

// TestBuildOnlyCacheLeavesPrefilledEntries: a cache that commits before
// any launch (kcache build) gains nothing from a rebuild and must not
// claim it.
func TestBuildOnlyCacheLeavesPrefilledEntries(t *testing.T) {
	dir := t.TempDir()
	src := uniqueSource("BUILD_ONLY")
	prefill(t, dir, src)
	if p := newTierSet(t, dir).program(t, src); p.Outcome != kcache.OutcomeDisk {
		t.Fatalf("build-only process: outcome %v, want disk", p.Outcome)
	}
	if p := newTierSetWith(t, dir, launching).program(t, src); p.Outcome != kcache.OutcomeBuilt {
		t.Errorf("launching process: outcome %v, want built: the claim must still be free", p.Outcome)
	}
}

// TestPrefilledEntryUnderLoad: many goroutines of one process ask for a
// prefilled program at once, make its kernels (one name it lacks), launch
// them, commit and release twice; one rebuild completes the entry, and a
// later process loads it.
func TestPrefilledEntryUnderLoad(t *testing.T) {
	dir := t.TempDir()
	src := uniqueSource("UNDER_LOAD")
	prefill(t, dir, src)
	ts := newTierSetWith(t, dir, launching) // committed by the goroutines, after their launches
	var wg sync.WaitGroup
	var launch sync.Mutex // one queue: results are checked per launch
	for g := range 16 {
		wg.Go(func() {
			p, err := ts.cache.Program(context.Background(), testFixture(t).dev, src)
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Release()
			defer p.Release()
			if _, err := p.Kernel("missing"); err == nil {
				t.Error("Kernel(missing) succeeded")
			}
			if err := ts.launchSaxpy(p, float32(g), &launch); err != nil {
				t.Error(err)
			}
			if g%3 == 0 {
				p.Commit(context.Background())
			}
		})
	}
	wg.Wait()
	ts.cache.Close()
	if s := ts.bins.Stats(); s.Builds != 1 {
		t.Errorf("%d builds, want the one rebuild", s.Builds)
	}
	later := newTierSetWith(t, dir, launching)
	if p := later.program(t, src); p.Outcome != kcache.OutcomeDisk || lacksLaunchCode(later.storedBinary(t, src)) {
		t.Errorf("later process: outcome %v; the entry must be complete", p.Outcome)
	}
}

// TestCallerCancelledDuringRebuild: a caller whose context ends while the
// rebuild runs returns at once; the next caller gets a working program, and
// so does a later process. (Whether the entry is completed then depends on
// the interleaving: a rebuild abandoned by its only caller and dropped by
// the object tier has used up the claim without replacing the entry; and
// the later process may find this one's rebuild still under way and wait
// for it.)
func TestCallerCancelledDuringRebuild(t *testing.T) {
	dir := t.TempDir()
	src := uniqueSource("CANCELLED")
	prefill(t, dir, src)
	ts := newTierSetWith(t, dir, launching)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if p, err := ts.cache.Program(ctx, testFixture(t).dev, src); err == nil {
		p.Release() // the machine was fast: nothing to cancel
	} else if ctx.Err() == nil {
		t.Fatalf("error %v with the context still live", err)
	}
	p := ts.program(t, src)
	ts.saxpy(t, p, 4)
	p.Commit(context.Background())
	later := newTierSetWith(t, dir, launching)
	q := later.program(t, src)
	switch q.Outcome {
	case kcache.OutcomeDisk, kcache.OutcomeBuilt, kcache.OutcomeWaited:
	default:
		t.Errorf("later process: outcome %v", q.Outcome)
	}
	later.saxpy(t, q, 6)
}

// TestLoadedBinaryNeverGrows pins the runtime behaviour the rebuild rests
// on: PoCL writes a program's binary at its first read, and a program made
// from a binary reports that binary unchanged, whatever its launches
// compiled since. Were that to change, a loaded entry could be completed
// without a rebuild.
func TestLoadedBinaryNeverGrows(t *testing.T) {
	f := testFixture(t)
	src := uniqueSource("NEVER_GROWS")
	p, err := f.ctx.ProgramWithSource(string(src.Code))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if err := p.Build([]Device{f.dev}, src.Options); err != nil {
		t.Fatal(err)
	}
	bins, err := p.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	before := bins[0]
	if !lacksLaunchCode(before) {
		t.Fatalf("a binary read before any launch holds %q", Specializations(before))
	}
	loaded, err := f.ctx.ProgramWithBinary([]Device{f.dev}, [][]byte{before})
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Release()
	if err := loaded.Build([]Device{f.dev}, src.Options); err != nil {
		t.Fatal(err)
	}
	k, err := loaded.NewKernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	if err := runSaxpy(f.ctx, f.q, k, 256, 2); err != nil {
		t.Fatal(err)
	}
	after, err := loaded.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after[0], before) {
		t.Errorf("the loaded program's binary changed after a launch (%d bytes, was %d, shapes %q): "+
			"a loaded entry could now be completed without a rebuild", len(after[0]), len(before), Specializations(after[0]))
	}
}

// readOnlyStore is a disk tier that cannot be written, as a cache on a
// read-only file system or one shared read-only by a fleet.
type readOnlyStore struct{ *disk.Store }

var errReadOnly = errors.New("read-only cache")

func (readOnlyStore) Put(context.Context, *kcache.Key, kcache.Entry) error { return errReadOnly }
func (readOnlyStore) Delete(context.Context, *kcache.Key) error            { return errReadOnly }

// TestReadOnlyCacheIsNotRebuilt: where the claim cannot be stored, no
// process can replace the entry either, so none rebuilds: each loads the
// entry as it is.
func TestReadOnlyCacheIsNotRebuilt(t *testing.T) {
	dir := t.TempDir()
	src := uniqueSource("READ_ONLY")
	prefill(t, dir, src)
	for range 2 {
		ts := newTierSetWith(t, dir, launching)
		ro := kcache.New(kcache.DefaultConfig(func(string) string { return "" }), nil,
			kcache.Tier{Kind: kcache.OutcomeDisk, Store: readOnlyStore{ts.store}})
		c := NewCache(ts.ctx, ro, CacheOptions{CommitDelay: time.Hour, Environ: []string{}})
		p, err := c.Program(context.Background(), testFixture(t).dev, src)
		if err != nil {
			t.Fatal(err)
		}
		if p.Outcome != kcache.OutcomeDisk {
			t.Errorf("read-only cache: outcome %v, want disk", p.Outcome)
		}
		ts.saxpy(t, p, 5)
		p.Commit(context.Background())
		p.Release()
		c.Close()
	}
}

// TestDiskHitLoadedOnce: many goroutines of a new process ask at once for
// a program whose complete binary is on disk. It is loaded once, by the
// caller that comes first, on its own goroutine (objcache.GetOrLoad); the
// others wait for that load and get the same program from memory; nothing
// is built, and every one of them runs it.
func TestDiskHitLoadedOnce(t *testing.T) {
	dir := t.TempDir()
	src := uniqueSource("LOADED_ONCE")
	first := newTierSetWith(t, dir, launching)
	p := first.program(t, src)
	first.saxpy(t, p, 1)
	p.Commit(context.Background())
	first.cache.Close()
	ts := newTierSetWith(t, dir, launching)
	var wg sync.WaitGroup
	var mu, queue sync.Mutex // guard outcomes, and the queue: results are checked per launch
	outcomes := map[kcache.Outcome]int{}
	for g := range 16 {
		wg.Go(func() {
			p, err := ts.cache.Program(context.Background(), testFixture(t).dev, src)
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Release()
			mu.Lock()
			outcomes[p.Outcome]++
			mu.Unlock()
			if err := ts.launchSaxpy(p, float32(g), &queue); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if outcomes[kcache.OutcomeDisk] != 1 || outcomes[kcache.OutcomeMemory] != 15 {
		t.Errorf("outcomes %v, want one load from disk and 15 from memory", outcomes)
	}
	if s := ts.bins.Stats(); s.Builds != 0 {
		t.Errorf("%d builds, want none", s.Builds)
	}
}

// launchSaxpy runs p's saxpy kernel once on ts's queue, holding queue (the
// goroutines of a test share one queue, whose results are checked per
// launch), for goroutines that may not stop the test.
func (ts *tierSet) launchSaxpy(p *BuiltProgram, alpha float32, queue *sync.Mutex) error {
	k, err := p.Kernel("saxpy")
	if err != nil {
		return err
	}
	queue.Lock()
	defer queue.Unlock()
	return k.Use(func(k *Kernel) error { return runSaxpy(ts.ctx, ts.q, k, 256, alpha) })
}

// TestDiskHitKeepsNoBinary: a program loaded from the disk tier keeps no
// copy of its binary (the driver holds one); Blob reads the stored entry
// back, the same bytes, counting no hit; with the entry evicted, Blob
// gives the driver's binary, which still makes a working program.
func TestDiskHitKeepsNoBinary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcs := []Source{uniqueSource("NO_COPY_A"), uniqueSource("NO_COPY_B")}
	first := newTierSetWith(t, dir, launching)
	for _, src := range srcs {
		p := first.program(t, src)
		first.saxpy(t, p, 1)
		p.Commit(ctx)
	}
	first.cache.Close()
	ts := newTierSetWith(t, dir, launching)
	dev := testFixture(t).dev
	for i, src := range srcs {
		p := ts.program(t, src)
		if p.Outcome != kcache.OutcomeDisk {
			t.Fatalf("outcome %v, want disk", p.Outcome)
		}
		if p.h.Value().binary != nil {
			t.Error("a program loaded from disk kept a copy of its binary")
		}
		key, err := ts.cache.Key(dev, src)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := ts.store.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 { // evicted since it was loaded
			if err := ts.store.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
		}
		before := ts.bins.Stats()
		blob, err := p.Blob(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after := ts.bins.Stats(); after.Disk != before.Disk || after.Memory != before.Memory {
			t.Errorf("Blob counted: %+v, then %+v", before, after)
		}
		if i == 0 && !bytes.Equal(blob, stored.Binary) {
			t.Errorf("Blob gave %d bytes, not the stored entry's %d", len(blob), len(stored.Binary))
		}
		other := newTierSet(t, t.TempDir())
		q, err := other.cache.ProgramFromBlob(ctx, dev, src, blob)
		if err != nil {
			t.Fatalf("program %d from its blob: %v", i, err)
		}
		other.saxpy(t, q, 3)
		q.Release()
	}
}
