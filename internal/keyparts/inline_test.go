package keyparts_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache"
)

// TestPoCLDefinesInline: PoCL compiles every program with -Dinline= ahead
// of its options, so #include XS(inline.h) opens ".h", which the key must
// hold; a scan that took inline for undefined keyed inline.h. The build
// by real PoCL shows which file it read (only .h defines FROM_DOT_H).
func TestPoCLDefinesInline(t *testing.T) {
	dev := pocl(t)
	wd := t.TempDir()
	t.Chdir(wd)
	for name, text := range map[string]string{".h": "#define FROM_DOT_H 1\n", "inline.h": "#define FROM_INLINE_H 1\n"} {
		if err := os.WriteFile(filepath.Join(wd, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := "#define S(x) #x\n#define XS(x) S(x)\n#include XS(inline.h)\n#ifndef FROM_DOT_H\n#error PoCL did not read .h\n#endif\nkernel void k(void) {}\n"
	buildsOnPoCL(t, dev, src, "")
	headers, err := keyHeaders(t, src, "", wd)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(headers, func(h kcache.Header) bool { return h.Name == ".h" }) {
		t.Errorf("PoCL reads .h; the key holds %v", headers)
	}
}
