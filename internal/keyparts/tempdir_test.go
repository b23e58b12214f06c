package keyparts_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache/internal/keyparts"
	"github.com/kcache/kcache/opencl"
)

// TestPoCLTempDir pins PoCL 3.1's choice of the directory its compiler
// searches first (pocl_cache_init_topdir), variable by variable.
func TestPoCLTempDir(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/h"}, "/h/.cache/pocl/kcache"},
		{[]string{"HOME=/h", "POCL_KERNEL_CACHE=1"}, "/h/.cache/pocl/kcache"},
		{[]string{"HOME=/h", "POCL_KERNEL_CACHE=10"}, "/h/.cache/pocl/kcache"},
		{[]string{"HOME=/h", "POCL_KERNEL_CACHE=0"}, "/h/.cache/pocl/uncached"},
		{[]string{"HOME=/h", "POCL_KERNEL_CACHE=yes"}, "/h/.cache/pocl/uncached"},
		{[]string{"HOME=/h", "POCL_KERNEL_CACHE="}, "/h/.cache/pocl/uncached"},
		{[]string{"HOME=/h", "XDG_CACHE_HOME=/x", "POCL_KERNEL_CACHE=0"}, "/x/pocl/uncached"},
		{[]string{"HOME=/h", "XDG_CACHE_HOME="}, "/h/.cache/pocl/kcache"},
		{[]string{"HOME="}, "/.cache/pocl/kcache"},
		{nil, "/tmp/pocl/kcache"},
		{[]string{"POCL_KERNEL_CACHE=0"}, "/tmp/pocl/uncached"},
		{[]string{"HOME=/h", "POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR=/p"}, "/p"},
	} {
		lookup := func(name string) (string, bool) {
			for _, kv := range tc.env {
				if v, ok := strings.CutPrefix(kv, name+"="); ok {
					return v, true
				}
			}
			return "", false
		}
		if got := keyparts.PoCLTempDir(lookup); got != tc.want {
			t.Errorf("%q: PoCLTempDir = %q, want %q", tc.env, got, tc.want)
		}
	}
}

// TestPoCLTempDirReal asks PoCL itself: a process started with each
// environment writes a header to the directory PoCLTempDir names and
// builds a program that includes it by a quoted name from an empty
// working directory, so the build succeeds only where PoCL's compiler
// searched that directory. With its kernel cache off PoCL searches
// pocl/uncached, where a key that looked in pocl/kcache missed a header.
func TestPoCLTempDirReal(t *testing.T) {
	if os.Getenv(tempDirChild) != "" {
		tempDirChildBuild(t)
		return
	}
	pocl(t) // skipped or failed here where there is no PoCL
	home := t.TempDir()
	for i, env := range [][]string{
		{"HOME=" + home},
		{"HOME=" + home, "POCL_KERNEL_CACHE=0"},
		{"HOME=" + home, "POCL_KERNEL_CACHE=no"},
		{"HOME=" + home, "POCL_KERNEL_CACHE=10"},
		{"HOME=" + home, "XDG_CACHE_HOME=" + home + "/xdg", "POCL_KERNEL_CACHE=0"},
		{"POCL_KERNEL_CACHE=0"}, // no HOME: under /tmp
		{"HOME=" + home, "POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR=" + home + "/own"},
	} {
		name := fmt.Sprintf("kcache-tempdir-%d-%d.h", os.Getpid(), i)
		cmd := exec.Command(os.Args[0], "-test.run=^TestPoCLTempDirReal$")
		cmd.Dir = t.TempDir()
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
			for _, v := range []string{"HOME=", "XDG_CACHE_HOME=", "POCL_KERNEL_CACHE=", "POCL_CACHE_DIR="} {
				if strings.HasPrefix(kv, v) {
					return true
				}
			}
			return false
		}), append(env, tempDirChild+"="+name)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%q: %v\n%s", env, err, out)
		}
	}
}

// tempDirChild names the header TestPoCLTempDirReal's child process
// writes; set only in the child.
const tempDirChild = "KCACHE_TEST_POCL_TEMPDIR_HEADER"

// tempDirChildBuild is the child's side: write the header where
// PoCLTempDir says, build, remove it.
func tempDirChildBuild(t *testing.T) {
	dev := pocl(t)
	dir := keyparts.PoCLTempDir(os.LookupEnv)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	header := filepath.Join(dir, os.Getenv(tempDirChild))
	if err := os.WriteFile(header, []byte("#define FOUND 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(header)
	ctx, err := opencl.NewContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Release()
	p, err := ctx.ProgramWithSource(fmt.Sprintf("#include %q\n#ifndef FOUND\n#error no\n#endif\nkernel void k(void) {}\n", filepath.Base(header)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if err := p.Build(nil, ""); err != nil {
		var be *opencl.BuildError
		if errors.As(err, &be) {
			t.Fatalf("PoCL did not search %s (the key's first place): %s", dir, be.Log)
		}
		t.Fatal(err)
	}
}
