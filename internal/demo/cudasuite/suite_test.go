package cudasuite

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda"
)

// TestSuiteShape runs everywhere: the suite is what the issue asks of it.
func TestSuiteShape(t *testing.T) {
	cases := All()
	if len(cases) < 15 {
		t.Errorf("%d cases, want at least 15", len(cases))
	}
	var templates, externC int
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.Name] {
			t.Errorf("duplicate case %s", c.Name)
		}
		names[c.Name] = true
		if len(c.Launches) == 0 || c.Check == nil || c.Source == "" {
			t.Errorf("%s: incomplete", c.Name)
		}
		for _, k := range c.Kernels() {
			switch {
			case slices.Contains(c.NameExpressions, k):
				templates++
			case strings.Contains(c.Source, `extern "C" __global__ void `+k+"("):
				externC++
			default:
				t.Errorf("%s: kernel %q is neither a name expression nor an extern \"C\" kernel of the source", c.Name, k)
			}
		}
		for _, l := range c.Launches {
			for _, a := range l.Args {
				if a.Buffer >= len(c.Buffers) {
					t.Errorf("%s: argument names buffer %d of %d", c.Name, a.Buffer, len(c.Buffers))
				}
			}
		}
		for h := range c.Headers {
			if !strings.Contains(c.Source, `#include "`+h+`"`) {
				t.Errorf("%s: header %s is not included", c.Name, h)
			}
		}
	}
	if templates == 0 || externC == 0 {
		t.Errorf("%d template and %d extern \"C\" kernels: want both", templates, externC)
	}
}

// TestReferencesReject feeds each check the initial buffers, which no
// kernel has touched: every check must find them wrong.
func TestReferencesReject(t *testing.T) {
	for _, c := range All() {
		out := make([][]byte, len(c.Buffers))
		for i, b := range c.Buffers {
			out[i] = b.Init
			if out[i] == nil {
				out[i] = make([]byte, b.Size)
			}
		}
		if err := c.Verify(out); err == nil {
			t.Errorf("%s: the check accepts untouched buffers", c.Name)
		}
	}
}

// TestSuiteOnGPU compiles every case through the cache and checks its
// result; it skips where there is no GPU.
func TestSuiteOnGPU(t *testing.T) {
	dev, err := cuda.GetDevice(0)
	if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cuda.LoadNVRTC(); errors.Is(err, cuda.ErrNoNVRTC) {
		t.Skipf("no NVRTC: %v", err)
	}
	ctx, err := cuda.PrimaryContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Release()
	cfg, _ := kcache.LoadConfig(func(c *kcache.Config) { c.Persistent = false })
	cache, err := cuda.NewCache(ctx, kcache.New(cfg, nil), cuda.CacheOptions{Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	inc := t.TempDir()
	for _, c := range All() {
		if err := c.WriteHeaders(inc); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range All() {
		t.Run(c.Name, func(t *testing.T) {
			m, err := cache.Module(context.Background(), c.CUDASource(inc))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Release()
			run, err := Prepare(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			defer run.Free()
			if err := run.Launch(m.Function); err != nil {
				t.Fatal(err)
			}
			if err := run.Check(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d bytes of %s", c.Name, len(m.Image()), m.Format())
		})
	}
}
