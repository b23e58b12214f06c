package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/opencl"
)

// TestExportImportWarm exports a cache built with PoCL, imports it into an
// empty cache through a pipe, and builds again there: every build is a
// disk hit. An entry for a device this machine lacks is skipped unless
// --all-devices is given.
func TestExportImportWarm(t *testing.T) {
	requireOpenCL(t)
	src, dst := t.TempDir(), t.TempDir()
	file := writeKernel(t, src)
	opts := []string{"-DFACTOR=2", "-DFACTOR=3", "-DFACTOR=4"}
	for _, o := range opts {
		if r := run(t, src, "build", "--options", o, file); r.code != 0 {
			t.Fatalf("build: %+v", r)
		}
	}
	putFakes(t, testStore(t, src), "GPU this machine lacks", 1)

	bundle := filepath.Join(t.TempDir(), "cache.kcb")
	var e exportJSON
	runJSONOut(t, src, &e, "export", "--json", bundle)
	if e.Entries != 4 || e.File != bundle || e.Skipped != 0 {
		t.Fatalf("export: %+v", e)
	}
	var fake exportJSON
	runJSONOut(t, src, &fake, "export", "--json", "--device", "lacks", filepath.Join(t.TempDir(), "fake.kcb"))
	if fake.Entries != 1 {
		t.Errorf("export --device: %+v", fake)
	}

	// Import from standard input.
	cmd := kcacheCmd(t, dst, "import", "--json", "-")
	data, _ := os.ReadFile(bundle)
	cmd.Stdin = bytes.NewReader(data)
	r := runCmd(t, cmd)
	if r.code != 0 || !contains(r.stdout, `"entries":4`, `"imported":3`, `"skipped":1`) {
		t.Fatalf("import: %+v", r)
	}
	for _, o := range opts {
		reports, code := runJSON(t, kcacheCmd(t, dst, "build", "--json", "--options", o, file))
		if code != 0 || len(reports) != 1 || reports[0].Outcome != "disk" {
			t.Errorf("build %s after import: %+v, want a disk hit", o, reports)
		}
	}
	var all importJSON
	runJSONOut(t, dst, &all, "import", "--json", "--all-devices", bundle)
	if all.Imported != 4 || all.Skipped != 0 {
		t.Errorf("import --all-devices: %+v", all)
	}
	var ls []entryJSON
	runJSONOut(t, dst, &ls, "ls", "--json")
	if len(ls) != 4 {
		t.Errorf("%d entries after importing twice, want 4", len(ls))
	}

	// Export to standard output: the bundle is stdout, the report stderr.
	r = run(t, src, "export", "-")
	if r.code != 0 || !strings.Contains(r.stderr, "exported 4 entries") || !bytes.HasPrefix([]byte(r.stdout), []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		t.Errorf("export -: exit %d, stderr %q, %d bytes of stdout", r.code, r.stderr, len(r.stdout))
	}
}

// TestImportDamagedBundle: a bundle cut short or with a flipped byte is
// refused, exit status 1, and the cache stays empty.
func TestImportDamagedBundle(t *testing.T) {
	src := t.TempDir()
	putFakes(t, testStore(t, src), "Fake GPU", 10)
	bundle := filepath.Join(t.TempDir(), "cache.kcb")
	if r := run(t, src, "export", bundle); r.code != 0 {
		t.Fatal(r)
	}
	good, _ := os.ReadFile(bundle)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x01
	for name, data := range map[string][]byte{"truncated": good[:len(good)*3/4], "flipped": flipped} {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			bad := filepath.Join(dst, "bad.kcb")
			os.WriteFile(bad, data, 0o600)
			r := run(t, dst, "import", "--all-devices", bad)
			if r.code != 1 || !contains(r.stderr, "refused", "nothing imported") {
				t.Errorf("exit %d, stderr %q", r.code, r.stderr)
			}
			var ls []entryJSON
			runJSONOut(t, dst, &ls, "ls", "--json")
			if len(ls) != 0 {
				t.Errorf("%d entries imported from a damaged bundle", len(ls))
			}
		})
	}
	if r := run(t, src, "import", filepath.Join(src, "none.kcb")); r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing bundle: %+v", r)
	}
}

// TestImportRefusesBookkeeping imports, with --all-devices, a bundle made
// by hand that holds a dependency record and a rebuild claim beside a
// program: only the program is stored. A record vouches for a key's
// headers by their stat, so one crafted with this machine's stats and
// another text's digests would key a source by a text it no longer has;
// before, import --all-devices stored it.
func TestImportRefusesBookkeeping(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	ctx := context.Background()
	st := testStore(t, src)
	putFakes(t, st, "GPU", 1)
	var id kcache.Digest
	id[0] = 7
	record := &kcache.Key{
		Compiler: kcache.Compiler{Name: "kcache/deps-record"},
		Image:    kcache.Image{Format: "kcache/deps-record", Source: id[:]},
	}
	if !kcache.IsDependencyRecord(record) {
		t.Fatal("not the key of a dependency record")
	}
	claim := fakeKey("GPU", 1)
	claim.Image.Format = opencl.FormatRebuildClaim
	for _, k := range []*kcache.Key{record, claim} {
		if err := st.Put(ctx, k, kcache.Entry{Binary: []byte("forged")}); err != nil {
			t.Fatal(err)
		}
	}
	bundle := filepath.Join(t.TempDir(), "crafted.kcb")
	f, err := os.Create(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := st.ExportBundle(ctx, f, nil); err != nil || rep.Entries != 3 {
		t.Fatalf("export of every entry: %+v, %v", rep, err)
	}
	f.Close()
	var j importJSON
	runJSONOut(t, dst, &j, "import", "--json", "--all-devices", bundle)
	if j.Entries != 3 || j.Imported != 1 || j.Refused != 2 || j.Skipped != 0 {
		t.Errorf("import --all-devices: %+v, want 1 of 3 imported and 2 refused", j)
	}
	got := testStore(t, dst)
	for _, k := range []*kcache.Key{record, claim} {
		if _, err := got.Get(ctx, k); !errors.Is(err, kcache.ErrMiss) {
			t.Errorf("%s imported: %v", k.Compiler.Name+" "+k.Image.Format, err)
		}
	}
	if _, err := got.Get(ctx, fakeKey("GPU", 0)); err != nil {
		t.Errorf("the program: %v", err)
	}
}
