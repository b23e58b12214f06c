package opencl

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestWorkDirInDebugInfo: built with -g, PoCL's clang writes the working
// directory into the binary (DW_AT_comp_dir), while the key names the
// header relative to it. A process in another directory, with the same
// header there, must build its own binary, not be served one that names
// the first directory; without -g, the two share the entry.
func TestWorkDirInDebugInfo(t *testing.T) {
	for _, tc := range []struct {
		options string
		shared  bool
	}{
		{"-g", false},
		{"-cl-fast-relaxed-math", true},
	} {
		t.Run(tc.options, func(t *testing.T) {
			cache := t.TempDir()
			// A macro of this run's own: PoCL's cache, which does not key
			// the working directory, must not hand an earlier run's -g
			// binary to this run's first build (go test -count).
			opts := fmt.Sprintf("%s -DRUN=%d", tc.options, time.Now().UnixNano())
			for i, wd := range []string{t.TempDir(), t.TempDir()} {
				t.Chdir(wd)
				writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 1.0f\n", time.Hour)
				ts := newTierSet(t, cache)
				p := ts.program(t, Source{Code: []byte(headerSource), Options: opts})
				want := kcache.OutcomeBuilt
				if i == 1 && tc.shared {
					want = kcache.OutcomeDisk
				}
				if p.Outcome != want {
					t.Fatalf("process %d: outcome %v, want %v", i+1, p.Outcome, want)
				}
				blob, err := p.Blob(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				// Only the first build is sure to be compiled here: PoCL's
				// own cache, on in this test process, may hand the second
				// the binary of the first.
				if names := bytes.Contains(blob, []byte(wd)); i == 0 && names != (tc.options == "-g") {
					t.Errorf("the binary names its working directory: %v", names)
				}
				ts.saxpy(t, p, 1)
			}
		})
	}
}
