package opencl

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/objcache"
)

func TestCompilerEnv(t *testing.T) {
	env := []string{"HOME=/root", "POCL_CACHE_DIR=/tmp/x", "POCL_KERNEL_CACHE=0", "POCL_DEBUG=all",
		"POCL_WORK_GROUP_METHOD=cbs", "POCL_EXTRA_BUILD_FLAGS=-O0", "CL_CONFIG_USE_VECTORIZER=False", "KCACHE_DIR=/c"}
	got := compilerEnv(env)
	want := []kcache.EnvVar{{Name: "POCL_WORK_GROUP_METHOD", Value: "cbs"}, {Name: "POCL_EXTRA_BUILD_FLAGS", Value: "-O0"},
		{Name: "CL_CONFIG_USE_VECTORIZER", Value: "False"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compilerEnv = %v, want %v", got, want)
	}
}

func TestIncludes(t *testing.T) {
	src := "#include \"a.h\"\n  #  include <b/c.h>\n#include MACRO\n// #include \"d.h\"\nint x; #include \"e.h\"\n"
	want := []include{{"a.h", true}, {"b/c.h", false}}
	if got := includes([]byte(src)); !reflect.DeepEqual(got, want) {
		t.Errorf("includes = %v, want %v", got, want)
	}
}

func TestIncludeDirs(t *testing.T) {
	got := includeDirs("-DX -I /a -I/b -Irel -cl-std=CL1.2")
	wd, _ := os.Getwd()
	want := []string{"/a", "/b", filepath.Join(wd, "rel")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("includeDirs = %v, want %v", got, want)
	}
}

func TestResolveHeadersOrderAndCycles(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(dir, "top.h"), []byte("#include \"self.h\"\n#include <lib.h>\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "self.h"), []byte("#include \"self.h\"\n"), 0o644) // no guard: must not loop
	os.WriteFile(filepath.Join(sub, "lib.h"), []byte("#define LIB 1\n"), 0o644)
	hs, err := resolveHeaders(newStatCache(), []byte("#include \"top.h\"\n#include <missing.h>\n"), dir, []string{sub})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hs {
		names = append(names, h.Name)
	}
	if want := []string{"top.h", "self.h", "lib.h"}; !reflect.DeepEqual(names, want) {
		t.Errorf("headers %v, want %v", names, want)
	}
}

// TestStatCacheSeesEdits checks that a header edited with its size and
// mtime unchanged is still noticed while the mtime is recent, and that
// an old, unchanged file is not read again.
func TestStatCacheSeesEdits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.h")
	os.WriteFile(path, []byte("#define A 1\n"), 0o644)
	sc := newStatCache()
	look := func() (kcache.Digest, bool) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		d, _, read, err := sc.digest(path, fi)
		if err != nil {
			t.Fatal(err)
		}
		return d, read
	}
	d1, read := look()
	if !read {
		t.Fatal("first look did not read the file")
	}
	os.WriteFile(path, []byte("#define A 2\n"), 0o644) // same size, mtime within the same tick maybe
	d2, _ := look()
	if d1 == d2 {
		t.Fatal("edit of a recent file missed")
	}
	writeFile(t, path, "#define A 2\n", time.Hour)
	look()
	if _, read := look(); read {
		t.Error("an unchanged old file was read again")
	}
}

func TestClassify(t *testing.T) {
	var c Cache
	oom := &BuildError{Err: &Error{Code: CodeOutOfHostMemory, Func: "clBuildProgram"}}
	compile := &BuildError{Log: "error: x", Err: &Error{Code: CodeBuildProgramFailure, Func: "clBuildProgram"}}
	other := &Error{Code: CodeInvalidValue, Func: "clCreateProgramWithSource"}
	if err := c.classify(oom); !errors.Is(err, objcache.ErrOutOfMemory) {
		t.Errorf("out of memory while building: %v, want ErrOutOfMemory", err)
	}
	if err := c.classify(compile); err != error(compile) || objcache.IsTransient(err) {
		t.Errorf("compile error must be kept as is, got %v", err)
	}
	if err := c.classify(other); !objcache.IsTransient(err) {
		t.Errorf("other failure must be transient, got %v", err)
	}
}
