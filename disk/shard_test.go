package disk

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseJournal(t *testing.T) {
	a := journalRec{leaf: leafID{1, 2, 3}, delta: 1234}
	b := journalRec{leaf: leafID{9}, delta: -77}
	good := append(a.marshal(), b.marshal()...)
	torn := append(append(a.marshal(), b.marshal()[:30]...), b.marshal()...)
	flipped := bytes.Clone(good)
	flipped[5] ^= 1
	tests := []struct {
		name string
		data []byte
		want []journalRec
	}{
		{"empty", nil, nil},
		{"two records", good, []journalRec{a, b}},
		{"torn append between", torn, []journalRec{a, b}},
		{"truncated", good[:len(good)-1], []journalRec{a}},
		{"damaged first", flipped, []journalRec{b}},
		{"garbage", []byte(strings.Repeat("x", 200)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ends := parseJournal(tt.data)
			if len(got) != len(tt.want) || len(ends) != len(got) {
				t.Fatalf("got %d records, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("record %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func FuzzParseJournal(f *testing.F) {
	a := journalRec{leaf: leafID{1, 2, 3}, delta: 1234}.marshal()
	b := journalRec{leaf: leafID{0xff}, delta: -1}.marshal()
	f.Add(append(a, b...))
	f.Add(append(a[:40], b...))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, 3*journalRecLen))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, ends := parseJournal(data)
		if len(recs) != len(ends) {
			t.Fatal("records and offsets differ in number")
		}
		prev := 0
		for i, r := range recs {
			// Every record returned is exactly the bytes before its end.
			if ends[i] < prev+journalRecLen || ends[i] > len(data) ||
				!bytes.Equal(data[ends[i]-journalRecLen:ends[i]], r.marshal()) {
				t.Fatalf("record %d does not match its bytes", i)
			}
			prev = ends[i]
		}
	})
}

func TestParseTotals(t *testing.T) {
	var tt shardTotals
	for x := range shardCount {
		tt.known[x] = x%3 != 0
		tt.bytes[x] = int64(x) * 1000
	}
	tt.bytes[7] = 1<<63 - 1
	tt.cursor = 42
	b := tt.marshal()
	got := parseTotals(b)
	for x := range shardCount {
		if got.known[x] != tt.known[x] || (got.known[x] && got.bytes[x] != tt.bytes[x]) {
			t.Fatalf("shard %d: %v %d, want %v %d", x, got.known[x], got.bytes[x], tt.known[x], tt.bytes[x])
		}
	}
	if got.cursor != 42 {
		t.Fatalf("cursor %d", got.cursor)
	}
	for _, bad := range [][]byte{nil, b[:len(b)-1], append(bytes.Clone(b), '\n')} {
		if _, unknown := parseTotals(bad).total(); unknown != shardCount {
			t.Errorf("file of %d bytes: %d unknown totals, want all", len(bad), unknown)
		}
	}
	torn := bytes.Clone(b)
	copy(torn[sizeLineLen:], "12")
	torn[2*sizeLineLen-1] = 'x'
	if p := parseTotals(torn); p.known[1] || !p.known[2] {
		t.Errorf("torn line: known %v, %v", p.known[1], p.known[2])
	}
}

func FuzzParseTotals(f *testing.F) {
	var tt shardTotals
	for x := range shardCount {
		tt.known[x] = true
		tt.bytes[x] = int64(x) << 20
	}
	f.Add(tt.marshal())
	f.Add([]byte("0000000000000000001\n"))
	f.Add(bytes.Repeat([]byte(unknownLine), shardCount+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := parseTotals(data)
		if p.cursor < 0 || p.cursor >= shardCount {
			t.Fatalf("cursor %d out of range", p.cursor)
		}
		for x := range shardCount {
			if p.known[x] && p.bytes[x] < 0 {
				t.Fatalf("negative total %d", p.bytes[x])
			}
		}
		// What parses re-encodes to what parses the same.
		q := parseTotals(p.marshal())
		if q != p {
			t.Fatal("totals do not survive a round trip")
		}
	})
}

// TestLeafNames checks that a leaf's path and its name convert both ways,
// and that a path off the layout (a level missing or misnamed, an image
// under another image's fan) names no leaf.
func TestLeafNames(t *testing.T) {
	dir := "/cache/v2"
	id := idFor(testKey(1).Digests())
	leaf := id.path(dir)
	parts := strings.Split(strings.TrimPrefix(leaf, dir+"/"), "/")
	if len(parts) != levels || parts[fanLevel] != parts[imageLevel][:fanHexLen] {
		t.Fatalf("leaf path %s is off the layout", leaf)
	}
	s := &Store{dir: dir}
	if got := s.leafDir(testKey(1).Digests()); got != leaf {
		t.Fatalf("leafDir %s, id path %s", got, leaf)
	}
	if got, ok := idOf(dir, leaf); !ok || got != id {
		t.Fatalf("idOf(%s) = %x, %v", leaf, got, ok)
	}
	otherFan := "00"
	if parts[fanLevel] == otherFan {
		otherFan = "01"
	}
	with := func(level int, name string) string {
		p := slices.Clone(parts)
		p[level] = name
		return dir + "/" + strings.Join(p, "/")
	}
	for _, tc := range []struct{ name, path string }{
		{"another image's fan", with(fanLevel, otherFan)},
		{"fan of 3 digits", with(fanLevel, parts[imageLevel][:3])},
		{"upper-case image", with(imageLevel, strings.ToUpper(parts[imageLevel]))},
		{"no fan level", dir + "/" + strings.Join(slices.Delete(slices.Clone(parts), fanLevel, fanLevel+1), "/")},
		{"outside the version directory", "/cache/v1/" + strings.Join(parts, "/")},
		{"the image directory", filepath.Dir(filepath.Dir(leaf))},
	} {
		if got, ok := idOf(dir, tc.path); ok {
			t.Errorf("%s: idOf(%s) = %x, want none", tc.name, tc.path, got)
		}
	}
}
