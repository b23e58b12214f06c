package main

import (
	"fmt"
	"image/color"
	"math"
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
	// Bars are drawn from zero, which a log axis cannot place, so the bars
	// show log10(ms) on a linear axis, labelled in milliseconds.
	p.Y.Label.Text = "milliseconds"
	p.Y.Tick.Marker = plot.ConstantTicks(decadeTicks(5))
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
			vals[j] = math.Log10(max(s.value(r), 1)) // under 1 ms shows as no bar
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
	p.Y.Min = 0
	p.Legend.Top = true
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.8
	p.X.Tick.Label.XAlign = -1
	p.X.Tick.Label.YAlign = -0.5
	return p.Save(vg.Length(max(28*len(rows)+120, 480))*vg.Points(1), 6*vg.Inch, file)
}

// decadeTicks labels 10^0 .. 10^n milliseconds at heights 0 .. n.
func decadeTicks(n int) []plot.Tick {
	var ticks []plot.Tick
	for i := 0; i <= n; i++ {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprintf("%g", math.Pow(10, float64(i)))})
	}
	return ticks
}
