package demo

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kcache/kcache/internal/demo/cudasuite"
)

// cupyCase is one case as the CuPy peer script reads it.
type cupyCase struct {
	Name            string       `json:"name"`
	Category        string       `json:"category"`
	Source          string       `json:"source"`
	Options         []string     `json:"options"`
	NameExpressions []string     `json:"name_expressions"`
	Buffers         []cupyBuffer `json:"buffers"`
	Launches        []cupyLaunch `json:"launches"`
	OutDir          string       `json:"outdir"`
}

type cupyBuffer struct {
	File string `json:"file"` // initial contents; "" for zeros
	Size int    `json:"size"`
}

type cupyLaunch struct {
	Kernel string    `json:"kernel"`
	Grid   [3]int    `json:"grid"`
	Block  [3]int    `json:"block"`
	Shared int       `json:"shared"`
	Args   []cupyArg `json:"args"`
}

type cupyArg struct {
	Buffer int    `json:"buffer"`
	Type   string `json:"type,omitempty"`
	Value  any    `json:"value,omitempty"`
}

// cupySpec describes the cases for the CuPy peer, writing each case's
// initial buffers under dir.
func cupySpec(dir, include string, cases []cudasuite.Case) (map[string]any, error) {
	var out []cupyCase
	for _, c := range cases {
		cd := filepath.Join(dir, "cupy-io", c.Name)
		if err := os.MkdirAll(filepath.Join(cd, "out"), 0o755); err != nil {
			return nil, err
		}
		// Never null in JSON: the script hands the options to CuPy as a tuple.
		opts := append([]string{}, c.BuildOptions(include)...)
		cc := cupyCase{Name: c.Name, Category: c.Category, Source: c.Source, Options: opts,
			NameExpressions: c.NameExpressions, OutDir: filepath.Join(cd, "out")}
		for i, b := range c.Buffers {
			cb := cupyBuffer{Size: b.Size}
			if b.Init != nil {
				cb.File = filepath.Join(cd, fmt.Sprintf("%d.bin", i))
				if err := os.WriteFile(cb.File, b.Init, 0o644); err != nil {
					return nil, err
				}
			}
			cc.Buffers = append(cc.Buffers, cb)
		}
		for _, l := range c.Launches {
			cl := cupyLaunch{Kernel: l.Kernel, Grid: [3]int{l.Grid.X, l.Grid.Y, l.Grid.Z}, Block: [3]int{l.Block.X, l.Block.Y, l.Block.Z}, Shared: l.Shared}
			for _, a := range l.Args {
				ca := cupyArg{Buffer: a.Buffer}
				switch v := a.Value.(type) {
				case int32:
					ca.Type, ca.Value = "i32", v
				case float32:
					ca.Type, ca.Value = "f32", v
				}
				cl.Args = append(cl.Args, ca)
			}
			cc.Launches = append(cc.Launches, cl)
		}
		out = append(out, cc)
	}
	return map[string]any{"device": demoDevice, "cases": out}, nil
}

// checkCuPyOutputs checks the buffers the CuPy peer left against the Go
// reference, as every other phase's are checked.
func checkCuPyOutputs(dir string, cases []cudasuite.Case, results map[string]map[string]cudaResult) {
	for _, phase := range []string{"cupy-cold", "cupy"} {
		for _, c := range cases {
			r, ok := results[phase][c.Name]
			if !ok || r.Error != "" {
				continue
			}
			out := make([][]byte, len(c.Buffers))
			var err error
			for i := range out {
				if out[i], err = os.ReadFile(filepath.Join(dir, "cupy-io", c.Name, "out", fmt.Sprintf("%d.bin", i))); err != nil {
					break
				}
			}
			if err == nil {
				err = c.Verify(out)
			}
			if err != nil {
				r.Error = "CuPy's result: " + err.Error()
				results[phase][c.Name] = r
			}
		}
	}
}

// cudaDemoRow is one kernel's line of the CUDA demo's report; with --json
// it is printed as is.
type cudaDemoRow struct {
	Case           string  `json:"case"`
	Category       string  `json:"category"`
	Bytes          int     `json:"cubin_bytes"`
	ColdMS         float64 `json:"cold_ms"`
	WarmMS         float64 `json:"warm_ms"`
	ComputeCacheMS float64 `json:"computecache_ms"`
	CuPyMS         float64 `json:"cupy_ms,omitempty"`
	FloorMS        float64 `json:"floor_ms"`
	// WarmModuleMS and FloorModuleMS are the parts of WarmMS and FloorMS
	// up to the module loaded (the rest is the case's launches): where a
	// warm start's time over its floor goes.
	WarmModuleMS  float64 `json:"warm_module_ms"`
	FloorModuleMS float64 `json:"floor_module_ms"`
	WarmOut       string  `json:"warm_outcome"`
	Error         string  `json:"error,omitempty"`
}

func cudaDemoRows(cases []cudasuite.Case, results map[string]map[string]cudaResult, haveCuPy bool) []cudaDemoRow {
	var rows []cudaDemoRow
	for _, c := range cases {
		r := cudaDemoRow{Case: c.Name, Category: c.Category}
		get := cellsOf(results, c.Name)
		r.ColdMS, r.WarmMS, r.FloorMS = get.ms("cold"), get.ms("warm"), get.ms("floor")
		get.ms("cc-cold")
		r.ComputeCacheMS = get.ms("computecache")
		if haveCuPy {
			get.ms("cupy-cold")
			r.CuPyMS = get.ms("cupy")
		}
		r.Bytes = results["cold"][c.Name].Bytes
		r.WarmOut = results["warm"][c.Name].Outcome
		r.WarmModuleMS, r.FloorModuleMS = results["warm"][c.Name].ModuleMS, results["floor"][c.Name].ModuleMS
		r.Error = get.err
		rows = append(rows, r)
	}
	return rows
}

func cudaTotals(rows []cudaDemoRow) cudaDemoRow {
	t := cudaDemoRow{Case: "TOTAL"}
	for _, r := range rows {
		t.Bytes += r.Bytes
		t.ColdMS += r.ColdMS
		t.WarmMS += r.WarmMS
		t.ComputeCacheMS += r.ComputeCacheMS
		t.CuPyMS += r.CuPyMS
		t.FloorMS += r.FloorMS
	}
	return t
}

// writeCUDADemoTable prints the per-kernel table and the totals. Times are
// from the request for the module to the case's launches completed: the
// first completed launch of each of its kernels.
func writeCUDADemoTable(w io.Writer, rows []cudaDemoRow) error {
	err := writeReportTable(w, "kernel\tCUBIN KB\tcold ms\twarm ms\tComputeCache ms\tCuPy ms\tfloor ms\tcold/warm\tCC/warm\tCuPy/warm\twarm/floor\tcheck\t",
		"%s\t%.1f\t%.1f\t%.3f\t%.3f\t%s\t%.3f\t%.0fx\t%.1fx\t%s\t%.2fx\t%s\t\n", rows, cudaTotals(rows), func(r cudaDemoRow) []any {
			cupy, cupyRatio := "-", "-"
			if r.CuPyMS > 0 {
				cupy, cupyRatio = fmt.Sprintf("%.2f", r.CuPyMS), fmt.Sprintf("%.0fx", ratio(r.CuPyMS, r.WarmMS))
			}
			return []any{r.Case, float64(r.Bytes) / 1024, r.ColdMS, r.WarmMS, r.ComputeCacheMS, cupy, r.FloorMS,
				ratio(r.ColdMS, r.WarmMS), ratio(r.ComputeCacheMS, r.WarmMS), cupyRatio, ratio(r.WarmMS, r.FloorMS)}
		})
	if err != nil {
		return err
	}
	writeFailures(w, rows, func(r cudaDemoRow) string { return r.Case })
	return nil
}
