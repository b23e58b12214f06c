package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// writeDemoPlot draws the demo's times per kernel as grouped bars on a log
// scale (the cold and warm times differ by orders of magnitude), in the
// format file's extension names: .svg, .png or .pdf.
func writeDemoPlot(file string, rows []demoRow) error {
	switch ext := strings.ToLower(filepath.Ext(file)); ext {
	case ".svg", ".png", ".pdf":
	default:
		return fmt.Errorf("plot %s: want a .svg, .png or .pdf file", file)
	}
	p := plot.New()
	p.Title.Text = "Time to first correct result per kernel (log scale)"
	p.Y.Label.Text = "milliseconds"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	series := []struct {
		name  string
		value func(demoRow) float64
		color color.RGBA
	}{
		{"kcache cold", func(r demoRow) float64 { return r.ColdMS }, color.RGBA{R: 214, G: 39, B: 40, A: 255}},
		{"PoCL cache warm", func(r demoRow) float64 { return r.PeerMS }, color.RGBA{R: 255, G: 127, B: 14, A: 255}},
		{"kcache warm", func(r demoRow) float64 { return r.WarmMS }, color.RGBA{R: 44, G: 160, B: 44, A: 255}},
		{"floor", func(r demoRow) float64 { return r.FloorMS }, color.RGBA{R: 31, G: 119, B: 180, A: 255}},
	}
	width := vg.Points(5)
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Case
	}
	for i, s := range series {
		vals := make(plotter.Values, len(rows))
		for j, r := range rows {
			vals[j] = max(s.value(r), 1) // the axis starts below 1 ms
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.Color = s.color
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	// Bars start at zero, which a log axis cannot show: start the axis
	// just below the smallest bar instead.
	p.Y.Min = 0.5
	p.Legend.Top = true
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.8
	p.X.Tick.Label.XAlign = -1
	p.X.Tick.Label.YAlign = -0.5
	return p.Save(vg.Length(28*len(rows)+120)*vg.Points(1), 6*vg.Inch, file)
}
