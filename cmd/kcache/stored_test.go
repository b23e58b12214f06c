package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// decodeReports decodes the lines of `build --json` or `warm --json`.
func decodeReports(t *testing.T, r result) []buildReport {
	t.Helper()
	var reports []buildReport
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var b buildReport
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		reports = append(reports, b)
	}
	return reports
}

// TestWarmSaysWhatWasStored runs warm and build, as a CI pre-warm step
// would, on caches that cannot keep what is built: each must say so, with
// the reason, in --json's "stored" and on standard error, and exit 1.
func TestWarmSaysWhatWasStored(t *testing.T) {
	requireOpenCL(t)
	kernels := writeKernels(t, 1)
	file := filepath.Join(kernels, "sub", "k0.cl")
	tests := []struct {
		name   string
		env    []string // added to kcacheCmd's
		stored bool
		reason string // in not_stored and in the message
	}{
		{"writable", nil, true, ""},
		{"persistent off", []string{"KCACHE_PERSISTENT=0"}, false, "KCACHE_PERSISTENT=0"},
		{"directory unusable", []string{"KCACHE_DIR=/proc/kcache-test"}, false, "/proc/kcache-test"},
		{"image over the limit", []string{"KCACHE_MAX_IMAGE_SIZE=1"}, false, "KCACHE_MAX_IMAGE_SIZE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, args := range [][]string{{"warm", "--json", file}, {"build", "--json", file}} {
				cmd := kcacheCmd(t, t.TempDir(), args...)
				cmd.Env = append(cmd.Env, tt.env...)
				r := runCmd(t, cmd)
				reports := decodeReports(t, r)
				if len(reports) != 1 || reports[0].Outcome != "built" || reports[0].Stored != tt.stored {
					t.Fatalf("%s: reports %+v, want built and stored=%v\n%s", args[0], reports, tt.stored, r.stderr)
				}
				wantCode := 0
				if !tt.stored {
					wantCode = 1
					if !strings.Contains(reports[0].NotStored, tt.reason) ||
						!strings.Contains(r.stderr, "kcache: 1 file built but not stored: ") || !strings.Contains(r.stderr, tt.reason) {
						t.Errorf("%s: reason %q, stderr %q; want both to name %q", args[0], reports[0].NotStored, r.stderr, tt.reason)
					}
				}
				if r.code != wantCode {
					t.Errorf("%s: exit %d, want %d\n%s", args[0], r.code, wantCode, r.stderr)
				}
			}
		})
	}
}

// TestWarmSummaryHuman: the summary names what was stored, and where.
func TestWarmSummaryHuman(t *testing.T) {
	requireOpenCL(t)
	kernels := writeKernels(t, 1)
	dir := t.TempDir()
	r := run(t, dir, "warm", filepath.Join(kernels, "sub"))
	want := "warmed 1 file: 1 built; 1 stored in " + filepath.Join(dir, "cache") + "\n"
	if r.code != 0 || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
	cmd := kcacheCmd(t, dir, "warm", filepath.Join(kernels, "sub"))
	cmd.Env = append(cmd.Env, "KCACHE_PERSISTENT=0")
	r = runCmd(t, cmd)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "warmed 1 file: 1 built; none stored\n") {
		t.Errorf("persistent off: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestFailedBuildsReportFailed: a file that does not compile is "failed",
// never "built", and the compiler's own lines on standard error ("1 error
// generated.") stay out of the way: the build log is in the report.
func TestFailedBuildsReportFailed(t *testing.T) {
	requireOpenCL(t)
	kernels := writeKernels(t, 1)
	broken := filepath.Join(kernels, "broken.cl")
	for _, args := range [][]string{{"warm", "--json", kernels}, {"build", "--json", broken, broken}, {"build", broken}} {
		r := run(t, t.TempDir(), args...)
		if r.code != 1 {
			t.Errorf("%v: exit %d, want 1", args, r.code)
		}
		if regexp.MustCompile(`(?m)^[0-9]+ errors? generated`).MatchString(r.stderr) {
			t.Errorf("%v: the compiler's summary reached standard error: %q", args, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			if line != "" && !strings.HasPrefix(line, "kcache: ") && !strings.HasPrefix(line, "warmed ") {
				t.Errorf("%v: stray line on standard error: %q", args, line)
			}
		}
		if args[1] != "--json" {
			continue
		}
		for _, rep := range decodeReports(t, r) {
			if rep.File == broken && (rep.Outcome != "failed" || rep.Stored || rep.Error == "") {
				t.Errorf("%v: %+v, want failed, not stored, with the log", args, rep)
			}
		}
	}
}

// TestStrayFilter: the compiler's summary lines go, anything else is kept
// as a message.
func TestStrayFilter(t *testing.T) {
	var out strings.Builder
	strayFilter(strings.NewReader("1 error generated.\n2 warnings generated.\n1 warning and 2 errors generated.\nPoCL: something odd\n\n"), &out)
	if want := "kcache: compiler: PoCL: something odd\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
