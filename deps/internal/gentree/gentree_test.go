package gentree

import (
	"bytes"
	"reflect"
	"testing"
)

// TestDeterministic: a seed and a set of classes name one program, so a
// failing seed reproduces.
func TestDeterministic(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		a, b := Generate(seed, All()), Generate(seed, All())
		if !reflect.DeepEqual(a.Render(0), b.Render(0)) || !reflect.DeepEqual(a.Options, b.Options) || !reflect.DeepEqual(a.Links, b.Links) {
			t.Fatalf("seed %d: two programs", seed)
		}
	}
}

// TestEveryClassShows: each class, on alone, changes what is generated
// within a few seeds: structural classes leave lines of their own,
// lexical ones change the bytes, and turning a lexical class off at
// render time undoes it.
func TestEveryClassShows(t *testing.T) {
	for _, c := range Classes() {
		shown := false
		for seed := int64(1); seed <= 20 && !shown; seed++ {
			p := Generate(seed, Of(c))
			if !c.Lexical() {
				shown = p.LineClasses().Has(c) || len(p.Links) > 0 || len(p.Options) != len(Generate(seed, Of()).Options)
				continue
			}
			on, off := p.Render(0), p.Render(Of(c))
			for path := range on {
				if !bytes.Equal(on[path], off[path]) {
					shown = true
				}
			}
		}
		if !shown {
			t.Errorf("class %s never showed in 20 programs", c)
		}
	}
}

// TestWrite: a program's tree can be written, links included.
func TestWrite(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		if err := Generate(seed, All()).Write(t.TempDir(), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParseSet reads class lists as the differential test's
// KCACHE_DIFF_CLASSES gives them.
func TestParseSet(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Set
	}{
		{"", Of()},
		{"lone-cr", Of(CR)},
		{"bom, trigraph", Of(BOM, Trigraph)},
		{"all", All()},
	} {
		got, err := ParseSet(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSet(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseSet("nonsense"); err == nil {
		t.Error("ParseSet(nonsense): no error")
	}
}
