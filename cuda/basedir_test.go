package cuda

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// TestBaseDirRelocatesCUDAKeys: under a base directory each, two
// checkouts built with absolute include paths give the same key options
// and headers, and without one they do not; -lineinfo, which writes places
// into the image, keeps the options as given. No GPU: the plan and the
// scan are the key's inputs.
func TestBaseDirRelocatesCUDAKeys(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(t.TempDir())
	key := func(root, base string, extra ...string) ([]string, []kcache.Header) {
		t.Helper()
		c := &Cache{baseDir: base}
		src := Source{Code: []byte("#include <k.cuh>\n"), Options: append([]string{"-arch=sm_90", "-I" + root + "/include"}, extra...)}
		p, err := c.plan(src)
		if err != nil {
			t.Fatal(err)
		}
		var headers []kcache.Header
		for _, in := range scanInputs(src, p) {
			in.CompleteSearchPath = true
			h, _, err := deps.NewScanner(nil).Scan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			headers = append(headers, h...)
		}
		return p.keyOptions, headers
	}
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	for _, root := range []string{a, b} {
		if err := os.MkdirAll(root+"/include", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(root+"/include/k.cuh", []byte("#define K 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oa, ha := key(a, a)
	ob, hb := key(b, b)
	if !slices.Equal(oa, ob) || !slices.Equal(ha, hb) || len(ha) != 1 {
		t.Errorf("checkouts under their base: %q %v and %q %v", oa, ha, ob, hb)
	}
	if o, _ := key(b, ""); slices.Equal(o, oa) {
		t.Errorf("without a base directory the options are relocated: %q", o)
	}
	if o, _ := key(a, a, "-lineinfo"); !slices.Contains(o, "-I"+a+"/include") {
		t.Errorf("-lineinfo: options %q, want them as given", o)
	}
}
