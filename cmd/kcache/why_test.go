package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// TestWhy builds a kernel that includes a header, then asks why for the
// same build, an edited header, a changed option and another device.
func TestWhy(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "scale.cl")
	hdr := filepath.Join(dir, "factor.h")
	os.WriteFile(src, []byte("#include \"factor.h\"\n__kernel void scale(__global int* v) { v[get_global_id(0)] *= FACTOR; }\n"), 0o644)
	os.WriteFile(hdr, []byte("#define FACTOR 2\n"), 0o644)
	if r := run(t, dir, "build", "-I", dir, "--options", "-DX=1", src); r.code != 0 {
		t.Fatalf("build: %+v", r)
	}
	var w whyJSON
	runJSONOut(t, dir, &w, "why", "--json", "-I", dir, "--options", "-DX=1", src)
	if w.Outcome != "hit" || w.Entry == nil || w.Entry.ID != w.ID || w.File != src {
		t.Fatalf("unchanged: %+v", w)
	}
	built := w.ID

	// onlyChange checks that the nearest entry is the one built, differing
	// in exactly one component.
	onlyChange := func(t *testing.T, w whyJSON, component, name string) {
		t.Helper()
		if w.Outcome != "miss" || len(w.Nearest) != 1 || w.Nearest[0].ID != built || len(w.Nearest[0].Changes) != 1 {
			t.Fatalf("why %+v", w)
		}
		if c := w.Nearest[0].Changes[0]; c.Component != component || c.Name != name || c.Old == c.New {
			t.Errorf("change %+v; want %s %s", c, component, name)
		}
	}
	t.Run("option", func(t *testing.T) {
		var w whyJSON
		runJSONOut(t, dir, &w, "why", "--json", "-I", dir, "--options", "-DX=2", src)
		onlyChange(t, w, "options", "")
		if c := w.Nearest[0].Changes[0]; !strings.Contains(c.Old, "-DX=1") || !strings.Contains(c.New, "-DX=2") {
			t.Errorf("option change %+v", c)
		}
	})
	t.Run("header", func(t *testing.T) {
		os.WriteFile(hdr, []byte("#define FACTOR 3\n"), 0o644)
		defer os.WriteFile(hdr, []byte("#define FACTOR 2\n"), 0o644)
		var w whyJSON
		runJSONOut(t, dir, &w, "why", "--json", "-I", dir, "--options", "-DX=1", src)
		onlyChange(t, w, "header", hdr) // a header is named by where it was found
		r := run(t, dir, "why", "-I", dir, "--options", "-DX=1", src)
		if r.code != 0 || !contains(r.stdout, "miss", "header "+hdr) {
			t.Errorf("human why: %+v", r)
		}
	})
	t.Run("device", func(t *testing.T) {
		// Move the entry to a device this machine does not have: rewrite it
		// under a key with another device name.
		st := testStore(t, dir)
		ctx := context.Background()
		in, err := st.Find(ctx, built)
		if err != nil {
			t.Fatal(err)
		}
		e, err := st.Get(ctx, in.Key)
		if err != nil {
			t.Fatal(err)
		}
		moved := *in.Key
		moved.Device.Name = "Some Other GPU"
		if err := st.Put(ctx, &moved, kcache.Entry{Binary: e.Binary, BuildTime: e.BuildTime}); err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, in.Key); err != nil {
			t.Fatal(err)
		}
		var w whyJSON
		runJSONOut(t, dir, &w, "why", "--json", "-I", dir, "--options", "-DX=1", src)
		if w.Outcome != "miss" || len(w.Nearest) != 1 || len(w.Nearest[0].Changes) != 1 {
			t.Fatalf("why %+v", w)
		}
		if c := w.Nearest[0].Changes[0]; c.Component != "device" || c.Name != "name" || c.Old != "Some Other GPU" {
			t.Errorf("change %+v; want the device name", c)
		}
		// diff names the same component between the two entries.
		if r := run(t, dir, "build", "-I", dir, "--options", "-DX=1", src); r.code != 0 {
			t.Fatal(r)
		}
		var d diffJSON
		runJSONOut(t, dir, &d, "diff", "--json", moved.Digest().String()[:10], built[:10])
		if len(d.Changes) != 1 || d.Changes[0] != (disk.Change{Component: "device", Name: "name", Old: "Some Other GPU", New: in.Key.Device.Name}) {
			t.Errorf("diff %+v", d)
		}
	})
	if r := run(t, dir, "why", filepath.Join(dir, "missing.cl")); r.code != 1 || !contains(r.stderr, "no such file") {
		t.Errorf("missing file: %+v", r)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestWhyDependsDirectory: why takes build's --depends, and a directory
// declared as a dependency stands for every file under it.
func TestWhyDependsDirectory(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "k.cl")
	data := filepath.Join(dir, "tables")
	os.WriteFile(src, []byte("__kernel void k(__global int* v) { v[0] = 1; }\n"), 0o644)
	os.MkdirAll(filepath.Join(data, "sub"), 0o755)
	os.WriteFile(filepath.Join(data, "sub", "t.bin"), []byte("1"), 0o644)
	if r := run(t, dir, "build", "--depends", data, src); r.code != 0 {
		t.Fatalf("build: %+v", r)
	}
	var w whyJSON
	runJSONOut(t, dir, &w, "why", "--json", "--depends", data, src)
	if w.Outcome != "hit" {
		t.Fatalf("why with build's --depends: %+v", w)
	}
	os.WriteFile(filepath.Join(data, "sub", "t.bin"), []byte("2"), 0o644)
	runJSONOut(t, dir, &w, "why", "--json", "--depends", data, src)
	if w.Outcome != "miss" || len(w.Nearest) != 1 || len(w.Nearest[0].Changes) != 1 || w.Nearest[0].Changes[0].Name != filepath.Join(data, "sub", "t.bin") {
		t.Fatalf("a file under a declared directory edited: %+v", w)
	}
}
