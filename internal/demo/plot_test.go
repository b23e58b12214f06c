package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
)

// recordedRows reads the demo's figures recorded in bench/RESULTS.md.
func recordedRows(t *testing.T) []demoRow {
	data, err := os.ReadFile("testdata/demo-rows.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var rows []demoRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var r demoRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestDemoPlot renders the recorded results in every format. Set
// KCACHE_PLOT_OUT to a directory to keep the files for a look.
func TestDemoPlot(t *testing.T) {
	rows := recordedRows(t)
	dir := os.Getenv("KCACHE_PLOT_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, ext := range []string{".png", ".svg", ".pdf"} {
		file := filepath.Join(dir, "demo"+ext)
		if err := writeDemoPlot(file, rows, demoCaption("test device", time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(file); err != nil || fi.Size() < 1000 {
			t.Errorf("%s: %v", file, err)
		}
	}
	f, _ := os.Open(filepath.Join(dir, "demo.png"))
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 {
		t.Errorf("image %v", b)
	}
	// One kernel: the demo's --case runs.
	if err := writeDemoPlot(filepath.Join(dir, "one.png"), rows[:1], nil); err != nil {
		t.Fatal(err)
	}
	if err := writeDemoPlot(filepath.Join(dir, "demo.txt"), rows, nil); err == nil {
		t.Error("a .txt plot was accepted")
	}
}

// TestDemoPlotSVGEmbedsItsFont checks that the SVG carries the font its
// text was measured in, and its caption: a viewer without that font would
// otherwise draw the labels wider than the layout left room for.
func TestDemoPlotSVGEmbedsItsFont(t *testing.T) {
	file := filepath.Join(t.TempDir(), "demo.svg")
	if err := writeDemoPlot(file, recordedRows(t), demoCaption("Some Device", time.Now())); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"@font-face", "data:font/ttf;charset=utf-8;base64,", "Some Device", "floor: the same binary,"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

// TestTotalsAxisFitsItsData checks that the totals panel's axis ends near
// its longest bar: it once ran to 500 s for 18 s of data, to leave room
// for labels that now sit with the names.
func TestTotalsAxisFitsItsData(t *testing.T) {
	for _, slowest := range []float64{18_000, 950, 100_000, 3} {
		p, err := totalsPanel(demoRow{ColdMS: slowest, PeerMS: 2, WarmMS: 1, FloorMS: 1})
		if err != nil {
			t.Fatal(err)
		}
		top := logMS(slowest)
		if p.X.Max < top || p.X.Max > max(top+0.35, 1) {
			t.Errorf("slowest %g ms (10^%.2f): the axis ends at 10^%.2f", slowest, top, p.X.Max)
		}
		ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)
		if last := ticks[len(ticks)-1].Value; last > p.X.Max {
			t.Errorf("slowest %g ms: a tick at 10^%g past the axis end", slowest, last)
		}
	}
	var _ plot.Ticker = plot.ConstantTicks(nil)
}
