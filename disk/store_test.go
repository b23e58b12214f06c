package disk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

func TestPutGet(t *testing.T) {
	s := openTest(t, Options{})
	for i, n := range []int{0, 1, 100, 4096, 1 << 20} {
		mustPut(t, s, i, n)
	}
	for i, n := range []int{0, 1, 100, 4096, 1 << 20} {
		checkGet(t, s, i, n)
		e, _ := s.Get(context.Background(), testKey(i))
		if e.BuildTime != time.Duration(i)*time.Millisecond {
			t.Errorf("Get(%d).BuildTime = %v", i, e.BuildTime)
		}
	}
	if _, err := s.Get(context.Background(), testKey(99)); !errors.Is(err, kcache.ErrMiss) {
		t.Fatalf("Get of absent key: %v, want ErrMiss", err)
	}
}

func TestLayout(t *testing.T) {
	s := openTest(t, Options{})
	mustPut(t, s, 1, 10)
	d := testKey(1).Digests()
	image := d.Image.String()[:32]
	leaf := filepath.Join(s.root, "v2", d.Device.String()[:32], image[:2], image, d.Spec.String()[:32], d.Options.String()[:32])
	if got := EntryDir(s.root, testKey(1)); got != leaf {
		t.Errorf("EntryDir = %s, want %s", got, leaf)
	}
	info, err := os.Stat(filepath.Join(leaf, "0.src"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != privateModes.file {
		t.Errorf("0.src: mode %o, want %o", perm, privateModes.file)
	}
	// The binary is in the record's file: one file per entry.
	if _, err := os.Stat(filepath.Join(leaf, "0.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("0.bin: %v, want no such file", err)
	}
	for dir := leaf; dir != filepath.Dir(s.root); dir = filepath.Dir(dir) {
		info, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != privateModes.dir {
			t.Errorf("%s: mode %o, want %o", dir, perm, privateModes.dir)
		}
	}
	if tmp := files(t, s.root, tempPrefix+"*"); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestOldLayoutNotRead: an entry in a tree of layout version 1, which had
// no fan level, is never read, counted or evicted by this version; Clear
// removes it.
func TestOldLayoutNotRead(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	mustPut(t, s, 1, 100)
	d := testKey(1).Digests()
	leaf := s.leafDir(d)
	// The same entry where version 1 put it, and nothing in version 2.
	old := filepath.Join(s.root, "v1", d.Device.String()[:32], d.Image.String()[:32], d.Spec.String()[:32], d.Options.String()[:32])
	if err := os.MkdirAll(filepath.Dir(old), privateModes.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(leaf, old); err != nil {
		t.Fatal(err)
	}
	if isHit(t, s, 1, 100) {
		t.Fatal("hit on an entry of layout version 1")
	}
	var walked int
	if err := s.Walk(ctx, func(Info) error { walked++; return nil }); err != nil {
		t.Fatal(err)
	}
	if walked != 0 {
		t.Errorf("Walk found %d entries, want 0", walked)
	}
	if err := s.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.root, "v1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("version 1 tree after Clear: %v", err)
	}
}

func TestPutTwiceKeepsEntry(t *testing.T) {
	s := openTest(t, Options{})
	mustPut(t, s, 1, 100)
	settle(t, s)
	before := snapshot(t, s.root)
	size, _ := s.Size(context.Background())
	mustPut(t, s, 1, 100)
	settle(t, s)
	if after := snapshot(t, s.root); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("second Put of a sound entry changed files")
	}
	if size2, _ := s.Size(context.Background()); size2 != size {
		t.Errorf("size %d after second Put, want %d", size2, size)
	}
}

func TestDelete(t *testing.T) {
	s := openTest(t, Options{})
	mustPut(t, s, 1, 100)
	mustPut(t, s, 2, 100)
	ctx := context.Background()
	if err := s.Delete(ctx, testKey(1)); err != nil {
		t.Fatal(err)
	}
	if isHit(t, s, 1, 100) {
		t.Fatal("hit after Delete")
	}
	checkGet(t, s, 2, 100)
	if err := s.Delete(ctx, testKey(1)); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if err := s.Delete(ctx, testKey(3)); err != nil {
		t.Fatalf("Delete of absent key: %v", err)
	}
	_, total := walkSum(t, s)
	if size, _ := s.Size(ctx); size != total {
		t.Errorf("size file %d, walk %d", size, total)
	}
}

func TestImageSizeLimits(t *testing.T) {
	srcLen := int64(len(testKey(1).Image.Source))
	tests := []struct {
		name     string
		min, max int64
		stored   bool
	}{
		{"no limits", 0, 0, true},
		{"within", srcLen, srcLen, true},
		{"below min", srcLen + 1, 0, false},
		{"above max", 0, srcLen - 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t, Options{MinImageSize: tt.min, MaxImageSize: tt.max})
			mustPut(t, s, 1, 100)
			if got := isHit(t, s, 1, 100); got != tt.stored {
				t.Fatalf("stored = %v, want %v", got, tt.stored)
			}
			unlock, err := s.Lock(context.Background(), testKey(1))
			if err != nil {
				t.Fatal(err)
			}
			unlock()
		})
	}
}

func TestEntryLargerThanTargetNotStored(t *testing.T) {
	s := openTest(t, Options{MaxSize: 1000})
	mustPut(t, s, 1, 600) // target is 500
	if isHit(t, s, 1, 600) {
		t.Fatal("entry larger than the eviction target was stored")
	}
	mustPut(t, s, 2, 100)
	checkGet(t, s, 2, 100)
}

// weakDigests maps every key to the same directory, forcing collisions.
func weakDigests(k *kcache.Key) kcache.Digests {
	d := k.Digests()
	var fixed kcache.Digest
	return kcache.Digests{Key: d.Key, Device: fixed, Image: fixed, Spec: fixed, Options: fixed}
}

func TestCollisions(t *testing.T) {
	s := openTest(t, Options{})
	s.digests, s.weakDigests = weakDigests, true
	ctx := context.Background()
	for i := range maxSlots {
		mustPut(t, s, i, 50+i)
	}
	leaf := s.leafDir(weakDigests(testKey(0)))
	for i := range maxSlots {
		if _, err := os.Stat(srcPath(leaf, i)); err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
		checkGet(t, s, i, 50+i)
	}
	err := s.Put(ctx, testKey(maxSlots), kcache.Entry{Binary: []byte("x")})
	if !errors.Is(err, ErrCollision) {
		t.Fatalf("Put into a full leaf: %v, want ErrCollision", err)
	}
	// A gap in the chain does not hide the slots after it.
	if err := s.Delete(ctx, testKey(0)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < maxSlots; i++ {
		checkGet(t, s, i, 50+i)
	}
	mustPut(t, s, maxSlots, 7)
	checkGet(t, s, maxSlots, 7)
	if _, err := os.Stat(srcPath(leaf, 0)); err != nil {
		t.Fatalf("new key did not take the free slot 0: %v", err)
	}
	r, err := s.Verify(ctx, false)
	if err != nil || r.Entries != maxSlots || r.Damaged != 0 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

// damage is one way a file can be spoiled on disk.
type damage struct {
	name string
	file string // "src" or "bin"
	do   func(t *testing.T, path string)
}

var damages = []damage{
	{"delete record", "src", func(t *testing.T, p string) { os.Remove(p) }},
	{"delete binary", "bin", func(t *testing.T, p string) { os.Remove(p) }},
	{"truncate record", "src", func(t *testing.T, p string) { truncate(t, p, 0.5) }},
	{"truncate binary", "bin", func(t *testing.T, p string) { truncate(t, p, 0.5) }},
	{"empty record", "src", func(t *testing.T, p string) { truncate(t, p, 0) }},
	{"empty binary", "bin", func(t *testing.T, p string) { truncate(t, p, 0) }},
	{"extend binary", "bin", func(t *testing.T, p string) { appendTo(t, p, []byte{0}) }},
	{"extend record", "src", func(t *testing.T, p string) { appendTo(t, p, []byte{0}) }},
	{"flip record first bit", "src", func(t *testing.T, p string) { flip(t, p, 0) }},
	{"flip record last bit", "src", func(t *testing.T, p string) { flip(t, p, -1) }},
	{"flip binary bit", "bin", func(t *testing.T, p string) { flip(t, p, 7) }},
	{"garbage record", "src", func(t *testing.T, p string) { writeRaw(t, p, []byte("garbage")) }},
	{"record is a directory", "src", func(t *testing.T, p string) { os.Remove(p); os.Mkdir(p, 0o700) }},
}

func truncate(t *testing.T, p string, frac float64) {
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(float64(info.Size())*frac)); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, p string, b []byte) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
}

// flip flips one bit of the file at p; bit < 0 counts from the end.
func flip(t *testing.T, p string, bit int) {
	b, err := os.ReadFile(p)
	if err != nil || len(b) == 0 {
		t.Fatalf("flip %s: %v", p, err)
	}
	if bit < 0 {
		bit += len(b) * 8
	}
	bit %= len(b) * 8
	b[bit/8] ^= 1 << (bit % 8)
	writeRaw(t, p, b)
}

// TestDamageIsAMiss damages entries of both versions of the format: one
// file (record and binary) as Put writes it, and a record and a .bin as
// caches written before hold them.
func TestDamageIsAMiss(t *testing.T) {
	for _, d := range damages {
		t.Run("legacy/"+d.name, func(t *testing.T) {
			s := openTest(t, Options{})
			putLegacy(t, s, 1, 3000)
			mustPut(t, s, 2, 3000)
			checkGet(t, s, 1, 3000)
			leaf := s.leafDir(s.digests(testKey(1)))
			path := srcPath(leaf, 0)
			if d.file == "bin" {
				path = binPath(leaf, 0)
			}
			d.do(t, path)
			checkDamageIsAMiss(t, s, d.name == "record is a directory", false, path)
		})
	}
	for _, d := range entryDamages {
		t.Run(d.name, func(t *testing.T) {
			s := openTest(t, Options{})
			mustPut(t, s, 1, 3000)
			mustPut(t, s, 2, 3000)
			path := srcPath(s.leafDir(s.digests(testKey(1))), 0)
			d.do(t, path, binaryOffset(t, path))
			checkDamageIsAMiss(t, s, d.name == "file is a directory", d.name == "delete file", path)
		})
	}
}

// entryDamages spoil an entry of version 2 (one file); off is where its
// binary starts.
var entryDamages = []struct {
	name string
	do   func(t *testing.T, path string, off int)
}{
	{"delete file", func(t *testing.T, p string, _ int) { os.Remove(p) }},
	{"empty file", func(t *testing.T, p string, _ int) { os.Truncate(p, 0) }},
	{"truncate in the record", func(t *testing.T, p string, off int) { os.Truncate(p, int64(off/2)) }},
	{"binary cut off", func(t *testing.T, p string, off int) { os.Truncate(p, int64(off)) }},
	{"binary truncated", func(t *testing.T, p string, off int) { os.Truncate(p, int64(off+1500)) }},
	{"binary one byte short", func(t *testing.T, p string, _ int) { truncateBy(t, p, 1) }},
	{"extended", func(t *testing.T, p string, _ int) { appendTo(t, p, []byte{0}) }},
	{"flip first bit", func(t *testing.T, p string, _ int) { flip(t, p, 0) }},
	{"flip a record bit", func(t *testing.T, p string, off int) { flip(t, p, off*4) }},
	{"flip the check's last bit", func(t *testing.T, p string, off int) { flip(t, p, off*8-1) }},
	{"flip a binary bit", func(t *testing.T, p string, off int) { flip(t, p, off*8+7) }},
	{"flip the last bit", func(t *testing.T, p string, _ int) { flip(t, p, -1) }},
	{"garbage", func(t *testing.T, p string, _ int) { writeRaw(t, p, []byte("garbage")) }},
	{"file is a directory", func(t *testing.T, p string, _ int) { os.Remove(p); os.Mkdir(p, 0o700) }},
}

// truncateBy shortens the file at p by n bytes.
func truncateBy(t *testing.T, p string, n int64) {
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, info.Size()-n); err != nil {
		t.Fatal(err)
	}
}

// checkDamageIsAMiss checks that key 1, damaged at path, is a miss while
// key 2 is a hit; that Verify reports the damage (unless the entry is
// gone, which is no damage); and that a Put replaces it.
func checkDamageIsAMiss(t *testing.T, s *Store, dir, gone bool, path string) {
	t.Helper()
	if d, err := s.Get(context.Background(), testKey(1)); err == nil && len(d.Binary) != 3000 {
		t.Fatal("damaged entry served")
	}
	if isHit(t, s, 1, 3000) {
		t.Fatal("damaged entry served")
	}
	checkGet(t, s, 2, 3000)
	r, err := s.Verify(context.Background(), false)
	damaged := 1
	if gone {
		damaged = 0
	}
	if err != nil || r.Entries != 1 || r.Damaged+r.Incomplete != damaged {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	// The build goes on and its Put replaces the damaged entry.
	if dir {
		os.Remove(path)
	}
	mustPut(t, s, 1, 3000)
	checkGet(t, s, 1, 3000)
}

// TestDamagedEntryEveryBit flips every bit of a small entry of version 2,
// one at a time, and checks each is a miss: no single flip can make a hit
// hand back other bytes.
func TestDamagedEntryEveryBit(t *testing.T) {
	s := openTest(t, Options{})
	mustPut(t, s, 1, 40)
	path := srcPath(s.leafDir(s.digests(testKey(1))), 0)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for bit := range len(good) * 8 {
		b := bytes.Clone(good)
		b[bit/8] ^= 1 << (bit % 8)
		writeRaw(t, path, b)
		if _, err := s.Get(context.Background(), testKey(1)); !errors.Is(err, kcache.ErrMiss) {
			t.Fatalf("bit %d flipped: %v, want a miss", bit, err)
		}
	}
	writeRaw(t, path, good)
	checkGet(t, s, 1, 40)
}

// TestLegacyEntries checks that entries of version 1 (a record and a .bin)
// are hits, are replaced whole by a Put of version 2, and are deleted with
// their .bin.
func TestLegacyEntries(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	putLegacy(t, s, 1, 500)
	putLegacy(t, s, 2, 600)
	checkGet(t, s, 1, 500)
	blob, err := s.Export(ctx, testKey(1))
	if err != nil {
		t.Fatalf("Export of a legacy entry: %v", err)
	}
	if b, err := DecodeBlob(blob); err != nil || len(b.Binary) != 500 {
		t.Fatalf("DecodeBlob: %v", err)
	}
	leaf := s.leafDir(s.digests(testKey(1)))
	os.Truncate(binPath(leaf, 0), 10) // damaged: Put replaces it
	mustPut(t, s, 1, 700)
	checkGet(t, s, 1, 700)
	if _, err := os.Stat(binPath(leaf, 0)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the legacy .bin stayed beside an entry of version 2: %v", err)
	}
	if err := s.Delete(ctx, testKey(2)); err != nil {
		t.Fatal(err)
	}
	if left := files(t, s.dir, "*.bin"); len(left) != 0 {
		t.Fatalf("Delete left %v", left)
	}
	r, err := s.Verify(ctx, false)
	if err != nil || r.Entries != 1 || r.Damaged+r.Incomplete != 0 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	// A .bin beside an entry of version 2 is nothing Put leaves: the
	// entry's own binary is still served, and Verify reports the slot.
	writeRaw(t, binPath(leaf, 0), []byte("stray"))
	checkGet(t, s, 1, 700)
	if r, err := s.Verify(ctx, false); err != nil || r.Damaged != 1 {
		t.Fatalf("Verify with a stray .bin = %+v, %v", r, err)
	}
}

// TestRandomDamage spoils files at random, many times over, and checks
// that every lookup is a hit with the right bytes or a miss.
func TestRandomDamage(t *testing.T) {
	s := openTest(t, Options{MaxSize: 1 << 20})
	rng := rand.New(rand.NewPCG(1, 2))
	const keys = 12
	size := func(i int) int { return 100 + 997*i }
	for i := range keys {
		mustPut(t, s, i, size(i))
	}
	rounds := 150
	if testing.Short() {
		rounds = 40
	}
	for range rounds {
		victims := append(files(t, s.dir, "*.src"), files(t, s.dir, "*.bin")...)
		victims = append(victims, filepath.Join(s.shardsDir(), shardSizeName))
		p := victims[rng.IntN(len(victims))]
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		switch op := rng.IntN(5); {
		case op == 0 && len(b) > 0:
			b[rng.IntN(len(b))] ^= byte(1 << rng.IntN(8))
		case op == 1:
			b = b[:rng.IntN(len(b)+1)]
		case op == 2:
			b = append(b, byte(rng.IntN(256)))
		case op == 3:
			b = []byte(fmt.Sprint(-rng.IntN(1000))) // garbage, and a negative size
		default:
			os.Remove(p)
			b = nil
		}
		if b != nil {
			writeRaw(t, p, b)
		}
		for i := range keys {
			if !isHit(t, s, i, size(i)) {
				mustPut(t, s, i, size(i))
				if !isHit(t, s, i, size(i)) {
					// A damaged size file may read as a total past the
					// ceiling: that Put was not stored, and the
					// background step it started corrects the total.
					settle(t, s)
					mustPut(t, s, i, size(i))
				}
				checkGet(t, s, i, size(i))
			}
		}
	}
	r, err := s.Verify(context.Background(), true)
	if err != nil || r.Entries != keys {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	_, total := walkSum(t, s)
	if got, _ := s.Size(context.Background()); got != total {
		t.Fatalf("size %d, walk %d", got, total)
	}
}

func TestConcurrentGoroutines(t *testing.T) {
	s := openTest(t, Options{MaxSize: 64 << 10})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for range 200 {
				i := rng.IntN(20)
				switch rng.IntN(4) {
				case 0:
					mustPut(t, s, i, 1000+i)
				case 1:
					s.Delete(context.Background(), testKey(i))
				default:
					isHit(t, s, i, 1000+i)
				}
			}
		})
	}
	wg.Wait()
	r, err := s.Verify(context.Background(), false)
	if err != nil || r.Damaged != 0 || r.Incomplete != 0 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

func TestHitWritesNothing(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now})
	for i := range 5 {
		mustPut(t, s, i, 5000)
	}
	settle(t, s)
	before := snapshot(t, s.root)
	clock.Advance(59 * time.Minute)
	for range 100 {
		for i := range 5 {
			checkGet(t, s, i, 5000)
		}
	}
	after := snapshot(t, s.root)
	if len(after) != len(before) {
		t.Fatalf("hits created or removed files: %d before, %d after", len(before), len(after))
	}
	for p, st := range before {
		if after[p] != st {
			t.Errorf("%s changed on hits: %+v -> %+v", p, st, after[p])
		}
	}
}

func TestAccessTimeRefreshedHourly(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now})
	mustPut(t, s, 1, 100)
	src := srcPath(s.leafDir(s.digests(testKey(1))), 0)
	mtime := func() time.Time {
		info, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		return info.ModTime()
	}
	t0 := clock.Now()
	steps := []struct {
		advance time.Duration
		want    time.Time
	}{
		{0, t0},
		{30 * time.Minute, t0},
		{29 * time.Minute, t0},
		{2 * time.Minute, t0.Add(61 * time.Minute)}, // past the hour: refreshed
		{30 * time.Minute, t0.Add(61 * time.Minute)},
		{5 * time.Hour, t0.Add(6*time.Hour + 31*time.Minute)},
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		checkGet(t, s, 1, 100)
		if got := mtime(); !got.Equal(st.want) {
			t.Fatalf("step %d: mtime %v, want %v", i, got, st.want)
		}
	}
}

func TestContextCanceled(t *testing.T) {
	s := openTest(t, Options{})
	mustPut(t, s, 1, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(ctx, testKey(1)); !errors.Is(err, kcache.ErrMiss) || !errors.Is(err, context.Canceled) {
		t.Errorf("Get: %v", err)
	}
	if _, err := s.Lock(ctx, testKey(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Lock: %v", err)
	}
}

func TestFromConfig(t *testing.T) {
	c := kcache.DefaultConfig(func(string) string { return "" })
	c.Dir = "/x"
	c.MinImageSize = 3
	c.EvictTo = 0.25
	c.BuildWait = time.Minute
	o := FromConfig(c)
	if o.Dir != "/x" || o.MaxSize != kcache.DefaultMaxSize || o.AgeThreshold != kcache.DefaultAgeThreshold ||
		o.MaxImageSize != kcache.DefaultMaxImageSize || o.MinImageSize != 3 || o.EvictTo != 0.25 || o.BuildWait != time.Minute {
		t.Fatalf("FromConfig = %+v", o)
	}
}

func TestLogsDamage(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	s := openTest(t, Options{Logger: newTestLogger(&buf, &mu)})
	mustPut(t, s, 1, 100)
	flip(t, srcPath(s.leafDir(s.digests(testKey(1))), 0), -1) // the binary's last bit
	isHit(t, s, 1, 100)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "damaged cache entry") {
		t.Fatalf("no warning logged: %q", buf.String())
	}
}
