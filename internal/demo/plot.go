package demo

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
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
// panel of the suite's totals and a caption (the device, the date, what
// the floor is), in the format file's extension names: .svg, .png or .pdf.
func writeDemoPlot(file string, rows []demoRow, caption []string) error {
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
	c := newChartCanvas(w, h, format)
	dc := draw.New(c)
	// draw.Crop takes the amounts to cut from the left, right, bottom and
	// top (negative for right and top).
	kernels.Draw(draw.Crop(dc, chartMargin, -legendWidth, totalsTall, -chartMargin))
	legend(dc, w-legendWidth, h-chartMargin-28)
	captionText(dc, w-legendWidth+4, h-chartMargin-120, caption)
	totals.Draw(draw.Crop(dc, chartMargin, -legendWidth, chartMargin, -(kernelsTall + chartMargin)))
	return writeChart(file, c)
}

// newChartCanvas returns a canvas of the format that embeds the fonts it
// measures text with: an SVG or PDF that only names its font is drawn by
// the viewer in whatever font it has, wider or narrower than the one the
// layout was measured in, and labels are cut or overlap.
func newChartCanvas(w, h vg.Length, format string) vg.CanvasWriterTo {
	switch format {
	case "svg":
		return vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	case "pdf":
		c := vgpdf.New(w, h)
		c.EmbedFonts(true)
		return c
	}
	return vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
}

// writeChart writes c to file.
func writeChart(file string, c vg.CanvasWriterTo) error {
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

// captionText writes lines of small text, the first line's top at (x, y).
func captionText(dc draw.Canvas, x, y vg.Length, lines []string) {
	style := plot.New().Legend.TextStyle
	style.Font.Size = vg.Points(8)
	for i, l := range lines {
		dc.FillText(style, vg.Point{X: x, Y: y - vg.Length(i)*style.Font.Size*1.3}, l)
	}
}

// demoCaption says what a chart was measured on, and when, and what its
// floor is, so a reader of the picture alone knows what it shows.
func demoCaption(device string, when time.Time) []string {
	return []string{
		"device: " + device,
		"measured " + when.Format("2006-01-02"),
		"",
		"floor: the same binary,",
		"already in memory, loaded",
		"and run: no cache can",
		"start faster.",
		"",
		"Each kernel is a new",
		"process, timed from the",
		"request for its program",
		"to its checked result.",
	}
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

// totalsPanel draws the suite's totals as horizontal bars, each named
// with its time and its ratio to kcache warm. The labels sit with the
// names, left of the axis, so the axis need not reach past the longest
// bar to make room for them.
func totalsPanel(t demoRow) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Whole suite (sum over kernels)"
	p.X.Label.Text = "milliseconds (log scale)"
	top := 0.0
	names := make([]string, len(demoSeries))
	for i, s := range demoSeries {
		v := s.value(t)
		names[len(demoSeries)-1-i] = s.name + ": " + totalLabel(v, t.WarmMS) // the first series on top
		top = max(top, logMS(v))
		bars, err := plotter.NewBarChart(plotter.Values{logMS(v)}, 14)
		if err != nil {
			return nil, err
		}
		bars.Horizontal = true
		bars.XMin = float64(len(demoSeries) - 1 - i)
		bars.Color = s.color
		bars.LineStyle.Width = 0
		p.Add(bars)
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(demoSeries))-0.4
	// The axis ends a little past the longest bar, at its decade's tick
	// when that is near.
	decades := int(math.Floor(top + 0.3))
	p.X.Min, p.X.Max = 0, max(top+0.1, float64(decades))
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
		s += fmt.Sprintf(" (%.0fx warm)", r)
	default:
		s += fmt.Sprintf(" (%.2fx warm)", r)
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
