package deps

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// The attacks of the key-exactness review, at the scanner: each changes
// something the compiler sees and requires the key (the headers a scan
// returns) to change, both in the process that scanned before (a warm
// Scanner) and in a new one.

// keyChanges scans in, applies edit, and scans again with the same
// scanner, with a new one, and with a new one that has the dependency
// record of the first scan (a new process of a cache with records).
func keyChanges(t *testing.T, in Input, edit func()) {
	t.Helper()
	warm := NewScanner(nil)
	before, _ := mustScan(t, warm, in)
	records := newMemRecords()
	if recorded, _ := scanRecorded(t, settledScanner(records), in); !slices.Equal(recorded, before) || records.stores.Load() != 1 {
		t.Fatalf("recording scan: %d records, key %v, want 1 and %v", records.stores.Load(), recorded, before)
	}
	edit()
	for name, s := range map[string]*Scanner{
		"same process": warm, "new process": NewScanner(nil),
		"new process, recorded": NewScanner(nil, WithRecords(records)),
	} {
		after, tr := mustScan(t, s, in)
		if slices.Equal(before, after) {
			t.Errorf("%s: key unchanged by the edit; trace %q", name, found(in.WorkDir, tr))
		}
	}
}

func TestStaleHeaderIsItsLocation(t *testing.T) {
	t.Run("same name in two directories swaps contents", func(t *testing.T) {
		root := tree(t, map[string]string{
			"a/x.h": "#include \"c.h\"\n", "a/c.h": "#define V 1\n",
			"b/y.h": "#include \"c.h\"\n", "b/c.h": "#define V 2\n",
		})
		in := Input{Source: []byte("#include \"a/x.h\"\n#include \"b/y.h\"\n"), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
		keyChanges(t, in, func() {
			write(t, filepath.Join(root, "a/c.h"), "#define V 2\n")
			write(t, filepath.Join(root, "b/c.h"), "#define V 1\n")
		})
	})
	t.Run("identical copy earlier in the search", func(t *testing.T) {
		root := tree(t, map[string]string{"i2/h.h": "#define V 1\n"})
		in := Input{Source: []byte("#include <h.h>\n"), WorkDir: root, Args: SplitOptions("-I i1 -I i2"), Trigraphs: TrigraphsOn}
		keyChanges(t, in, func() { write(t, filepath.Join(root, "i1/h.h"), "#define V 1\n") })
	})
}

func TestStaleLexer(t *testing.T) {
	for name, src := range map[string]string{
		"lone CR":                  "int a;\r#include \"h.h\"\rint b;\r",
		"CRLF":                     "int a;\r\n#include \"h.h\"\r\n",
		"byte order mark":          "\xEF\xBB\xBF#include \"h.h\"\n",
		"trigraph hash":            "??=include \"h.h\"\n",
		"trigraph splice":          "#??/\ninclude \"h.h\"\n",
		"splice with blanks":       "#\\ \t\ninclude \"h.h\"\n",
		"comment splice w/ blanks": "// comment \\  \n#define X\n#include \"h.h\"\n",
		"digraph":                  "%:include \"h.h\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			root := tree(t, map[string]string{"h.h": "#define V 1\n"})
			in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
			keyChanges(t, in, func() { write(t, filepath.Join(root, "h.h"), "#define V 2\n") })
		})
	}
	t.Run("trigraphs of unknown meaning", func(t *testing.T) {
		root := tree(t, map[string]string{"h.h": ""})
		in := Input{Source: []byte("??=include \"h.h\"\n"), WorkDir: root, SearchWorkDir: true}
		if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
			t.Errorf("err = %v, want ErrUncacheable", err)
		}
		in.Source = []byte("/* what??! */\n#include \"h.h\"\n") // changes no directive
		mustScan(t, NewScanner(nil), in)
	})
}

func TestStaleRescanOfSubtree(t *testing.T) {
	root := tree(t, map[string]string{
		"outer.h": "#include \"inner.h\"\n", // guardless, no computed include itself
		"inner.h": "#include H\n",
		"one.h":   "", "two.h": "#define V 1\n",
	})
	src := "#define H \"one.h\"\n#include \"outer.h\"\n#undef H\n#define H \"two.h\"\n#include \"outer.h\"\n"
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	keyChanges(t, in, func() { write(t, filepath.Join(root, "two.h"), "#define V 2\n") })
}

func TestStaleClock(t *testing.T) {
	root := tree(t, map[string]string{"time.h": "#define STAMP __TI\\\nME__\n", "date.h": "const char *d = __DATE__;\n"})
	in := Input{Source: []byte("#include \"time.h\"\n"), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
		t.Errorf("__TIME__: err = %v, want ErrUncacheable", err)
	}
	in.Source = []byte("#include \"date.h\"\n")
	s := NewScanner(nil)
	h, _ := mustScan(t, s, in)
	day := time.Now().Format("Jan _2 2006")
	if !slices.Contains(h, kcache.Header{Name: DateHeader, Digest: sha256Of(day)}) {
		t.Errorf("__DATE__: headers %v lack the day", h)
	}
	s.fs.now = func() time.Time { return time.Now().Add(24 * time.Hour) }
	if h2, _ := mustScan(t, s, in); slices.Equal(h, h2) {
		t.Error("__DATE__: the key did not change with the day")
	}
}

// TestStaleRacyEdits: an edit the stat identity cannot show.
func TestStaleRacyEdits(t *testing.T) {
	t.Run("same length, mtime restored", func(t *testing.T) {
		root := tree(t, map[string]string{"h.h": "#define V 1\n"})
		path := filepath.Join(root, "h.h")
		old := time.Now().Add(-time.Hour)
		os.Chtimes(path, old, old)
		in := Input{Source: []byte("#include \"h.h\"\n"), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
		keyChanges(t, in, func() {
			write(t, path, "#define V 2\n")
			os.Chtimes(path, old, old) // the ctime moves on
		})
	})
	t.Run("read while too new, rewritten within the tick", func(t *testing.T) {
		// A file system with one-second timestamps, ctime included.
		root := tree(t, map[string]string{"h.h": "#define V 1\n"})
		path := filepath.Join(root, "h.h")
		records := newMemRecords()
		s := NewScanner(nil, WithRecords(records))
		s.fs.stat = coarseStat
		in := Input{Source: []byte("#include \"h.h\"\n"), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
		before, _ := scanRecorded(t, s, in)
		if records.stores.Load() != 0 {
			t.Error("a scan that read a file while too new was recorded")
		}
		fi, _ := coarseStat(path)
		write(t, path, "#define V 2\n")
		for i := 0; i < 200; i++ { // until the coarse stat says nothing changed
			if now, _ := coarseStat(path); identityOf(now) == identityOf(fi) {
				break
			}
			write(t, path, "#define V 2\n")
			fi, _ = coarseStat(path)
		}
		s.fs.now = func() time.Time { return time.Now().Add(time.Hour) } // long after
		if after, _ := mustScan(t, s, in); slices.Equal(before, after) {
			t.Error("a file read while too new was trusted by stat later")
		}
		later := NewScanner(nil, WithRecords(records))
		later.fs.stat = coarseStat
		later.fs.now = s.fs.now
		if after, _ := mustScan(t, later, in); slices.Equal(before, after) {
			t.Error("new process, recorded: a file read while too new was trusted by stat later")
		}
	})
}

// coarseStat is os.Stat on a file system with one-second timestamps.
func coarseStat(p string) (fs.FileInfo, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	st := *fi.Sys().(*syscall.Stat_t)
	st.Mtim.Nsec, st.Ctim.Nsec = 0, 0
	return coarseInfo{fi, &st}, nil
}

type coarseInfo struct {
	fs.FileInfo
	st *syscall.Stat_t
}

func (c coarseInfo) ModTime() time.Time { return c.FileInfo.ModTime().Truncate(time.Second) }
func (c coarseInfo) Sys() any           { return c.st }

// TestStaleSymlinkDotDot: "inc" is a link to real/sub; a header there
// includes "../common.h", which the kernel resolves in real/, not beside
// inc.
func TestStaleSymlinkDotDot(t *testing.T) {
	root := tree(t, map[string]string{
		"real/sub/h.h": "#include \"../common.h\"\n", "real/common.h": "#include \"x.h\"\n", "real/x.h": "#define V 1\n",
		"common.h": "", "x.h": "",
	})
	if err := os.Symlink("real/sub", filepath.Join(root, "inc")); err != nil {
		t.Fatal(err)
	}
	in := Input{Source: []byte("#include \"inc/h.h\"\n"), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	keyChanges(t, in, func() { write(t, filepath.Join(root, "real/x.h"), "#define V 2\n") })
}

func TestStaleComputedIncludes(t *testing.T) {
	for name, src := range map[string]string{
		"escapes the search":    strMacros + "#include \"missing.h\"\n#include XS(../hdr/NAME.h)\n",
		"PoCL predefined macro": strMacros + "#include XS(POCL_DEVICE_ADDRESS_BITS.h)\n",
		"reserved name":         strMacros + "#include XS(__OPENCL_VERSION__.h)\n",
	} {
		t.Run(name, func(t *testing.T) {
			in := Input{Source: []byte(src), WorkDir: t.TempDir(), SearchWorkDir: true, Trigraphs: TrigraphsOn}
			if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
				t.Errorf("err = %v, want ErrUncacheable", err)
			}
		})
	}
}

func TestStaleHasInclude(t *testing.T) {
	t.Run("next", func(t *testing.T) {
		root := tree(t, map[string]string{"a/h.h": "#if __has_include_next(<h.h>)\n#include_next <h.h>\n#endif\n"})
		in := Input{Source: []byte("#include <h.h>\n"), WorkDir: root, Args: SplitOptions("-I a -I b"), Trigraphs: TrigraphsOn}
		keyChanges(t, in, func() { write(t, filepath.Join(root, "b/h.h"), "#define V 1\n") })
	})
	for name, src := range map[string]string{
		"through a function-like macro": "#define HAS(x) __has_include(x)\n#if HAS(<opt.h>)\n#endif\n",
		"through two macros":            "#define OUTER(x) HAS(x)\n#define HAS(x) __has_include(x)\n#if OUTER(\"opt.h\")\n#endif\n",
		"object-like":                   "#define HAS_OPT __has_include(<opt.h>)\n",
		"macro from a header":           "#include \"m.h\"\n#if HAS(<opt.h>)\n#endif\n",
	} {
		t.Run(name, func(t *testing.T) {
			root := tree(t, map[string]string{"m.h": "#define HAS(x) __has_include(x)\n"})
			in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
			keyChanges(t, in, func() { write(t, filepath.Join(root, "opt.h"), "") })
		})
	}
}

func sha256Of(s string) kcache.Digest { return sha256.Sum256([]byte(s)) }

// TestStaleRescanAfterIncluderConsulted: the includer expands X just
// before including a header that expands X too; the header must still
// remember X, and be followed again once X is redefined.
func TestStaleRescanAfterIncluderConsulted(t *testing.T) {
	root := tree(t, map[string]string{"a.h": "#include X\n", "one.h": "", "two.h": "#define V 1\n"})
	src := "#define X \"one.h\"\n#include X\n#include \"a.h\"\n#undef X\n#define X \"two.h\"\n#include \"a.h\"\n"
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	keyChanges(t, in, func() { write(t, filepath.Join(root, "two.h"), "#define V 2\n") })
}
