package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"
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
		if err := writeDemoPlot(file, rows); err != nil {
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
	if err := writeDemoPlot(filepath.Join(dir, "one.png"), rows[:1]); err != nil {
		t.Fatal(err)
	}
	if err := writeDemoPlot(filepath.Join(dir, "demo.txt"), rows); err == nil {
		t.Error("a .txt plot was accepted")
	}
}
