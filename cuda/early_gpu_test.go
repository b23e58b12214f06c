package cuda

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestModuleEarlyKeyStaleRecord: a new cache (a new process's scanner)
// looks its module up with the key of the dependency record while the
// record's stats run; when a header was edited since, the binary that key
// finds is never handed back: the module is built from the header as it
// is. Run on the GPU machine.
func TestModuleEarlyKeyStaleRecord(t *testing.T) {
	gpu := requireGPU(t)
	dir, user := t.TempDir(), t.TempDir()
	header := filepath.Join(user, "val.h")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(header, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2100 * time.Millisecond) // settled: past the too-new window of its ctime
	}
	src := Source{Code: []byte("#include \"val.h\"\nextern \"C\" __global__ void k(int* d) { d[0] = VAL; }\n"), Options: []string{"-I" + user}}
	out, err := gpu.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer gpu.Free(out)
	run := func(want kcache.Outcome, val int32, why string) {
		t.Helper()
		c := newTestCache(t, gpu, dir) // a new scanner: its first key is the record's
		m, err := c.Module(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Release()
		if m.Outcome != want {
			t.Errorf("%s: outcome %v, want %v", why, m.Outcome, want)
		}
		f, err := m.Function("k")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Launch(nil, Dim(1), Dim(1), 0, out); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 4)
		if err := gpu.CopyFromDevice(got, out); err != nil {
			t.Fatal(err)
		}
		if v := int32(binary.LittleEndian.Uint32(got)); v != val {
			t.Errorf("%s: the kernel wrote %d, want %d: a binary of other inputs", why, v, val)
		}
	}
	write("#define VAL 7\n")
	run(kcache.OutcomeBuilt, 7, "first build")
	run(kcache.OutcomeDisk, 7, "a new cache, nothing changed")
	write("#define VAL 9\n") // the same size: only its times tell
	run(kcache.OutcomeBuilt, 9, "a new cache after the header's edit")
	run(kcache.OutcomeDisk, 9, "a new cache after the rebuild")
}
