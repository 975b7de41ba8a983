package main

import (
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// scaleFigure: bytes per held campaign, and the server's requests per
// second while holding, against the number of campaigns, both on log
// axes. Every row is drawn: a point whose campaigns were not all elected
// and leading as a cross, a value a log axis cannot show (≤ 0) as a hollow
// mark on the axis floor.
func scaleFigure(rep *Report) figure {
	rows := rep.Select("scale")
	if len(rows) == 0 {
		return figure{}
	}
	mem := logPanel("Memory per held campaign", "bytes (heap + stacks)")
	reqs := logPanel("Server requests while holding", "requests per second")
	var f figure
	var series []scaleSeries
	for _, backend := range backendsIn(rep) {
		for _, subject := range []string{"hustings campaigns", "redislock"} {
			var s scaleSeries
			for _, r := range rows {
				if r.Backend != backend || r.Subject != subject {
					continue
				}
				v, held := r.Values, heldAll(r)
				s.mem = append(s.mem, scalePoint{v["locks"], v["bytes_per_campaign"], held})
				if backend != "memory" {
					s.reqs = append(s.reqs, scalePoint{v["locks"], v["requests_per_s"], held})
				}
			}
			if len(s.mem) == 0 {
				continue
			}
			s.line, s.marks = scaleStyle(len(series), subject == "redislock")
			label := backend + ": Hustings"
			if subject == "redislock" {
				label = backend + ": redislock"
			}
			f.key(label, s.line, s.marks)
			series = append(series, s)
		}
	}
	var memPts, reqPts []scalePoint
	for _, s := range series {
		memPts, reqPts = append(memPts, s.mem...), append(reqPts, s.reqs...)
	}
	setLogRange(mem, memPts, targetBytes)
	setLogRange(reqs, reqPts)
	for _, s := range series {
		addScaleLine(mem, s.mem, s.line, s.marks)
		addScaleLine(reqs, s.reqs, s.line, s.marks)
	}
	target, _ := plotter.NewLine(plotter.XYs{{X: mem.X.Min, Y: targetBytes}, {X: mem.X.Max, Y: targetBytes}})
	target.Color, target.Dashes = color.Gray{Y: 110}, []vg.Length{vg.Points(4), vg.Points(4)}
	mem.Add(target)
	f.key("target: 4 KiB a campaign", target)
	if anyPoint(memPts, func(p scalePoint) bool { return !p.held }) {
		f.key("not all elected and leading", missMark(color.Black))
	}
	if anyPoint(memPts, nonPositive) || anyPoint(reqPts, nonPositive) {
		f.key("≤ 0 (noise), on the axis floor", floorMark(color.Black))
	}
	f.panels = []*plot.Plot{mem}
	if len(reqPts) > 0 { // no server to count with the memory backend alone
		f.panels = append(f.panels, reqs)
	}
	return f
}

// scaleSeries is one subject on one backend: its points on each panel
// and its style.
type scaleSeries struct {
	mem, reqs []scalePoint
	line      *plotter.Line
	marks     *plotter.Scatter
}

// scalePoint is one row of the scale workload on a chart.
type scalePoint struct {
	n, v float64
	held bool // all campaigns elected in time and leading after the hold
}

func nonPositive(p scalePoint) bool { return p.v <= 0 }

func anyPoint(pts []scalePoint, f func(scalePoint) bool) bool {
	for _, p := range pts {
		if f(p) {
			return true
		}
	}
	return false
}

// logPanel makes a log–log panel. Its unit goes under the title, not
// beside the Y axis: gonum places a Y label's box at the arithmetic middle
// of the axis, near the top of a log axis, and shrinks the panel to fit it.
func logPanel(title, unit string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title + "\n" + unit + ", log scale"
	p.X.Label.Text = "campaigns held (locks)"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, countTicks{}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, countTicks{}
	return p
}

// targetBytes is the goal for a held campaign's memory, drawn as a line.
const targetBytes = 4096

// setLogRange sets p's axes to whole powers of ten around pts' positive
// values and also (lines drawn across), with room either side of the
// first and last counts. A value ≤ 0 is drawn on the floor, Y.Min.
func setLogRange(p *plot.Plot, pts []scalePoint, also ...float64) {
	lo, hi, nmax := math.Inf(1), 0.0, 1.0
	for _, pt := range pts {
		nmax = max(nmax, pt.n)
		if pt.v > 0 {
			lo, hi = min(lo, pt.v), max(hi, pt.v)
		}
	}
	for _, v := range also {
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	p.X.Min, p.X.Max = 0.6, nmax*1.7
	p.Y.Min = math.Pow10(int(math.Floor(math.Log10(lo))))
	p.Y.Max = math.Pow10(int(math.Ceil(math.Log10(hi * 1.3))))
}

// scaleStyle is the line and marks of the i-th series; a peer's is dashed.
func scaleStyle(i int, peer bool) (*plotter.Line, *plotter.Scatter) {
	l := &plotter.Line{LineStyle: plotter.DefaultLineStyle}
	l.Color = plotutil.Color(i)
	if peer {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	s := &plotter.Scatter{GlyphStyle: plotter.DefaultGlyphStyle}
	s.Color, s.Shape, s.Radius = plotutil.Color(i), plotutil.Shape(i), vg.Points(3)
	return l, s
}

// addScaleLine draws pts on p with line and marks: the held points joined,
// a point not all held as a cross, a value ≤ 0 as a hollow mark on the
// axis floor.
func addScaleLine(p *plot.Plot, pts []scalePoint, line *plotter.Line, marks *plotter.Scatter) {
	var joined, crosses, floored plotter.XYs
	for _, pt := range pts {
		switch {
		case pt.v <= 0:
			floored = append(floored, plotter.XY{X: pt.n, Y: p.Y.Min})
		case !pt.held:
			crosses = append(crosses, plotter.XY{X: pt.n, Y: pt.v})
		default:
			joined = append(joined, plotter.XY{X: pt.n, Y: pt.v})
		}
	}
	if len(joined) > 0 {
		l, s := *line, *marks
		l.XYs, s.XYs = joined, joined
		p.Add(&l, &s)
	}
	if len(crosses) > 0 {
		s := missMark(marks.Color)
		s.XYs = crosses
		p.Add(s)
	}
	if len(floored) > 0 {
		s := floorMark(marks.Color)
		s.XYs = floored
		p.Add(s)
	}
}

func missMark(c color.Color) *plotter.Scatter {
	return &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: c, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}}
}

func floorMark(c color.Color) *plotter.Scatter {
	return &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: c, Radius: vg.Points(4), Shape: draw.RingGlyph{}}}
}

// countTicks marks a log axis at each power of ten, labelled as counts
// are written (1, 100, 1,000, 10,000), with unlabelled minor ticks
// between.
type countTicks struct{}

func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	const eps = 1e-9
	var ticks []plot.Tick
	for e := int(math.Floor(math.Log10(lo) + eps)); math.Pow10(e) <= hi*(1+eps); e++ {
		for i := 1; i < 10; i++ {
			v := math.Pow10(e) * float64(i)
			if v < lo*(1-eps) || v > hi*(1+eps) {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 {
				t.Label = countLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func countLabel(v float64) string {
	if v >= 1 {
		return fmtNum(math.Round(v))
	}
	return strings.TrimRight(strconv.FormatFloat(v, 'f', -1, 64), "0")
}
