package deps_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// TestWorkDirKeyedWhereOptionsWritePlaces: the key names headers relative
// to the working directory, so two checkouts share keys; where an option
// may write the working directory into the binary (-g, an option the scan
// does not know), the key holds the directory too.
func TestWorkDirKeyedWhereOptionsWritePlaces(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		shared bool
	}{
		{nil, true},
		{[]string{"-I", "inc", "-DX=1", "-cl-mad-enable", "-w"}, true},
		{[]string{"-g"}, false},
		{[]string{"-I", "inc", "-gline-tables-only"}, false},
		{[]string{"-some-unknown-option"}, false},
	} {
		var keys [2][]kcache.Header
		for i := range keys {
			wd := t.TempDir()
			if err := os.Mkdir(filepath.Join(wd, "inc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wd, "inc", "x.h"), []byte("#define X 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			in := deps.Input{Source: []byte("#include \"inc/x.h\"\n"), WorkDir: wd, Args: tc.args, SearchWorkDir: true, CompleteSearchPath: true}
			h, _, err := deps.NewScanner(nil).Scan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			keys[i] = h
		}
		if shared := slices.Equal(keys[0], keys[1]); shared != tc.shared {
			t.Errorf("%q: two working directories share the key: %v, want %v (%v, %v)", tc.args, shared, tc.shared, keys[0], keys[1])
		}
	}
}
