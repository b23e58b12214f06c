package cuda

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestPredefineAssumptionChecked: a reserved name defined only in a dead
// branch keeps NVRTC's own value. The key assumes NVRTC predefines none
// (its computed include then names NAME.h), and the cache asks NVRTC
// before it stores: a name NVRTC does predefine (__CUDACC_RTC__, which
// makes the include name 1.h, a file the key does not hold) is built and
// used, never stored; one it does not is stored and hit.
func TestPredefineAssumptionChecked(t *testing.T) {
	ctx := requireGPU(t)
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc")
	for name, v := range map[string]string{"one.h": "1", "__CUDACC_RTC__.h": "2", "1.h": "3", "__KCACHE_NOT_PREDEFINED.h": "4"} {
		writeFile(t, filepath.Join(inc, name), "#define VALUE "+v+"\n")
	}
	// Settled: a build from files whose ctime is within deps' too-new
	// window is not stored whatever its macros, and would pass the
	// predefined case for that reason alone.
	time.Sleep(2100 * time.Millisecond)
	const code = "#define S(x) #x\n#define XS(x) S(x)\n#if defined(NEVER)\n#define NAME one\n#endif\n#include XS(NAME.h)\n" +
		"extern \"C\" __global__ void k(int *d) { d[0] = VALUE; }\n"
	for _, c := range []struct {
		name       string
		predefined bool
	}{{"__CUDACC_RTC__", true}, {"__KCACHE_NOT_PREDEFINED", false}} {
		t.Run(c.name, func(t *testing.T) {
			src := Source{Code: []byte(strings.ReplaceAll(code, "NAME", c.name)), Options: []string{"-I", inc}}
			want := kcache.OutcomeDisk
			if c.predefined {
				want = kcache.OutcomeBuilt
			}
			if got := secondOutcome(t, ctx, src); got != want {
				t.Errorf("second process: outcome %v, want %v", got, want)
			}
		})
	}
}

// TestOptionDefinitionChecked: NVRTC 13 defines __CUDA_ARCH__ after the
// options, so -D__CUDA_ARCH__=big changes nothing, and the include the key
// computed for it (big.h) is not the one NVRTC opens (900.h on the H100):
// such a build is used, never stored. An option's definition NVRTC lets
// win (__CUDACC_VER_MAJOR__) is stored and hit.
func TestOptionDefinitionChecked(t *testing.T) {
	ctx := requireGPU(t)
	inc := filepath.Join(t.TempDir(), "inc")
	writeFile(t, filepath.Join(inc, "big.h"), "#define VALUE 1\n")
	for arch := 500; arch <= 1300; arch += 10 { // whatever the device's architecture
		writeFile(t, filepath.Join(inc, fmt.Sprintf("%d.h", arch)), "#define VALUE 2\n")
	}
	// Settled: a build from files whose ctime is within deps' too-new
	// window is not stored whatever its macros, and would pass the
	// __CUDA_ARCH__ case for that reason alone.
	time.Sleep(2100 * time.Millisecond)
	const code = "#define S(x) #x\n#define XS(x) S(x)\n#include XS(NAME.h)\n" +
		"extern \"C\" __global__ void k(int *d) { d[0] = VALUE; }\n"
	for _, c := range []struct {
		name   string
		stored bool
	}{{"__CUDA_ARCH__", false}, {"__CUDACC_VER_MAJOR__", true}} {
		t.Run(c.name, func(t *testing.T) {
			src := Source{Code: []byte(strings.ReplaceAll(code, "NAME", c.name)), Options: []string{"-I", inc, "-D" + c.name + "=big"}}
			want := kcache.OutcomeBuilt
			if c.stored {
				want = kcache.OutcomeDisk
			}
			if got := secondOutcome(t, ctx, src); got != want {
				t.Errorf("second process: outcome %v, want %v", got, want)
			}
		})
	}
}

// secondOutcome builds src in a new cache over an empty directory, then
// returns where a second new cache over it got src from: the disk tier
// where the first stored it.
func secondOutcome(t *testing.T, ctx *Context, src Source) kcache.Outcome {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "cache")
	m, err := newTestCache(t, ctx, cache).Module(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if m.Outcome != kcache.OutcomeBuilt {
		t.Errorf("first: outcome %v, want built", m.Outcome)
	}
	m.Release()
	m, err = newTestCache(t, ctx, cache).Module(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	return m.Outcome
}
