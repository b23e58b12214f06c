package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/demo/suite"
	"github.com/kcache/kcache/opencl"
)

// prefilledRow is one kernel's line of the report.
type prefilledRow struct {
	Case          string  `json:"case"`
	Specs         string  `json:"specializations"`
	BuildMS       float64 `json:"build_ms"`       // first process from `kcache build`
	SecondMS      float64 `json:"second_ms"`      // second process from `kcache build`
	SpecializedMS float64 `json:"specialized_ms"` // first process from `kcache build --specialize`
	FloorMS       float64 `json:"floor_ms"`
	Error         string  `json:"error,omitempty"`
}

// The prefilled demo measures a process that starts from a cache filled
// only by `kcache build`, which launches nothing, against the floor. Its
// phases, each a process as in the demo:
//   - complete: the suite through kcache from an empty cache, so each
//     binary is stored after its first launches (what the floor reads);
//   - `kcache build` of each case into a second cache, and
//     `kcache build --specialize` into a third, with the specializations
//     the complete binaries hold;
//   - then, repeated and interleaved: the suite from a fresh copy of each
//     prefilled cache, a second time from the copy of the first (after the
//     first process replaced what `kcache build` stored), and the floor.
func runDemoPrefilled(ctx context.Context, out, progress io.Writer, only []string, repeat int) error {
	if err := opencl.Load(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kcache-prefilled-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	include := filepath.Join(dir, "include")
	if err := writeSuiteHeaders(include); err != nil {
		return err
	}
	complete := phaseAt("complete", modeCache, filepath.Join(dir, "complete"))
	if _, err := runPhaseProcess(ctx, progress, complete, dir, include, only); err != nil {
		return fmt.Errorf("phase complete: %w", err)
	}
	specs, err := completeSpecializations(ctx, filepath.Join(dir, "complete"), include, only)
	if err != nil {
		return err
	}
	if err := prefill(ctx, dir, include, only, specs); err != nil {
		return err
	}
	round := map[string]int{} // phase -> the round its next run is in
	results, err := runRounds(prefilledPhases, repeat, func(p prefilledPhase) (map[string]phaseResult, error) {
		cache := filepath.Join(dir, p.from)
		if p.mode == modeCache {
			// A copy per round: the first process finds the cache as
			// `kcache build` left it, the second as the first left it.
			cache = filepath.Join(dir, fmt.Sprintf("%s-%d", p.from, round[p.name]))
			round[p.name]++
			if _, err := os.Stat(cache); os.IsNotExist(err) {
				if err := exec.CommandContext(ctx, "cp", "-a", filepath.Join(dir, p.from), cache).Run(); err != nil {
					return nil, err
				}
			}
		}
		rs, err := runPhaseProcess(ctx, progress, phaseAt(p.name, p.mode, cache), dir, include, only)
		for name, r := range rs {
			if p.outcome != "" && r.Outcome != p.outcome && r.Error == "" {
				r.Error = fmt.Sprintf("outcome %s, want %s", r.Outcome, p.outcome)
				rs[name] = r
			}
		}
		return rs, err
	})
	if err != nil {
		return err
	}
	return writePrefilled(out, prefilledRows(selectCases(only), results, specs))
}

// prefilledPhase is a timed phase of the prefilled demo: the cache it
// starts from, and the outcome each program must have. Every one runs in
// every round.
type prefilledPhase struct{ name, from, mode, outcome string }

func (p prefilledPhase) step() (string, bool) { return p.name, true }

// prefilledPhases are the timed phases of a round, in order.
// The second process from the kcache build cache runs after another phase,
// not right after the rebuild, whose writes the machine is still busy with.
var prefilledPhases = []prefilledPhase{
	{"build", "built", modeCache, "built"}, // rebuilt once, to complete the entry
	{"specialized", "specialized", modeCache, "disk"},
	{"build-2nd", "built", modeCache, "disk"}, // the completed entry
	{"floor", "complete", modeFloor, ""},
}

// phaseAt is a kcache phase whose persistent tier is the directory cache.
func phaseAt(name, mode, cache string) demoPhase {
	return demoPhase{name: name, mode: mode, env: func(string) []string {
		return []string{"KCACHE_DIR=" + cache, "KCACHE_PERSISTENT=1", "POCL_KERNEL_CACHE=0"}
	}}
}

// specInBinary finds the work-group functions a PoCL binary holds: each is
// a file under /KERNEL/SPECIALIZATION/ in the binary's file tree, and the
// generic one is 0-0-0.
var specInBinary = regexp.MustCompile(`/[A-Za-z_][A-Za-z0-9_]*/([0-9]+-[0-9]+-[0-9]+(?:-goffs0)?(?:-smallgrid)?)/`)

// completeSpecializations returns, per case, the specializations other
// than the generic one that its complete binary in cacheDir holds.
func completeSpecializations(ctx context.Context, cacheDir, include string, only []string) (map[string]string, error) {
	st, err := disk.Open(disk.Options{Dir: cacheDir})
	if err != nil {
		return nil, err
	}
	dev, err := host.SelectDevice(0)
	if err != nil {
		return nil, err
	}
	cl, err := opencl.NewContext(dev)
	if err != nil {
		return nil, err
	}
	defer cl.Release()
	bins := kcache.New(kcache.DefaultConfig(func(string) string { return "" }), nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	cache := opencl.NewCache(cl, bins, opencl.CacheOptions{})
	defer cache.Close()
	specs := map[string]string{}
	for _, c := range selectCases(only) {
		key, err := cache.Key(dev, opencl.Source{Code: []byte(c.Source), Options: c.BuildOptions(include)})
		if err != nil {
			return nil, err
		}
		e, err := st.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("%s: no complete binary: %w", c.Name, err)
		}
		var found []string
		for _, m := range specInBinary.FindAllSubmatch(e.Binary, -1) {
			if s := string(m[1]); s != "0-0-0" && !slices.Contains(found, s) {
				found = append(found, s)
			}
		}
		slices.Sort(found)
		specs[c.Name] = strings.Join(found, ",")
	}
	return specs, nil
}

// prefill runs `kcache build` on every case's source into dir/built, and
// `kcache build --specialize` into dir/specialized, one process per case
// since each case has build options of its own.
func prefill(ctx context.Context, dir, include string, only []string, specs map[string]string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	for _, c := range selectCases(only) {
		file := filepath.Join(src, c.Name+".cl")
		if err := os.WriteFile(file, []byte(c.Source), 0o644); err != nil {
			return err
		}
		for _, target := range []string{"built", "specialized"} {
			args := []string{"build", "--json", "--options", c.BuildOptions(include)}
			if target == "specialized" && specs[c.Name] != "" {
				args = append(args, "--specialize", specs[c.Name])
			}
			// Built from its own directory, so that the file's key holds
			// no -I of its directory (fileSource in cmd/kcache): the
			// phases look the source up as text, with the case's options
			// alone.
			cmd := exec.CommandContext(ctx, self, append(args, filepath.Base(file))...)
			cmd.Dir = src
			cmd.Env = append(cleanEnv(os.Environ()), phaseAt("", "", filepath.Join(dir, target)).env("")...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			outb, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("kcache build %s: %w: %s%s", c.Name, err, outb, stderr.Bytes())
			}
			var r struct { // what the demo reads of `kcache build --json`
				Outcome string `json:"outcome"`
			}
			if err := json.Unmarshal(outb, &r); err != nil || r.Outcome != "built" {
				return fmt.Errorf("kcache build %s: %q", c.Name, outb)
			}
		}
	}
	return nil
}

func prefilledRows(cases []suite.Case, results map[string]map[string]phaseResult, specs map[string]string) []prefilledRow {
	var rows []prefilledRow
	for _, c := range cases {
		r := prefilledRow{Case: c.Name, Specs: specs[c.Name]}
		get := cellsOf(results, c.Name)
		r.BuildMS, r.SecondMS = get.ms("build"), get.ms("build-2nd")
		r.SpecializedMS, r.FloorMS = get.ms("specialized"), get.ms("floor")
		r.Error = get.err
		rows = append(rows, r)
	}
	return rows
}

func writePrefilled(w io.Writer, rows []prefilledRow) error {
	total := prefilledRow{Case: "TOTAL"}
	for _, r := range rows {
		total.BuildMS += r.BuildMS
		total.SecondMS += r.SecondMS
		total.SpecializedMS += r.SpecializedMS
		total.FloorMS += r.FloorMS
	}
	err := writeReportTable(w, "kernel\tbuild: 1st ms\tbuild: 2nd ms\t--specialize: 1st ms\tfloor ms\t1st/floor\t2nd/floor\tspecialize/floor\tcheck\t",
		"%s\t%.1f\t%.2f\t%.2f\t%.2f\t%.1fx\t%.2fx\t%.2fx\t%s\t\n", rows, total, func(r prefilledRow) []any {
			return []any{r.Case, r.BuildMS, r.SecondMS, r.SpecializedMS, r.FloorMS,
				ratio(r.BuildMS, r.FloorMS), ratio(r.SecondMS, r.FloorMS), ratio(r.SpecializedMS, r.FloorMS)}
		})
	if err != nil {
		return err
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%s: --specialize %s\n", r.Case, r.Specs)
		if r.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", r.Case, r.Error)
		}
	}
	if countFailed(rows) > 0 {
		return ErrFailed
	}
	return nil
}
