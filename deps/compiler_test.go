package deps

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// The compiler's own headers and macros (Input.CompilerHeaders,
// Input.CompilerMacros), as NVRTC 13 has them: under CompleteSearchPath,
// only an include of a header the compiler holds hides macros from the
// scan; any other include found nowhere is an absent place.

// thrustLike selects a system on branches and includes a header whose
// angled name is built from the system's name, as Thrust does.
const thrustLike = `#include <ctype.h>
#if SYS == 1
#define SYS_NS cuda
#else
#define SYS_NS cpp
#endif
#define SYS_ROOT lib/SYS_NS
#define TAG_HEADER <SYS_ROOT/tag.h>
#include TAG_HEADER
#undef TAG_HEADER
`

func TestCompilerHeaders(t *testing.T) {
	root := tree(t, map[string]string{"inc/lib/cuda/tag.h": "", "inc/builtin.h": "#define SYS_NS evil\n"})
	in := Input{Source: []byte(thrustLike), WorkDir: root, Args: []string{"-Iinc"}, Trigraphs: TrigraphsOff}

	// Without the promise, ctype.h found nowhere may come from the
	// compiler's directories and define anything: refused.
	if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
		t.Fatalf("without CompleteSearchPath: err = %v, want ErrUncacheable", err)
	}

	// With it, ctype.h is an absent place, and both systems' headers are
	// keyed, the missing one as absent: a bounded key.
	in.CompleteSearchPath = true
	in.CompilerHeaders = []string{"builtin.h"}
	_, tr := mustScan(t, NewScanner(nil), in)
	got := found(root, tr)
	for _, want := range []string{"absent inc/ctype.h inc/ctype.h", "computed-include inc/lib/cuda/tag.h inc/lib/cuda/tag.h", "absent inc/lib/cpp/tag.h inc/lib/cpp/tag.h"} {
		if !slices.Contains(got, want) {
			t.Errorf("trace %q lacks %q", got, want)
		}
	}

	// An include of a header the compiler holds is no file of the key,
	// even where a file of that name lies on the path, and what it may
	// define makes a later unknown name unknowable.
	in.Source = []byte("#include <builtin.h>\n" + thrustLike)
	_, _, err := NewScanner(nil).Scan(context.Background(), in)
	if !errors.Is(err, ErrUncacheable) {
		t.Fatalf("after the compiler's own header: err = %v, want ErrUncacheable", err)
	}
	in.Source = []byte("#include <builtin.h>\nint x;\n")
	_, tr = mustScan(t, NewScanner(nil), in)
	for _, d := range tr {
		if filepath.Base(d.Path) == "builtin.h" {
			t.Errorf("the compiler's own header is keyed as %s %s", d.Rule, d.Path)
		}
	}
}

func TestCompilerMacros(t *testing.T) {
	root := tree(t, map[string]string{"inc/12/x.h": "", "inc/CUDART_VERSION/x.h": ""})
	src := strMacros + "#include XS(CUDART_VERSION/x.h)\n"
	in := Input{Source: []byte(src), WorkDir: root, Args: []string{"-Iinc"}, CompleteSearchPath: true, Trigraphs: TrigraphsOff}
	// A name nobody defines and the compiler is not said to: it stays.
	_, tr := mustScan(t, NewScanner(nil), in)
	if got := found(root, tr); !slices.Contains(got, "computed-include inc/CUDART_VERSION/x.h inc/CUDART_VERSION/x.h") {
		t.Errorf("trace %q", got)
	}
	for _, m := range []string{"CUDART_VERSION", "CUDART_*", "*"} {
		in.CompilerMacros = []string{"assert", m}
		if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
			t.Errorf("CompilerMacros %q: err = %v, want ErrUncacheable", in.CompilerMacros, err)
		}
	}
	// A definition the scan sees is what the compiler sees too.
	in.CompilerMacros = []string{"CUDART_VERSION"}
	in.Source = []byte("#define CUDART_VERSION 12\n" + src)
	_, tr = mustScan(t, NewScanner(nil), in)
	if got := found(root, tr); !slices.Contains(got, "computed-include inc/12/x.h inc/12/x.h") {
		t.Errorf("trace %q", got)
	}
	// Unless a _Pragma no text names may pop it back to the compiler's:
	// CAT can paste the word from a piece the text spells (_Pra), and XS
	// stringize the pragma's string.
	defined := string(in.Source)
	in.Source = []byte("#define CAT(a, b) a##b\nint _Pra;\n" + defined)
	if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
		t.Errorf("with a macro that may paste _Pragma: err = %v, want ErrUncacheable", err)
	}
	// Without a piece to begin it with, no paste makes the word.
	in.Source = []byte("#define CAT(a, b) a##b\n" + defined)
	_, tr = mustScan(t, NewScanner(nil), in)
	if got := found(root, tr); !slices.Contains(got, "computed-include inc/12/x.h inc/12/x.h") {
		t.Errorf("with a pasting macro and no piece of _Pragma: trace %q", got)
	}
}

// A built-in header's macro may hold a whole _Pragma: the text that
// expands it names neither the operator nor the pragma, and clang pops H
// back to its pushed value (undefined) all the same.
func TestBuiltinPragmaRestores(t *testing.T) {
	root := tree(t, map[string]string{
		"b.h": "", "H.h": "",
		"builtin/k.h": "#define POP_H _Pragma(\"pop_macro(\\\"H\\\")\")\n",
	})
	src := strMacros + "#pragma push_macro(\"H\")\n#define H b\nPOP_H\n#include XS(H.h)\n"
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, CompleteSearchPath: true, Trigraphs: TrigraphsOn,
		Builtins: []string{filepath.Join(root, "builtin/k.h")}}
	_, tr := mustScan(t, NewScanner(nil), in)
	if got := found(root, tr); !slices.Contains(got, "computed-include H.h H.h") {
		t.Errorf("trace %q lacks H.h, which clang reads", got)
	}
}
