package deps

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache"
)

// checkoutKey scans, as a build system with absolute paths would run it,
// the source of a checkout at root, under base when relocate is set, and
// returns the options and headers its key would hold.
func checkoutKey(t *testing.T, root, base string, relocate bool) ([]string, []kcache.Header) {
	t.Helper()
	args := []string{"-I", root + "/include", "-cl-fast-relaxed-math", "-DN=4"}
	in := Input{Source: []byte("#include \"k.h\"\n"), Args: args, WorkDir: t.TempDir(), CompleteSearchPath: true}
	keyArgs := args
	if relocate {
		var ok bool
		if keyArgs, ok = RelocateArgs(args, base); !ok {
			t.Fatalf("RelocateArgs(%q) refused", args)
		}
		in.BaseDir = base
	}
	headers, _ := mustScan(t, NewScanner(nil), in)
	return keyArgs, headers
}

// TestBaseDirSharesCheckouts: two checkouts of one project in different
// places, built with absolute paths, share keys under a base directory
// each, and not without; a header that differs still tells them apart.
func TestBaseDirSharesCheckouts(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "alice", "proj"), filepath.Join(tmp, "bob", "proj")
	for _, root := range []string{a, b} {
		write(t, root+"/include/k.h", "#include \"inner.h\"\n")
		write(t, root+"/include/inner.h", "#define K 1\n")
	}
	argsA, hA := checkoutKey(t, a, a, true)
	argsB, hB := checkoutKey(t, b, b, true)
	if !slices.Equal(argsA, argsB) || !slices.Equal(hA, hB) {
		t.Fatalf("checkouts under their base differ:\n%q %v\n%q %v", argsA, hA, argsB, hB)
	}
	if want := BaseDirPrefix + "include/k.h"; !slices.ContainsFunc(hA, func(h kcache.Header) bool { return h.Name == want }) {
		t.Errorf("headers %v, want one named %q", hA, want)
	}
	if _, plainA := checkoutKey(t, a, a, false); slices.Equal(plainA, hA) {
		t.Error("without a base directory the key names no absolute place")
	}
	write(t, b+"/include/inner.h", "#define K 2\n")
	if _, hB := checkoutKey(t, b, b, true); slices.Equal(hA, hB) {
		t.Error("a different header under the base directory gives the same key")
	}
}

// TestBaseDirKeepsPlacesTheCompilerWrites: where a header expands
// __FILE__, the compiler writes its place into the binary, so the key
// names it in full; and options that write places (debug information)
// or that RelocateArgs does not know refuse relocation.
func TestBaseDirKeepsPlacesTheCompilerWrites(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	for _, root := range []string{a, b} {
		write(t, root+"/include/k.h", "#include \"inner.h\"\n")
		write(t, root+"/include/inner.h", "const char *where = __FILE__;\n")
	}
	_, hA := checkoutKey(t, a, a, true)
	_, hB := checkoutKey(t, b, b, true)
	if slices.Equal(hA, hB) {
		t.Errorf("headers expanding __FILE__ in two places share a key: %v", hA)
	}
	for _, args := range [][]string{
		{"-I", a + "/include", "-g"},
		{"-I", a + "/include", "-G"},
		{"-I", a + "/include", "-lineinfo"},
		{"-I", a + "/include", "-ffile-prefix-map=/x=/y"},
		{"-I", a + "/include", "--some-new-option"},
	} {
		if got, ok := RelocateArgs(args, a); ok || !slices.Equal(got, args) {
			t.Errorf("RelocateArgs(%q) = %q, %v; want the options unchanged and false", args, got, ok)
		}
	}
}

// TestRelocateArgs: the paths under base are relocated in every spelling
// of the options, and no other path is.
func TestRelocateArgs(t *testing.T) {
	got, ok := RelocateArgs([]string{
		"-I/src/p/inc", "--include-path=/src/p/cuda", "-isystem", "/usr/include", "-include", "/src/p/pre.h",
		"-I", "rel/inc", "-I", "/src/p/a/../b", "-DPATH=/src/p/x", "-I", "/src/px",
	}, "/src/p/")
	want := []string{
		"-I", "$BASE/inc", "-I", "$BASE/cuda", "-isystem", "/usr/include", "-include", "$BASE/pre.h",
		"-I", "rel/inc", "-I", "/src/p/a/../b", "-D", "PATH=/src/p/x", "-I", "/src/px",
	}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("RelocateArgs:\n got %q %v\nwant %q", got, ok, want)
	}
	if _, ok := RelocateArgs([]string{"-I", "/x"}, "relative"); ok {
		t.Error("a relative base directory was accepted")
	}
}
