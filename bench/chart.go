package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The colours of what a chart compares: Hustings, Hustings on a session
// the candidate keeps (where a chart has both, beside runs that open a
// session each), a peer library, and the server's plain round trip; a p99
// or a second setting is the lighter shade of its subject's colour.
var (
	colHustings = plotutil.Color(0)
	colSession  = plotutil.Color(1)
	colPeer     = plotutil.Color(2)
	colBaseline = color.Gray{Y: 150}
)

// lighter returns c halfway to white.
func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 255) / 2) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}

// writeCharts writes the PNG charts of rep into dir; a chart without data
// is left out.
func writeCharts(rep *Report, dir string) error {
	charts := []struct {
		file string
		fig  figure
	}{
		{"handover_failover.png", handoverFailoverFigure(rep)},
		{"acquire_release.png", acquireFigure(rep)},
		{"throughput.png", throughputFigure(rep)},
		{"scale.png", scaleFigure(rep)},
	}
	for _, c := range charts {
		if len(c.fig.panels) == 0 {
			continue
		}
		if err := c.fig.save(filepath.Join(dir, c.file)); err != nil {
			return fmt.Errorf("chart %s: %w", c.file, err)
		}
	}
	return nil
}

// figure is one PNG: panels laid out cols to a row, and one legend for
// all of them, drawn outside every panel: in the empty cell the last row
// leaves, or else in a column on the right.
type figure struct {
	panels []*plot.Plot
	cols   int // 0: all in one row
	legend plot.Legend
	keys   int // entries in legend
}

// key adds an entry to the figure's legend.
func (f *figure) key(name string, thumbs ...plot.Thumbnailer) {
	if f.keys == 0 {
		f.legend = plot.NewLegend()
		f.legend.Top, f.legend.Left = true, true
		f.legend.TextStyle.Font.Size = vg.Points(11)
		f.legend.Padding = vg.Points(3)
	}
	f.legend.Add(name, thumbs...)
	f.keys++
}

// Cell sizes of a figure.
const (
	cellW = 11 * vg.Centimeter
	cellH = 10 * vg.Centimeter
)

func (f figure) save(path string) error {
	cols := f.cols
	if cols == 0 {
		cols = len(f.panels)
	}
	rows := (len(f.panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range f.panels {
		grid[i/cols][i%cols] = p
	}
	inCell := f.keys > 0 && len(f.panels) < rows*cols
	var legendW vg.Length
	if f.keys > 0 && !inCell {
		r := f.legend.Rectangle(draw.Canvas{})
		legendW = r.Max.X - r.Min.X + vg.Centimeter
	}
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(cols)*cellW+legendW, vg.Length(rows)*cellH), vgimg.UseDPI(120))
	dc := draw.New(img)
	area := dc
	area.Max.X -= legendW
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Centimeter, PadY: vg.Centimeter / 2,
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	canvases := plot.Align(grid, tiles, area)
	for i, p := range f.panels {
		p.Draw(canvases[i/cols][i%cols])
	}
	if f.keys > 0 {
		c := dc
		c.Min.X = area.Max.X + vg.Centimeter/2
		if inCell {
			c = tiles.At(area, cols-1, rows-1)
			c.Min.X += vg.Centimeter
		}
		c.Max.Y -= vg.Centimeter // level with the panels' data, below their titles
		f.legend.Draw(c)
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// swatch is a legend thumbnail: a square of one colour.
type swatch struct{ color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	side := min(c.Max.X-c.Min.X, c.Max.Y-c.Min.Y)
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Min.Y + side}, {X: c.Min.X + side, Y: c.Min.Y + side}, {X: c.Min.X + side, Y: c.Min.Y}}
	c.FillPolygon(s.Color, pts)
}

// barSet is one set of bars of a panel: a value per category (0: no bar)
// in one colour, at slot (of the panel's slots) within each category's
// group.
type barSet struct {
	values []float64
	color  color.Color
	slot   int
}

// bars makes a panel of grouped bars, each labelled with its value by
// label, with headroom above the tallest bar for the labels. On a log
// axis (logY) bars rise from a power of ten below the smallest value.
func bars(title, ylabel string, categories []string, slots int, sets []barSet, label func(float64) string, logY bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	// About 270 points of a cell are data; bars fill 70% of it at most.
	width := vg.Points(min(26, 0.7*270/float64(max(len(categories)*slots, 1))))
	labelStyle := text.Style{Font: font.From(plot.DefaultFont, 7), Handler: plot.DefaultTextHandler, XAlign: draw.XCenter}
	if width < vg.Points(12) { // too narrow for a label across: up the bar
		labelStyle.Rotation, labelStyle.XAlign, labelStyle.YAlign = math.Pi/2, draw.XLeft, draw.YCenter
	}
	lo, top := math.Inf(1), 0.0
	var labels []plot.Plotter // drawn after every bar, so that none hides one
	for _, s := range sets {
		offset := (vg.Length(s.slot) - vg.Length(slots-1)/2) * width
		p.Add(&barPlotter{values: s.values, color: s.color, width: width, offset: offset})
		var xys plotter.XYs
		var texts []string
		for i, v := range s.values {
			if v > 0 {
				lo, top = min(lo, v), max(top, v)
				xys, texts = append(xys, plotter.XY{X: float64(i), Y: v}), append(texts, label(v))
			}
		}
		if l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts}); err == nil {
			for i := range l.TextStyle {
				l.TextStyle[i] = labelStyle
			}
			l.Offset = vg.Point{X: offset, Y: vg.Points(2)}
			labels = append(labels, l)
		}
	}
	p.Add(labels...)
	p.NominalX(categories...)
	if len(categories) > 3 || longest(categories) > 10 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.Y.Min, p.Y.Max = 0, top*1.15
	p.Y.Tick.Marker = plainTicks{}
	if logY && top > 0 {
		// The unit goes under the title: see logPanel.
		p.Title.Text, p.Y.Label.Text = title+"\n"+ylabel+", log scale", ""
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, countTicks{}
		p.Y.Min = math.Pow10(int(math.Floor(math.Log10(lo / 2))))
		p.Y.Max = top * 1.8
	}
	return p
}

// plainTicks label a linear axis at 1, 2 or 5 times a power of ten, the
// step that gives three to six labels, written as the bars are (25,000,
// not 25000.00), with four unlabelled ticks between.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	step := math.Pow10(int(math.Floor(math.Log10(hi - lo))))
	for _, m := range []float64{0.1, 0.2, 0.5, 1} {
		if (hi-lo)/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / step * 5); i/5*step <= hi; i++ {
		v := i / 5 * step
		t := plot.Tick{Value: v}
		if math.Mod(i, 5) == 0 {
			t.Label = fmtNum(math.Round(v))
			if decimals := int(-math.Floor(math.Log10(step) + 1e-9)); decimals > 0 {
				t.Label = strconv.FormatFloat(v, 'f', decimals, 64)
			}
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// barPlotter draws one set of bars, from the bottom of the Y axis (0, or
// a log axis's floor) to each value, at offset from its category.
type barPlotter struct {
	values        []float64
	color         color.Color
	width, offset vg.Length
}

func (b *barPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range b.values {
		if v <= 0 {
			continue
		}
		x := trX(float64(i)) + b.offset
		y0, y1 := trY(p.Y.Min), trY(v)
		pts := []vg.Point{{X: x - b.width/2, Y: y0}, {X: x - b.width/2, Y: y1}, {X: x + b.width/2, Y: y1}, {X: x + b.width/2, Y: y0}}
		c.FillPolygon(b.color, c.ClipPolygonY(pts))
	}
}

// DataRange covers every category and the values; the caller sets the Y
// range.
func (b *barPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, float64(len(b.values) - 1), 0, 0
}

// GlyphBoxes make room for the bars' width at the ends of the X axis.
func (b *barPlotter) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	boxes := make([]plot.GlyphBox, len(b.values))
	for i := range b.values {
		boxes[i].X = p.X.Norm(float64(i))
		boxes[i].Rectangle = vg.Rectangle{Min: vg.Point{X: b.offset - b.width/2}, Max: vg.Point{X: b.offset + b.width/2}}
	}
	return boxes
}

func longest(ss []string) int {
	n := 0
	for _, s := range ss {
		n = max(n, len(s))
	}
	return n
}

// ms converts a duration in nanoseconds to milliseconds.
func ms(ns int64) float64 { return float64(ns) / 1e6 }

// msLabel labels a bar of milliseconds with its duration.
func msLabel(v float64) string { return fmtDur(timeDur(v * 1e6)) }

// handoverFailoverFigure: a panel per backend of graceful handover p50 and
// p99, Hustings beside each peer, each on its own scale (memory's 0.2 ms
// beside etcd's 40); then crash failover by backend against the TTL.
func handoverFailoverFigure(rep *Report) figure {
	f := figure{cols: 3}
	for _, backend := range backendsIn(rep) {
		var subjects []string
		var hp50, hp99, pp50, pp99 []float64
		for _, r := range rep.Select("handover") {
			if r.Backend != backend || r.Latency == nil {
				continue
			}
			subjects = append(subjects, handoverLabel(r.Subject))
			h, p := strings.HasPrefix(r.Subject, "hustings"), ms(int64(r.Latency.P50))
			q := ms(int64(r.Latency.P99))
			hp50, hp99 = append(hp50, pick(h, p)), append(hp99, pick(h, q))
			pp50, pp99 = append(pp50, pick(!h, p)), append(pp99, pick(!h, q))
		}
		if len(subjects) == 0 {
			continue
		}
		f.panels = append(f.panels, bars("Graceful handover: "+backend, "ms", subjects, 2, []barSet{
			{hp50, colHustings, 0}, {hp99, lighter(colHustings), 1}, {pp50, colPeer, 0}, {pp99, lighter(colPeer), 1},
		}, msLabel, true))
	}
	if len(f.panels) > 0 {
		f.key("Hustings p50", swatch{colHustings})
		f.key("Hustings p99", swatch{lighter(colHustings)})
		if len(rep.Select("handover")) > len(f.panels) {
			f.key("peer library p50", swatch{colPeer})
			f.key("peer library p99", swatch{lighter(colPeer)})
		}
	}
	var backends []string
	var fp50, fp99, ttl []float64
	for _, r := range rep.Select("failover") {
		if r.Subject != failoverSubject { // client-go's rows: in the table only
			continue
		}
		backends = append(backends, r.Backend)
		fp50, fp99 = append(fp50, ms(int64(r.Latency.P50))), append(fp99, ms(int64(r.Latency.P99)))
		ttl = append(ttl, r.Values["ttl_ns"]/1e6)
	}
	if len(backends) == 0 {
		return f
	}
	p := bars("Crash failover (Hustings)", "ms", backends, 2, []barSet{{fp50, colHustings, 0}, {fp99, lighter(colHustings), 1}}, msLabel, false)
	ttlLine, _ := levels(ttl, 0)
	target, _ := levels(ttl, 300)
	ttlLine.Color, ttlLine.Dashes = colBaseline, []vg.Length{vg.Points(4), vg.Points(3)}
	target.Color, target.Dashes = colHustings, []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(ttlLine, target)
	p.Y.Max = max(p.Y.Max, (slices.Max(ttl)+300)*1.1)
	f.panels = append(f.panels, p)
	if len(f.panels) == 1 {
		f.key("Hustings p50", swatch{colHustings})
		f.key("Hustings p99", swatch{lighter(colHustings)})
	}
	f.key("failover: the TTL", ttlLine)
	f.key("failover p99 target: TTL + 300 ms", target)
	return f
}

// pick returns v when ok, else 0 (no bar).
func pick(ok bool, v float64) float64 {
	if ok {
		return v
	}
	return 0
}

// levels draws a short level line at each category's value + add (ms):
// the TTL above each backend's failover bars.
func levels(values []float64, add float64) (*plotter.Line, error) {
	var pts plotter.XYs
	for i, v := range values {
		pts = append(pts, plotter.XY{X: float64(i) - 0.4, Y: v + add}, plotter.XY{X: float64(i) + 0.4, Y: v + add})
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return &plotter.Line{}, err
	}
	return l, nil
}

// handoverLabel names a subject of the handover workload on a chart:
// "Hustings", or the peer with the setting that bounds its handover.
func handoverLabel(subject string) string {
	name := strings.TrimSuffix(subject, " unlock → lock")
	switch {
	case strings.HasPrefix(subject, "hustings"):
		return "Hustings"
	case name == "redislock":
		return fmt.Sprintf("redislock, %v retry", strings.Replace(redislockRetry.String(), "ms", " ms", 1))
	case name == "redsync":
		return "redsync, 50–250 ms retry"
	case name == clientGoName:
		return "client-go, " + strings.Replace(clientGoDefaults.retry.String(), "s", " s", 1) + " retry"
	case name == clientGoTuned:
		return "client-go, " + strings.Replace(hustingsRetry.String(), "ms", " ms", 1) + " retry"
	}
	return name
}

// acquireFigure: p50 of acquire + release, of the server's plain round
// trips and of each peer's lock + unlock, a panel per server backend.
func acquireFigure(rep *Report) figure {
	f := figure{cols: 3}
	for _, backend := range backendsIn(rep) {
		var labels []string
		var hustings, baseline, peers []float64
		for _, r := range rep.Select("acquire-release") {
			if r.Backend != backend || r.Values == nil {
				continue
			}
			labels = append(labels, r.Subject)
			v := ms(int64(r.Latency.P50))
			isH, isBase := strings.HasPrefix(r.Subject, "hustings"), r.Values["x_read"] == 1 || r.Values["x_write"] == 1
			hustings, baseline, peers = append(hustings, pick(isH, v)), append(baseline, pick(isBase, v)), append(peers, pick(!isH && !isBase, v))
		}
		if len(labels) > 0 {
			f.panels = append(f.panels, bars("Acquire + release: "+backend, "p50, ms", labels, 1,
				[]barSet{{hustings, colHustings, 0}, {baseline, colBaseline, 0}, {peers, colPeer, 0}}, msLabel, false))
		}
	}
	if len(f.panels) > 0 {
		f.key("Hustings", swatch{colHustings})
		f.key("plain round trip (baseline)", swatch{colBaseline})
		f.key("peer library", swatch{colPeer})
	}
	return f
}
