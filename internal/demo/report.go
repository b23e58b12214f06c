package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// The demos' reports, whichever backend ran them: a table per kernel with
// the totals, or JSON lines, and the chart.

// reportDemo prints a demo's rows, as JSON lines or through table, draws
// them through plot when asked, and fails with exit status 1 if any case
// failed.
func reportDemo[T reportRow](out, progress io.Writer, o Options, rows []T, table func(io.Writer, []T) error, plot func(string, []T) error) error {
	var err error
	if o.JSON {
		err = writeJSONLines(out, rows)
	} else {
		err = table(out, rows)
	}
	if err != nil {
		return err
	}
	if o.Plot != "" {
		if err := plot(o.Plot, rows); err != nil {
			return err
		}
		fmt.Fprintln(progress, "demo: wrote", o.Plot)
	}
	if failed := countFailed(rows); failed > 0 {
		fmt.Fprintf(progress, "demo: %d case(s) failed\n", failed)
		return ErrFailed
	}
	return nil
}

// reportRow is one kernel's line of a demo's report.
type reportRow interface {
	// failure is why the kernel failed, or "".
	failure() string
}

func (r demoRow) failure() string      { return r.Error }
func (r cudaDemoRow) failure() string  { return r.Error }
func (r prefilledRow) failure() string { return r.Error }

func countFailed[T reportRow](rows []T) int {
	n := 0
	for _, r := range rows {
		if r.failure() != "" {
			n++
		}
	}
	return n
}

// writeJSONLines prints each row as a line of JSON.
func writeJSONLines[T any](w io.Writer, rows []T) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// writeReportTable prints the table of a demo's report, right-aligned: the
// header, a line per kernel and the totals. Each line is format applied to
// cells of the row and then its check, "ok" or "FAIL"; the totals are
// checked FAIL if any kernel failed.
func writeReportTable[T reportRow](w io.Writer, header, format string, rows []T, total T, cells func(T) []any) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, header)
	line := func(r T, failed bool) {
		check := "ok"
		if failed {
			check = "FAIL"
		}
		fmt.Fprintf(tw, format, append(cells(r), check)...)
	}
	for _, r := range rows {
		line(r, r.failure() != "")
	}
	line(total, countFailed(rows) > 0)
	return tw.Flush()
}

// writeFailures prints, after a report's table, why each failed kernel
// failed.
func writeFailures[T reportRow](w io.Writer, rows []T, name func(T) string) {
	for _, r := range rows {
		if r.failure() != "" {
			fmt.Fprintf(w, "%s: %s\n", name(r), r.failure())
		}
	}
}
