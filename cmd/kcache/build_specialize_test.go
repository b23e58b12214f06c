package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// storedBinary returns the only binary the disk tier under dir holds.
func storedBinary(t *testing.T, dir string) []byte {
	t.Helper()
	var bins []string
	filepath.WalkDir(filepath.Join(dir, "cache"), func(path string, _ os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".bin") {
			bins = append(bins, path)
		}
		return nil
	})
	if len(bins) != 1 {
		t.Fatalf("%d binaries stored, want 1", len(bins))
	}
	b, err := os.ReadFile(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuildSpecialize: --specialize compiles the named work-group
// functions into the stored binary, which PoCL otherwise compiles at each
// process's first launch; the key is the one a process running without the
// setting computes, so that process finds the binary.
func TestBuildSpecialize(t *testing.T) {
	requireOpenCL(t)
	file := writeKernel(t, t.TempDir())
	build := func(env []string, args ...string) (digest string, bin []byte) {
		t.Helper()
		dir := t.TempDir()
		cmd := kcacheCmd(t, dir, append([]string{"build", "--json", "--options", "-DFACTOR=2"}, args...)...)
		cmd.Env = append(cmd.Env, env...)
		r, code := runJSON(t, cmd)
		if code != 0 || len(r) != 1 || r[0].Outcome != "built" {
			t.Fatalf("exit %d, reports %+v", code, r)
		}
		return r[0].Digest, storedBinary(t, dir)
	}
	plain, plainBin := build(nil, file)
	special, specialBin := build(nil, "--specialize", "64-1-1-goffs0-smallgrid,8-1-1", file)
	own, ownBin := build([]string{"POCL_BINARY_SPECIALIZE_WG=2-1-1-goffs0"}, file)
	if special != plain || own != plain {
		t.Errorf("digests differ: plain %s, --specialize %s, user's setting %s", plain, special, own)
	}
	for _, c := range []struct {
		name string
		bin  []byte
		has  []string
		lack []string
	}{
		{"plain", plainBin, []string{"/twice/0-0-0/"}, []string{"/twice/64-1-1-goffs0-smallgrid/", "/twice/2-1-1-goffs0/"}},
		{"--specialize", specialBin, []string{"/twice/0-0-0/", "/twice/64-1-1-goffs0-smallgrid/", "/twice/8-1-1/"}, nil},
		{"user's setting", ownBin, []string{"/twice/0-0-0/", "/twice/2-1-1-goffs0/"}, nil},
	} {
		for _, s := range c.has {
			if !bytes.Contains(c.bin, []byte(s)) {
				t.Errorf("%s: binary lacks %s", c.name, s)
			}
		}
		for _, s := range c.lack {
			if bytes.Contains(c.bin, []byte(s)) {
				t.Errorf("%s: binary holds %s", c.name, s)
			}
		}
	}
}

func TestBuildSpecializeRejectsBadList(t *testing.T) {
	for _, list := range []string{"64", "64-1", "64-1-1-goffs", "a-b-c", "64-1-1,", "64-1-1 -goffs0"} {
		if err := checkSpecializations(list); err == nil {
			t.Errorf("%q accepted", list)
		}
	}
	for _, list := range []string{"", "64-1-1", "64-1-1-goffs0-smallgrid,16-16-1-goffs0,1-1-1-smallgrid"} {
		if err := checkSpecializations(list); err != nil {
			t.Errorf("%q: %v", list, err)
		}
	}
}
