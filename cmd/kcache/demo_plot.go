package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// demoSeries are the bars of the chart, in the order of each group and of
// the legend: the slowest first.
var demoSeries = []chartSeries[demoRow]{
	{"kcache cold", func(r demoRow) float64 { return r.ColdMS }, color.RGBA{R: 214, G: 39, B: 40, A: 255}},
	{"PoCL cache warm", func(r demoRow) float64 { return r.PeerMS }, color.RGBA{R: 255, G: 127, B: 14, A: 255}},
	{"kcache warm", func(r demoRow) float64 { return r.WarmMS }, color.RGBA{R: 44, G: 160, B: 44, A: 255}},
	{"floor", func(r demoRow) float64 { return r.FloorMS }, color.RGBA{R: 31, G: 119, B: 180, A: 255}},
}

// chartSeries is one contender of a chart: the name its bars have in the
// legend, their value in a row of the report, their colour.
type chartSeries[R any] struct {
	name  string
	value func(R) float64
	color color.RGBA
}

// plotFormat returns the format that file's extension names, one a chart
// can be written in: svg, png or pdf.
func plotFormat(file string) (string, error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), ".")
	switch format {
	case "svg", "png", "pdf":
		return format, nil
	}
	return "", fmt.Errorf("plot %s: want a .svg, .png or .pdf file", file)
}

// groupBars adds to p a bar chart per series, a group of bars per row: the
// series side by side, each bar width wide and height(value) tall.
func groupBars[R any](p *plot.Plot, rows []R, series []chartSeries[R], width vg.Length, height func(float64) float64) ([]*plotter.BarChart, error) {
	var charts []*plotter.BarChart
	for i, s := range series {
		vals := make(plotter.Values, len(rows))
		for j, r := range rows {
			vals[j] = height(s.value(r))
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, err
		}
		bars.Color = s.color
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(bars)
		charts = append(charts, bars)
	}
	return charts, nil
}

// Chart geometry, in points. Each kernel gets a slot wide enough for its
// four bars and a gap; the legend has a column of its own to the right of
// the bars, so it can never cover one; the totals panel sits below.
const (
	slotWidth    = 34
	barWidth     = 6.5
	legendWidth  = 120
	kernelsTall  = 400
	totalsTall   = 150
	chartMargin  = 8
	minChartWide = 640
)

// writeDemoPlot draws the demo's times per kernel as grouped bars on a log
// scale (cold and warm times differ by orders of magnitude), with a second
// panel of the suite's totals, in the format file's extension names: .svg,
// .png or .pdf.
func writeDemoPlot(file string, rows []demoRow) error {
	format, err := plotFormat(file)
	if err != nil {
		return err
	}
	kernels, err := kernelsPanel(rows)
	if err != nil {
		return err
	}
	totals, err := totalsPanel(totals(rows))
	if err != nil {
		return err
	}
	w := vg.Length(max(slotWidth*len(rows)+legendWidth+80, minChartWide))
	h := vg.Length(kernelsTall + totalsTall)
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	// draw.Crop takes the amounts to cut from the left, right, bottom and
	// top (negative for right and top).
	kernels.Draw(draw.Crop(dc, chartMargin, -legendWidth, totalsTall, -chartMargin))
	legend(dc, w-legendWidth, h-chartMargin-28)
	totals.Draw(draw.Crop(dc, chartMargin, -legendWidth, chartMargin, -(kernelsTall + chartMargin)))
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// kernelsPanel draws one group of bars per kernel.
func kernelsPanel(rows []demoRow) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Time to first correct result per kernel"
	// Bars grow from zero, which a log axis cannot place, so the bars show
	// log10(ms) on a linear axis labelled in milliseconds. Under 1 ms shows
	// as no bar.
	p.Y.Label.Text = "milliseconds (log scale)"
	top := 0.0
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Case
		for _, s := range demoSeries {
			top = max(top, logMS(s.value(r)))
		}
	}
	decades := int(math.Ceil(top + 0.05))
	p.Y.Min, p.Y.Max = 0, float64(decades)+0.1
	p.Y.Tick.Marker = plot.ConstantTicks(decadeTicks(decades))
	if _, err := groupBars(p, rows, demoSeries, barWidth, logMS); err != nil {
		return nil, err
	}
	// Horizontal lines at each decade only: vertical ones would run through
	// the middle of every group.
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	p.NominalX(names...)
	// Half a slot of room on each side, so the outer bars of the first and
	// last groups are drawn whole.
	p.X.Min, p.X.Max = -0.5, float64(len(rows))-0.5
	// Names slant down and to the left, ending under their group, clear of
	// the axis and of the neighbouring groups.
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	p.X.Tick.Length = 0
	return p, nil
}

// totalsPanel draws the suite's totals as horizontal bars, each labelled
// with its time and its ratio to kcache warm.
func totalsPanel(t demoRow) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Whole suite (sum over kernels)"
	p.X.Label.Text = "milliseconds (log scale)"
	top := 0.0
	names := make([]string, len(demoSeries))
	var labels plotter.XYLabels
	for i, s := range demoSeries {
		v := s.value(t)
		names[i] = s.name
		top = max(top, logMS(v))
		bars, err := plotter.NewBarChart(plotter.Values{logMS(v)}, 14)
		if err != nil {
			return nil, err
		}
		bars.Horizontal = true
		bars.XMin = float64(len(demoSeries) - 1 - i) // the first series on top
		bars.Color = s.color
		bars.LineStyle.Width = 0
		p.Add(bars)
		labels.XYs = append(labels.XYs, plotter.XY{X: logMS(v), Y: bars.XMin})
		labels.Labels = append(labels.Labels, totalLabel(v, t.WarmMS))
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].YAlign = draw.YCenter
	}
	l.Offset = vg.Point{X: 4}
	p.Add(l)
	reversed := make([]string, len(names))
	for i, n := range names {
		reversed[len(names)-1-i] = n
	}
	p.NominalY(reversed...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(demoSeries))-0.4
	// Most of a decade beyond the longest bar: room for its label.
	decades := int(math.Ceil(top + 0.05))
	p.X.Min, p.X.Max = 0, float64(decades)+0.8
	p.X.Tick.Marker = plot.ConstantTicks(decadeTicks(decades))
	return p, nil
}

// totalLabel says a total and how it compares with kcache warm.
func totalLabel(ms, warm float64) string {
	s := fmt.Sprintf("%.0f ms", ms)
	if ms >= 10000 {
		s = fmt.Sprintf("%.1f s", ms/1000)
	}
	switch r := ms / warm; {
	case warm <= 0 || ms == warm:
	case r >= 10:
		s += fmt.Sprintf("  (%.0fx kcache warm)", r)
	default:
		s += fmt.Sprintf("  (%.2fx kcache warm)", r)
	}
	return s
}

// legend draws the series' legend as a column of its own, its top left
// corner at (x, y).
func legend(dc draw.Canvas, x, y vg.Length) {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.Padding = vg.Points(4)
	for _, s := range demoSeries {
		l.Add(s.name, swatch(s.color))
	}
	l.Draw(draw.Crop(dc, x, 0, 0, y-dc.Max.Y))
}

// swatch is a legend thumbnail: a square of one colour.
type swatch color.RGBA

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(color.RGBA(s), c.ClipPolygonY(pts))
}

// logMS is the height of a bar of ms milliseconds: log10, and nothing
// under 1 ms.
func logMS(ms float64) float64 { return math.Log10(max(ms, 1)) }

// decadeTicks labels 10^0 .. 10^n milliseconds at heights 0 .. n.
func decadeTicks(n int) []plot.Tick {
	var ticks []plot.Tick
	for i := 0; i <= n; i++ {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: strconv.FormatFloat(math.Pow(10, float64(i)), 'f', 0, 64)})
	}
	return ticks
}
