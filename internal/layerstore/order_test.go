package layerstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
)

func testOrder() Order {
	return Order{
		Key:     kcache.Digest{1, 2, 3},
		Format:  FormatBuild,
		Source:  []byte("__kernel void k(__global float *x) { x[0] = SCALE; }\n#include \"scale.h\"\n"),
		Options: "-DN=4 -I inc",
		Dir:     "/work/app",
		Env:     []string{"POCL_KERNEL_CACHE=0", "KCACHE_DIR=/c", "HOME=/home/u"},
		Device:  keyparts.OpenCLDevice{PlatformName: "Portable Computing Language", Name: "cpu-haswell"},
		Log:     "warning: /tmp/pocl/tempfile.cl:1:2: unused\n",
		PID:     42,
	}
}

func TestOrderRoundTrip(t *testing.T) {
	o := testOrder()
	b, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOrder(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, o) {
		t.Errorf("decode(encode(o)) = %+v, want %+v", got, o)
	}
}

// TestOrderRejectsDamage: a torn write, a flipped byte, another file's
// bytes and orders that could not be acted on are errors, never orders.
func TestOrderRejectsDamage(t *testing.T) {
	good, _ := testOrder().Encode()
	flipped := bytes.Clone(good)
	flipped[len(flipped)-3] ^= 0x20
	invalid := func(f func(*Order)) []byte {
		o := testOrder()
		f(&o)
		b, _ := o.Encode()
		return b
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"foreign":        []byte("\x7fELF"),
		"torn":           good[:len(good)-10],
		"header only":    good[:len(orderMagic)+10],
		"flipped":        flipped,
		"no key":         invalid(func(o *Order) { o.Key = kcache.Digest{} }),
		"other format":   invalid(func(o *Order) { o.Format = FormatLinked }),
		"relative dir":   invalid(func(o *Order) { o.Dir = "app" }),
		"bad env":        invalid(func(o *Order) { o.Env = []string{"NOEQUALS"} }),
		"env with a NUL": invalid(func(o *Order) { o.Env = []string{"A=b\x00c"} }),
	} {
		if _, err := DecodeOrder(b); !errors.Is(err, ErrOrder) {
			t.Errorf("%s: err = %v, want ErrOrder", name, err)
		}
	}
}

func FuzzDecodeOrder(f *testing.F) {
	good, _ := testOrder().Encode()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("kcache-layer-order-1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := DecodeOrder(b)
		if err != nil {
			if !errors.Is(err, ErrOrder) {
				t.Fatalf("error %v does not wrap ErrOrder", err)
			}
			return
		}
		if o.check() != nil {
			t.Fatal("decoded an order that fails its checks")
		}
		again, err := o.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if o2, err := DecodeOrder(again); err != nil || !reflect.DeepEqual(o2, o) {
			t.Fatalf("re-encoding changed the order: %v", err)
		}
	})
}

func TestWorkerEnv(t *testing.T) {
	base := []string{"PATH=/bin", "POCL_DEVICES=basic", "OPENCL_LAYERS=/l.so", "KCACHE_DIR=/other", "LANG=C"}
	o := Order{Env: []string{"KCACHE_DIR=/c", "POCL_KERNEL_CACHE=1"}}
	got := WorkerEnv(base, o)
	want := []string{"PATH=/bin", "LANG=C", "KCACHE_DIR=/c", "POCL_KERNEL_CACHE=1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WorkerEnv = %q, want %q", got, want)
	}
	if env := BuildEnv([]string{"OPENCL_LAYERS=/l.so", "POCL_X=1", "LANG=C", "HOME=/h", "KCACHE_REMOTE_SECRET=s", "KCACHE_DIR=/c"}); !reflect.DeepEqual(env, []string{"POCL_X=1", "HOME=/h", "KCACHE_DIR=/c"}) {
		t.Errorf("BuildEnv = %q", env)
	}
}

// TestQueue: orders of one key replace each other, a damaged file reads
// as ErrOrder, stale temporary files go, and the worker lock is one
// holder's at a time.
func TestQueue(t *testing.T) {
	q := NewQueue(t.TempDir())
	o := testOrder()
	if q.Queued(o.Key) {
		t.Fatal("queued before Put")
	}
	for range 2 {
		if err := q.Put(o); err != nil {
			t.Fatal(err)
		}
	}
	other := testOrder()
	other.Key = kcache.Digest{9}
	if err := q.Put(other); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(q.Dir(), tempPrefix+"dead")
	os.WriteFile(stale, []byte("half"), 0o600)
	old := time.Now().Add(-2 * staleTemp)
	os.Chtimes(stale, old, old)
	paths, err := q.List()
	if err != nil || len(paths) != 2 {
		t.Fatalf("List = %q, %v; want 2 orders", paths, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("a stale temporary file was not removed")
	}
	if got, err := q.Read(q.path(o.Key)); err != nil || !reflect.DeepEqual(got, o) {
		t.Errorf("Read = %+v, %v", got, err)
	}
	os.WriteFile(q.path(other.Key), []byte("kcache-layer-order-1\ngarbage"), 0o600)
	if _, err := q.Read(q.path(other.Key)); !errors.Is(err, ErrOrder) {
		t.Errorf("damaged order: err = %v, want ErrOrder", err)
	}

	unlock, ok, err := q.TryLock()
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	if _, ok2, _ := q.TryLock(); ok2 {
		t.Error("the worker lock was taken twice")
	}
	if !q.Busy() {
		t.Error("Busy with the lock held = false")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := q.Wait(ctx); err == nil {
		t.Error("Wait returned with orders queued and the lock held")
	}
	unlock()
	for _, p := range paths {
		q.Remove(p)
	}
	if err := q.Wait(context.Background()); err != nil {
		t.Errorf("Wait on an empty, idle queue: %v", err)
	}
}

// TestQueueOfAnotherUser: in a cache shared by a group, another member can
// make a user's queue directory before the user does. A directory this
// user does not own, one others may enter, or a symbolic link is refused:
// no order is written there (an order carries its process's environment)
// nor taken from it (the worker builds in an order's environment). Before,
// the orders went into the other member's directory.
func TestQueueOfAnotherUser(t *testing.T) {
	cases := map[string]func(dir string) error{
		"open to others": func(dir string) error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.Chmod(dir, 0o777)
		},
		"a link": func(dir string) error {
			other := filepath.Join(filepath.Dir(dir), "elsewhere")
			if err := os.Mkdir(other, 0o700); err != nil {
				return err
			}
			return os.Symlink(other, dir)
		},
	}
	if os.Geteuid() == 0 {
		cases["another user's"] = func(dir string) error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.Chown(dir, 65534, 65534)
		}
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			q := NewQueue(t.TempDir())
			if err := plant(q.Dir()); err != nil {
				t.Fatal(err)
			}
			if err := q.Put(testOrder()); !errors.Is(err, ErrQueueUnsafe) {
				t.Errorf("Put = %v, want ErrQueueUnsafe", err)
			}
			if paths, err := q.List(); !errors.Is(err, ErrQueueUnsafe) || len(paths) != 0 {
				t.Errorf("List = %q, %v, want ErrQueueUnsafe", paths, err)
			}
			if _, _, err := q.TryLock(); !errors.Is(err, ErrQueueUnsafe) {
				t.Errorf("TryLock = %v, want ErrQueueUnsafe", err)
			}
			if ents, _ := os.ReadDir(q.Dir()); len(ents) != 0 {
				t.Errorf("the directory holds %d files", len(ents))
			}
		})
	}
}
