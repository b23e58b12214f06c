package demo

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writeCUDADemoPlot draws the CUDA demo's times per kernel as grouped bars
// on a log scale. Warm starts take well under a millisecond, so the axis
// starts at a microsecond.
func writeCUDADemoPlot(file string, rows []cudaDemoRow) error {
	format, err := plotFormat(file)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = "CUDA: time to the first completed launches per kernel (log scale)"
	p.Y.Label.Text = "milliseconds"
	var ticks []plot.Tick
	for i := 0; i <= 7; i++ { // 10^-3 .. 10^4 ms, drawn at heights 0 .. 7
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprintf("%g", math.Pow(10, float64(i-3)))})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	series := []chartSeries[cudaDemoRow]{
		{"kcache cold", func(r cudaDemoRow) float64 { return r.ColdMS }, color.RGBA{R: 214, G: 39, B: 40, A: 255}},
		{"CuPy cache warm", func(r cudaDemoRow) float64 { return r.CuPyMS }, color.RGBA{R: 148, G: 103, B: 189, A: 255}},
		{"driver ComputeCache warm (PTX)", func(r cudaDemoRow) float64 { return r.ComputeCacheMS }, color.RGBA{R: 255, G: 127, B: 14, A: 255}},
		{"kcache warm", func(r cudaDemoRow) float64 { return r.WarmMS }, color.RGBA{R: 44, G: 160, B: 44, A: 255}},
		{"floor", func(r cudaDemoRow) float64 { return r.FloorMS }, color.RGBA{R: 31, G: 119, B: 180, A: 255}},
	}
	width := vg.Points(4)
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Case
	}
	// Heights are log10 of microseconds: 10^-3 ms at 0, nothing below.
	charts, err := groupBars(p, rows, series, width, func(ms float64) float64 { return math.Max(math.Log10(math.Max(ms, 1e-3))+3, 0) })
	if err != nil {
		return err
	}
	for i, bars := range charts {
		p.Legend.Add(series[i].name, bars)
	}
	p.Y.Min = 0
	p.Legend.Top = true
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.8
	p.X.Tick.Label.XAlign = -1
	p.X.Tick.Label.YAlign = -0.5
	c := newChartCanvas(vg.Length(max(32*len(rows)+120, 480))*vg.Points(1), 6*vg.Inch, format)
	p.Draw(draw.New(c))
	return writeChart(file, c)
}
