package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// storedBinary returns the only binary the disk tier under dir holds, read
// through the store: an entry's binary shares its file with the record.
func storedBinary(t *testing.T, dir string) []byte {
	t.Helper()
	ctx := context.Background()
	st, err := disk.Open(disk.Options{Dir: filepath.Join(dir, "cache"), EvictionDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys []*kcache.Key
	err = st.Walk(ctx, func(in disk.Info) error {
		if !internal(&in) {
			keys = append(keys, in.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] == nil {
		t.Fatalf("%d binaries stored, want 1", len(keys))
	}
	e, err := st.Get(ctx, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	return e.Binary
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

// TestBuildSpecializeExisting: --specialize on a file already cached
// without those shapes rebuilds the entry with them, keeping the shapes it
// had, and says so; asked again, it has nothing to add.
func TestBuildSpecializeExisting(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	file := writeKernel(t, dir)
	build := func(args ...string) buildReport {
		t.Helper()
		r, code := runJSON(t, kcacheCmd(t, dir, append([]string{"build", "--json", "--options", "-DFACTOR=2"}, args...)...))
		if code != 0 || len(r) != 1 {
			t.Fatalf("exit %d, reports %+v", code, r)
		}
		return r[0]
	}
	first := build(file)
	steps := []struct {
		list  string
		added []string
		has   []string
	}{
		{"8-1-1", []string{"8-1-1"}, []string{"/twice/0-0-0/", "/twice/8-1-1/"}},
		{"8-1-1", nil, []string{"/twice/8-1-1/"}},
		{"16-1-1-goffs0,8-1-1", []string{"16-1-1-goffs0"}, []string{"/twice/8-1-1/", "/twice/16-1-1-goffs0/"}},
	}
	for _, s := range steps {
		r := build("--specialize", s.list, file)
		if r.Outcome != "disk" || r.Digest != first.Digest || !r.Stored || strings.Join(r.Specialized, ",") != strings.Join(s.added, ",") {
			t.Errorf("--specialize %s: %+v, want a disk hit that added %v", s.list, r, s.added)
		}
		bin := storedBinary(t, dir)
		for _, h := range s.has {
			if !bytes.Contains(bin, []byte(h)) {
				t.Errorf("--specialize %s: binary lacks %s", s.list, h)
			}
		}
	}
	if r := run(t, dir, "build", "--options", "-DFACTOR=2", "--specialize", "4-1-1", file); !strings.Contains(r.stdout, "(specialized 4-1-1)") {
		t.Errorf("human output %q does not say what was specialized", r.stdout)
	}
}
