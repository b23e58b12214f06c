package opencl

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
)

func TestSpecializations(t *testing.T) {
	for _, c := range []struct {
		name    string
		bin     string
		shapes  []string
		lacking bool
	}{
		{"not pocl", "\x7fELF some other runtime's code", nil, false},
		{"empty", "", nil, false},
		{"generic only", "x/program.bc\x00/saxpy/0-0-0/saxpy.so\x00/sum/0-0-0/sum.so", nil, true},
		{"one specialized", "/saxpy/0-0-0/saxpy.so/saxpy/128-1-1-goffs0-smallgrid/saxpy.so/sum/0-0-0/sum.so",
			[]string{"128-1-1-goffs0-smallgrid"}, false},
		{"several", "/a/0-0-0/a.so/a/8-8-1-goffs0/a.so/a/16-1-1-smallgrid/a.so/b/0-0-0/b.so/b/8-8-1-goffs0/b.so",
			[]string{"16-1-1-smallgrid", "8-8-1-goffs0"}, false},
		{"not shapes", "/a/0-0-0/x/a/8-8/x/a/8-8-1-goffs1/x/a/1-2-3-4/x/a/8-8-1-smallgrid-goffs0/x", nil, true},
		{"no name", "/0-0-0/x", nil, false},
		{"name not an identifier", "/a-b/0-0-0/x", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Specializations([]byte(c.bin)); !slices.Equal(got, c.shapes) {
				t.Errorf("Specializations = %q, want %q", got, c.shapes)
			}
			if got := lacksLaunchCode([]byte(c.bin)); got != c.lacking {
				t.Errorf("lacksLaunchCode = %v, want %v", got, c.lacking)
			}
		})
	}
}

// shapeRef is the reference the scanner must agree with: a kernel
// directory, then a launch shape directory.
var shapeRef = regexp.MustCompile(`/([A-Za-z_][A-Za-z0-9_]*)/([0-9]+-[0-9]+-[0-9]+(?:-goffs0)?(?:-smallgrid)?)/`)

// FuzzSpecializations checks the scanner, which reads binaries from the
// tiers on every load, against a regular expression, on any bytes.
func FuzzSpecializations(f *testing.F) {
	for _, seed := range []string{
		"/saxpy/0-0-0/saxpy.so/saxpy/128-1-1-goffs0-smallgrid/saxpy.so",
		"/a/0-0-0//a/1-1-1/", "/a/0-0-0/a/0-0-0/", "/a/b/0-0-0/", "/_9/0-0-0/x/_9/2-2-2-smallgrid/",
		"", "/", "/a/0-0-0", "\x00/k/0-0-0/\xff/k/64-1-1-goffs0/",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, bin []byte) {
		got := Specializations(bin)
		lacking := lacksLaunchCode(bin)
		names := genericKernels(bin)
		// Every shape found is one the reference finds for a kernel with
		// a generic function.
		ref := map[string]bool{}
		for i := 0; i < len(bin); i++ {
			if m := shapeRef.FindSubmatch(bin[i:]); m != nil && slices.Contains(names, string(m[1])) && string(m[2]) != generic {
				ref[string(m[2])] = true
			}
		}
		for _, s := range got {
			if !ref[s] {
				t.Errorf("shape %q not in the reference %v", s, ref)
			}
		}
		for s := range ref {
			if !slices.Contains(got, s) {
				t.Errorf("reference shape %q missed: %q", s, got)
			}
		}
		if lacking != (len(names) > 0 && len(got) == 0) && lacking {
			t.Errorf("lacksLaunchCode with shapes %q", got)
		}
		if len(names) > 0 && len(ref) == 0 && !lacking {
			t.Errorf("generic kernels %q and no shapes, yet not lacking", names)
		}
	})
}

// BenchmarkLacksLaunchCode times the check that every program loaded from
// a tier pays, on a 1 MiB binary with two kernels, both specialized (the common, complete case), and
// both generic only.
func BenchmarkLacksLaunchCode(b *testing.B) {
	// Machine code and bitcode: bytes as varied as random ones, where one in
	// 256 is the '/' each directory search stops at.
	filler := make([]byte, 512*1024)
	rand.NewChaCha8([32]byte{}).Read(filler)
	for _, c := range []struct{ name, tree string }{
		{"complete", "/program.bc/sgemm/0-0-0/sgemm.so/sgemm/8-8-1-goffs0-smallgrid/sgemm.so/sgemv/0-0-0/sgemv.so/sgemv/64-1-1-goffs0-smallgrid/sgemv.so"},
		{"generic", "/program.bc/sgemm/0-0-0/sgemm.so/sgemv/0-0-0/sgemv.so"},
	} {
		bin := append(append([]byte{}, filler...), c.tree...)
		bin = append(bin, filler...)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(bin)))
			for b.Loop() {
				lacksLaunchCode(bin)
			}
		})
	}
}
