package suite

import (
	"encoding/binary"
	"math"
	"math/bits"
	"regexp"
	"strings"
	"testing"
)

// referenceOutput returns what a correct run leaves in s's buffers: the
// reference for checked buffers, the initial contents elsewhere.
func referenceOutput(s spec) [][]byte {
	out := make([][]byte, len(s.Buffers))
	for i, b := range s.Buffers {
		out[i] = make([]byte, b.Size)
		copy(out[i], b.Init)
	}
	for _, e := range s.expects {
		out[e.buf] = e.encoded()
	}
	return out
}

// corrupt damages element i of expectation e in out, by more than any
// tolerance the suite uses (rtol < 0.25, atol < 0.5).
func corrupt(out [][]byte, e expect, i int) {
	b := out[e.buf]
	switch {
	case e.f32 != nil:
		v := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		v += float32(math.Copysign(0.25*math.Abs(float64(v))+0.5, float64(v)))
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	case e.u32 != nil:
		binary.LittleEndian.PutUint32(b[4*i:], binary.LittleEndian.Uint32(b[4*i:])^1)
	default:
		b[i] ^= 1
	}
}

// elements returns the number of elements expectation e checks.
func elements(out [][]byte, e expect) int {
	if e.u8 != nil {
		return len(out[e.buf])
	}
	return len(out[e.buf]) / 4
}

func TestChecksAcceptReferenceRejectCorruption(t *testing.T) {
	for _, s := range specs() {
		t.Run(s.Name, func(t *testing.T) {
			if len(s.expects) == 0 {
				t.Fatal("case checks nothing")
			}
			if err := s.Verify(referenceOutput(s)); err != nil {
				t.Fatalf("reference output rejected: %v", err)
			}
			for _, e := range s.expects {
				if e.buf < 0 || e.buf >= len(s.Buffers) || len(e.encoded()) != s.Buffers[e.buf].Size {
					t.Fatalf("expectation for buffer %d does not cover the buffer", e.buf)
				}
				n := elements(referenceOutput(s), e)
				// First, last and middle: catches loops that skip the ends.
				for _, i := range []int{0, n - 1, n / 2} {
					out := referenceOutput(s)
					corrupt(out, e, i)
					if err := s.Verify(out); err == nil {
						t.Errorf("buffer %q: corrupting element %d went unnoticed", s.Buffers[e.buf].Name, i)
					}
				}
				out := referenceOutput(s)
				out[e.buf] = out[e.buf][:len(out[e.buf])-4]
				if err := s.Verify(out); err == nil {
					t.Errorf("buffer %q: short output went unnoticed", s.Buffers[e.buf].Name)
				}
			}
		})
	}
}

var (
	kebab      = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	kernelDecl = regexp.MustCompile(`(?:__kernel|kernel)\s+(?:__attribute__\(\([^)]*\)\)\)\s*)?void\s+(\w+)`)
)

func TestSuiteShape(t *testing.T) {
	all := All()
	if len(all) < 20 {
		t.Fatalf("%d cases, want at least 20", len(all))
	}
	names := map[string]bool{}
	categories := map[string]int{}
	withHeader := 0
	for _, c := range all {
		if !kebab.MatchString(c.Name) || names[c.Name] {
			t.Errorf("name %q: not kebab-case or not unique", c.Name)
		}
		names[c.Name] = true
		categories[c.Category]++
		if c.Category == "" || c.Source == "" || c.Check == nil || len(c.Launches) == 0 {
			t.Errorf("%s: incomplete case", c.Name)
		}
		if strings.Contains(c.Source, `#include "common.h"`) {
			withHeader++
			if c.Headers["common.h"] == "" {
				t.Errorf("%s: includes common.h without carrying it in Headers", c.Name)
			}
		}
		checkShape(t, c)
	}
	if withHeader < 3 {
		t.Errorf("%d cases use common.h, want at least 3", withHeader)
	}
	if len(categories) < 8 {
		t.Errorf("only %d categories: %v", len(categories), categories)
	}
}

// checkShape checks buffers, launches and arguments of one case.
func checkShape(t *testing.T, c Case) {
	t.Helper()
	total := 0
	for _, b := range c.Buffers {
		if b.Size <= 0 || (b.Init != nil && len(b.Init) != b.Size) {
			t.Errorf("%s: buffer %q: size %d, %d initial bytes", c.Name, b.Name, b.Size, len(b.Init))
		}
		total += b.Size
	}
	if total > 8<<20 {
		t.Errorf("%s: %d bytes of buffers; keep cases small", c.Name, total)
	}
	declared := map[string]bool{}
	for _, m := range kernelDecl.FindAllStringSubmatch(c.Source, -1) {
		declared[m[1]] = true
	}
	for i, l := range c.Launches {
		if !declared[l.Kernel] {
			t.Errorf("%s: launch %d: kernel %q not declared in the source", c.Name, i, l.Kernel)
		}
		if len(l.Global) < 1 || len(l.Global) > 3 || (l.Local != nil && len(l.Local) != len(l.Global)) {
			t.Errorf("%s: launch %d: global %v, local %v", c.Name, i, l.Global, l.Local)
		}
		items := 1
		for d, g := range l.Global {
			if l.Local != nil && (l.Local[d] <= 0 || g%l.Local[d] != 0) {
				t.Errorf("%s: launch %d: global %v not a multiple of local %v", c.Name, i, l.Global, l.Local)
			}
			if l.Local != nil {
				items *= l.Local[d]
			}
		}
		if items > 64 || bits.OnesCount(uint(items)) != 1 {
			t.Errorf("%s: launch %d: work-group of %d items, want a power of two ≤ 64", c.Name, i, items)
		}
		for j, a := range l.Args {
			kinds := 0
			if a.Buffer >= 0 {
				kinds++
				if a.Buffer >= len(c.Buffers) {
					t.Errorf("%s: launch %d arg %d: buffer %d out of range", c.Name, i, j, a.Buffer)
				}
			}
			if a.Scalar != nil {
				kinds++
			}
			if a.Local > 0 {
				kinds++
			}
			if kinds != 1 {
				t.Errorf("%s: launch %d arg %d: %+v is not exactly one kind", c.Name, i, j, a)
			}
		}
	}
}

func TestAllIsDeterministic(t *testing.T) {
	a, b := All(), All()
	for i := range a {
		for j := range a[i].Buffers {
			if string(a[i].Buffers[j].Init) != string(b[i].Buffers[j].Init) {
				t.Errorf("%s: buffer %q differs between calls", a[i].Name, a[i].Buffers[j].Name)
			}
		}
	}
}

func TestBuildOptions(t *testing.T) {
	c := Case{Options: "-DWG=64", Headers: map[string]string{"common.h": "x"}}
	if got := c.BuildOptions("/tmp/h"); got != "-DWG=64 -I /tmp/h" {
		t.Errorf("BuildOptions = %q", got)
	}
	c.Headers = nil
	if got := c.BuildOptions("/tmp/h"); got != "-DWG=64" {
		t.Errorf("BuildOptions without headers = %q", got)
	}
}
