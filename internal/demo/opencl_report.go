package demo

import (
	"io"

	"github.com/kcache/kcache/internal/demo/suite"
)

// Row is one kernel's line of the OpenCL demo's report, as --json prints
// it.
type Row = demoRow

// demoRow is one kernel's line of the demo's report. With --json it is
// printed as is; its field names are a public interface.
type demoRow struct {
	Case       string  `json:"case"`
	Category   string  `json:"category"`
	ColdMS     float64 `json:"cold_ms"`
	WarmMS     float64 `json:"warm_ms"`
	PeerColdMS float64 `json:"peer_cold_ms"`
	PeerMS     float64 `json:"peer_ms"`
	FloorMS    float64 `json:"floor_ms"`
	WarmOut    string  `json:"warm_outcome"`
	Error      string  `json:"error,omitempty"`
}

// Speedups, as the table prints them.
func (r demoRow) coldOverWarm() float64  { return ratio(r.ColdMS, r.WarmMS) }
func (r demoRow) peerOverWarm() float64  { return ratio(r.PeerMS, r.WarmMS) }
func (r demoRow) warmOverFloor() float64 { return ratio(r.WarmMS, r.FloorMS) }

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func demoRows(cases []suite.Case, results map[string]map[string]phaseResult) []demoRow {
	var rows []demoRow
	for _, c := range cases {
		r := demoRow{Case: c.Name, Category: c.Category}
		get := cellsOf(results, c.Name)
		r.ColdMS, r.WarmMS = get.ms("cold"), get.ms("warm")
		r.PeerColdMS, r.PeerMS, r.FloorMS = get.ms("peer-cold"), get.ms("peer"), get.ms("floor")
		r.WarmOut = results["warm"][c.Name].Outcome
		r.Error = get.err
		rows = append(rows, r)
	}
	return rows
}

func totals(rows []demoRow) demoRow {
	t := demoRow{Case: "TOTAL"}
	for _, r := range rows {
		t.ColdMS += r.ColdMS
		t.WarmMS += r.WarmMS
		t.PeerColdMS += r.PeerColdMS
		t.PeerMS += r.PeerMS
		t.FloorMS += r.FloorMS
	}
	return t
}

// writeDemoTable prints the per-kernel table and the totals. Times are to
// the first correct result: program, kernels, run, read back, check.
func writeDemoTable(w io.Writer, rows []demoRow) error {
	err := writeReportTable(w, "kernel\tcategory\tcold ms\twarm ms\tPoCL cache ms\tfloor ms\tcold/warm\tPoCL/warm\twarm/floor\tcheck\t",
		"%s\t%s\t%.1f\t%.2f\t%.2f\t%.2f\t%.0fx\t%.1fx\t%.2fx\t%s\t\n", rows, totals(rows), func(r demoRow) []any {
			return []any{r.Case, r.Category, r.ColdMS, r.WarmMS, r.PeerMS, r.FloorMS, r.coldOverWarm(), r.peerOverWarm(), r.warmOverFloor()}
		})
	if err != nil {
		return err
	}
	writeFailures(w, rows, func(r demoRow) string { return r.Case })
	return nil
}
