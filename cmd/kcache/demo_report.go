package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kcache/kcache/internal/suite"
)

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
		get := func(phase string) float64 {
			pr := results[phase][c.Name]
			if pr.Error != "" && r.Error == "" {
				r.Error = phase + ": " + pr.Error
			}
			if pr.Case == "" && r.Error == "" {
				r.Error = phase + ": no result"
			}
			return pr.MS
		}
		r.ColdMS, r.WarmMS = get("cold"), get("warm")
		r.PeerColdMS, r.PeerMS, r.FloorMS = get("peer-cold"), get("peer"), get("floor")
		r.WarmOut = results["warm"][c.Name].Outcome
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

func countFailed(rows []demoRow) int {
	n := 0
	for _, r := range rows {
		if r.Error != "" {
			n++
		}
	}
	return n
}

func writeDemoJSON(w io.Writer, rows []demoRow) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// writeDemoTable prints the per-kernel table and the totals. Times are to
// the first correct result: program, kernels, run, read back, check.
func writeDemoTable(w io.Writer, rows []demoRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tcategory\tcold ms\twarm ms\tPoCL cache ms\tfloor ms\tcold/warm\tPoCL/warm\twarm/floor\tcheck\t")
	line := func(r demoRow) {
		check := "ok"
		if r.Error != "" {
			check = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.2f\t%.2f\t%.2f\t%.0fx\t%.1fx\t%.2fx\t%s\t\n", r.Case, r.Category,
			r.ColdMS, r.WarmMS, r.PeerMS, r.FloorMS, r.coldOverWarm(), r.peerOverWarm(), r.warmOverFloor(), check)
	}
	for _, r := range rows {
		line(r)
	}
	t := totals(rows)
	if n := countFailed(rows); n > 0 {
		t.Error = fmt.Sprintf("%d failed", n)
	}
	line(t)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", r.Case, r.Error)
		}
	}
	return nil
}
