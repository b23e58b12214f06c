package cuda

import (
	"context"
	"hash/maphash"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

// TestSameSourceCoversEveryField: a Module call reuses a prepared key
// only for a source sameSource finds equal; a field it missed would serve
// one source's module for another.
func TestSameSourceCoversEveryField(t *testing.T) {
	base := func() Source {
		return Source{Code: []byte("c"), Path: "p", Options: []string{"-o"}, Headers: []Header{{Name: "h", Content: []byte("x")}},
			NameExpressions: []string{"n"}, Depends: []string{"d"}}
	}
	seed := maphash.MakeSeed()
	v := reflect.ValueOf(base())
	for i := range v.NumField() {
		src := cloneSource(base())
		f := reflect.ValueOf(&src).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("changed")
		case reflect.Slice:
			switch f.Type().Elem().Kind() {
			case reflect.String:
				f.Set(reflect.Append(f, reflect.ValueOf("changed")))
			case reflect.Uint8:
				f.Set(reflect.Append(f, reflect.ValueOf(byte('x'))))
			case reflect.Struct: // []Header: change each of its fields in turn below
				f.Set(reflect.Append(f, reflect.ValueOf(Header{})))
			default:
				t.Fatalf("Source.%s: teach this test and sameSource about it", v.Type().Field(i).Name)
			}
		default:
			t.Fatalf("Source.%s: a %s; teach this test, sameSource, hashSource and cloneSource about it", v.Type().Field(i).Name, f.Kind())
		}
		if sameSource(base(), src) || hashSource(seed, base()) == hashSource(seed, src) {
			t.Errorf("Source.%s is not compared or not hashed", v.Type().Field(i).Name)
		}
	}
	if n := reflect.TypeFor[Header]().NumField(); n != 2 {
		t.Fatalf("Header has %d fields; teach sameSource and hashSource about the new one", n)
	}
	for _, mutate := range []func(*Source){
		func(s *Source) { s.Headers[0].Name = "other" },
		func(s *Source) { s.Headers[0].Content[0] = 'y' },
	} {
		src := cloneSource(base())
		mutate(&src)
		if sameSource(base(), src) || hashSource(seed, base()) == hashSource(seed, src) {
			t.Errorf("a header's change is not seen: %+v", src.Headers)
		}
	}
	// The copy shares nothing with the caller's source.
	src := base()
	c := cloneSource(src)
	c.Code[0], c.Options[0], c.NameExpressions[0], c.Depends[0], c.Headers[0].Content[0] = 'z', "z", "z", "z", 'z'
	c.Headers[0].Name = "z"
	if !sameSource(src, base()) {
		t.Errorf("cloneSource shares memory: %+v", src)
	}
}

// TestPreparedIsKey: the prepared key a Module call uses is always the
// key Key computes, through edits of a header file (same size, times
// restored), of the source in place, of a header in memory and of the
// options; and a source asked again unchanged reuses its prepared key.
func TestPreparedIsKey(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc")
	hdr := filepath.Join(inc, "common.cuh")
	writeFile(t, hdr, "#define X 1\n")
	c := fakeCache(t, nil)
	src := Source{Code: []byte("#include \"common.cuh\"\n#include \"mem.h\"\n__global__ void k() {}\n"),
		Options: []string{"-I" + inc}, Headers: []Header{{Name: "mem.h", Content: []byte("int m;\n")}},
		NameExpressions: []string{"k"}}
	check := func(step string) {
		t.Helper()
		p, err := c.plan(src)
		if err != nil {
			t.Fatal(err)
		}
		prep, err := c.prepared(context.Background(), src, p)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustKey(t, c, src); prep.Digests().Key != want {
			t.Fatalf("%s: prepared key %s, Key %s", step, prep.Digests().Key, want)
		}
	}
	seen := map[string]bool{}
	distinct := func(step string) {
		t.Helper()
		check(step)
		d := mustKey(t, c, src).String()
		if seen[d] {
			t.Errorf("%s: the key did not change", step)
		}
		seen[d] = true
	}
	distinct("first")
	check("again")

	fi, err := os.Stat(hdr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hdr, []byte("#define X 2\n"), 0o644); err != nil { // same size
		t.Fatal(err)
	}
	os.Chtimes(hdr, fi.ModTime(), fi.ModTime())
	distinct("header edited, times restored")

	copy(src.Code, "#include \"common.cuh\"\n#include \"mem.h\"\n__global__ void j() {}\n")
	distinct("source edited in place")
	src.Headers[0].Content[0] = 'l'
	distinct("header in memory edited in place")
	src.Options = append(src.Options, "-DY=1")
	distinct("option added")
}

// TestPreparedReused: a source with nothing to stat, asked again, gets
// the prepared key of the first call; many goroutines asking for a few
// sources each get their own source's key.
func TestPreparedReused(t *testing.T) {
	c := fakeCache(t, nil)
	src := Source{Code: []byte("__global__ void k() {}\n"), Options: []string{"-no-source-include"}}
	p, _ := c.plan(src)
	a, err := c.prepared(context.Background(), src, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.prepared(context.Background(), src, p)
	if err != nil || a != b {
		t.Fatalf("second call: %p, %v; want the first's %p", b, err, a)
	}

	want := map[string]string{}
	for _, code := range []string{"__global__ void a() {}\n", "__global__ void b() {}\n", "__global__ void c() {}\n"} {
		want[code] = mustKey(t, c, Source{Code: []byte(code)}).String()
	}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			for i := range 50 {
				code := []string{"__global__ void a() {}\n", "__global__ void b() {}\n", "__global__ void c() {}\n"}[(g+i)%3]
				s := Source{Code: []byte(code)}
				p, _ := c.plan(s)
				prep, err := c.prepared(context.Background(), s, p)
				if err != nil {
					t.Error(err)
					return
				}
				if got := prep.Digests().Key.String(); got != want[code] {
					t.Errorf("%q: key %s, want %s", code, got, want[code])
					return
				}
			}
		})
	}
	wg.Wait()
}
