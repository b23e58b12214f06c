package keyparts_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// TestPoCLDefinesAfterOptions: PoCL 3.1 puts its device's macros
// (-D__ENDIAN_LITTLE__=1, -D__OPENCL_VERSION__=300, -Dcl_khr_fp64=1, ...)
// after the program's options, so a -D or -U of one of those names in the
// options does not decide its value: clang keeps PoCL's later -D. A scan
// that took the option's value keyed big.h for
// #include XS(__ENDIAN_LITTLE__.h) under -D__ENDIAN_LITTLE__=big, while
// PoCL read 1.h: an edit of 1.h kept the key. The build by real PoCL
// shows which file it read (only 1.h defines FROM_ONE); the key must hold
// that file, or the source must be uncacheable.
func TestPoCLDefinesAfterOptions(t *testing.T) {
	dev := pocl(t)
	wd := t.TempDir()
	t.Chdir(wd)
	for i, c := range []struct {
		name, options string
	}{
		{"__ENDIAN_LITTLE__", "-D__ENDIAN_LITTLE__=big"},
		{"cl_khr_fp64", "-Dcl_khr_fp64=big"},
		{"cl_khr_int64_base_atomics", "-D cl_khr_int64_base_atomics=big"},
	} {
		t.Run(c.options, func(t *testing.T) {
			// The option's file and PoCL's (PoCL refuses -U).
			for name, text := range map[string]string{"big.h": "", "1.h": "#define FROM_ONE 1\n"} {
				if err := os.WriteFile(filepath.Join(wd, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			src := fmt.Sprintf("#define S(x) #x\n#define XS(x) S(x)\n#include XS(%s.h)\n#ifndef FROM_ONE\n#error PoCL did not read 1.h\n#endif\nkernel void k%d(void) {}\n", c.name, i)
			buildsOnPoCL(t, dev, src, c.options)
			headers, err := keyHeaders(t, src, c.options, wd)
			switch {
			case errors.Is(err, deps.ErrUncacheable):
				return
			case err != nil:
				t.Fatal(err)
			}
			if !slices.ContainsFunc(headers, func(h kcache.Header) bool { return h.Name == "1.h" }) {
				t.Errorf("PoCL reads 1.h; the key holds %v", headers)
			}
		})
	}
}
