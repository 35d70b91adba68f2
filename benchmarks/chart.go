package benchmarks

import (
	"image/color"
	"io"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var (
	peerColor  = color.RGBA{R: 140, G: 150, B: 165, A: 255}
	smartColor = color.RGBA{R: 220, G: 90, B: 30, A: 255}
)

// WriteChart draws the headline workloads side by side, one bar or point
// per pool with smartpool highlighted: spawn-spam and multi-producer
// ns/task (linear), priority-latency p99 in µs (log scale, min–max whiskers).
// format is "svg" or "png".
func WriteChart(w io.Writer, h Headline, format string) error {
	names := slices.Clone(h.Pools)
	slices.Reverse(names) // the first pool at the top
	spawn, err := barPlot("spawn-spam (ns/task)", names, h.Spawn)
	if err != nil {
		return err
	}
	multi, err := barPlot("multi-producer, 8 goroutines (ns/task)", names, h.Multi)
	if err != nil {
		return err
	}
	p99, err := logPlot("priority-latency p99 (µs, log)", names, h.P99, 1e-3)
	if err != nil {
		return err
	}
	const width, height = 30 * vg.Centimeter, 9 * vg.Centimeter
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Centimeter / 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	plots := [][]*plot.Plot{{spawn, multi, p99}}
	for j, dc := range plot.Align(plots, tiles, draw.New(c))[0] {
		plots[0][j].Draw(dc)
	}
	_, err = c.WriteTo(w)
	return err
}

// barPlot is a horizontal bar per pool; failed figures are left out.
// names are in plotting order (bottom first), sums in Pools order.
func barPlot(title string, names []string, sums []Summary) (*plot.Plot, error) {
	p := newPlot(title, names)
	p.X.Min = 0
	peers, smart := make(plotter.Values, len(names)), make(plotter.Values, len(names))
	for i, s := range sums {
		j := len(names) - 1 - i
		if s.Status != "" {
			continue
		}
		if names[j] == "smartpool" {
			smart[j] = s.Median
		} else {
			peers[j] = s.Median
		}
	}
	for _, b := range []struct {
		v plotter.Values
		c color.Color
	}{{peers, peerColor}, {smart, smartColor}} {
		bc, err := plotter.NewBarChart(b.v, vg.Points(9))
		if err != nil {
			return nil, err
		}
		bc.Horizontal, bc.Color, bc.LineStyle.Width = true, b.c, 0
		p.Add(bc)
	}
	p.X.Max *= 1.05
	p.X.Tick.Marker = plainTicks{}
	return p, nil
}

// logPlot is a point per pool with min–max whiskers on a log scale; unit
// converts ns to the axis unit.
func logPlot(title string, names []string, sums []Summary, unit float64) (*plot.Plot, error) {
	p := newPlot(title, names)
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	for _, smartOnly := range []bool{false, true} {
		var pts errPoints
		for i, s := range sums {
			j := len(names) - 1 - i
			if s.Status != "" || s.Min <= 0 || (names[j] == "smartpool") != smartOnly {
				continue
			}
			pts = append(pts, errPoint{x: s.Median * unit, y: float64(j), lo: (s.Median - s.Min) * unit, hi: (s.Max - s.Median) * unit})
		}
		if len(pts) == 0 {
			continue
		}
		col := peerColor
		if smartOnly {
			col = smartColor
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = col, draw.CircleGlyph{}, vg.Points(4)
		eb, err := plotter.NewXErrorBars(pts)
		if err != nil {
			return nil, err
		}
		eb.Color = col
		p.Add(eb, sc)
	}
	p.X.Min, p.X.Max = p.X.Min/1.5, p.X.Max*1.5 // room for the end points
	return p, nil
}

func newPlot(title string, names []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.NominalY(names...)
	p.Add(plotter.NewGrid())
	return p
}

// errPoint is a point with horizontal whiskers.
type errPoint struct{ x, y, lo, hi float64 }

type errPoints []errPoint

func (e errPoints) Len() int                    { return len(e) }
func (e errPoints) XY(i int) (float64, float64) { return e[i].x, e[i].y }
func (e errPoints) XError(i int) (float64, float64) {
	return e[i].lo, e[i].hi
}

// plainTicks are the default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}
