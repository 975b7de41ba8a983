package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series is one set of bars (or one line): a value per category.
type series struct {
	name   string
	values []float64
}

// writeCharts writes the PNG charts of rep into dir; a chart without data
// is left out.
func writeCharts(rep *Report, dir string) error {
	charts := []struct {
		file   string
		panels []*plot.Plot
	}{
		{"handover_failover.png", handoverFailoverPanels(rep)},
		{"acquire_release.png", acquirePanels(rep)},
		{"throughput.png", throughputPanels(rep)},
		{"scale.png", scalePanels(rep)},
	}
	for _, c := range charts {
		if len(c.panels) == 0 {
			continue
		}
		if err := savePanels(filepath.Join(dir, c.file), c.panels); err != nil {
			return fmt.Errorf("chart %s: %w", c.file, err)
		}
	}
	return nil
}

// savePanels draws the panels side by side into a PNG.
func savePanels(path string, panels []*plot.Plot) error {
	w := vg.Length(len(panels)) * 11 * vg.Centimeter
	img := vgimg.NewWith(vgimg.UseWH(w, 10*vg.Centimeter), vgimg.UseDPI(120))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Centimeter, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// bars makes a panel of grouped bars: one group per category, one bar per
// series.
func bars(title, ylabel string, categories []string, ss []series) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	width := vg.Points(min(60/float64(max(len(ss), 1)), 20))
	top := 0.0
	for i, s := range ss {
		for _, v := range s.values {
			top = max(top, v)
		}
		b, err := plotter.NewBarChart(plotter.Values(s.values), width)
		if err != nil {
			continue // no values
		}
		b.LineStyle.Width = 0
		b.Color = plotutil.Color(i)
		b.Offset = vg.Length(float64(i)-float64(len(ss)-1)/2) * width
		p.Add(b)
		if len(ss) > 1 {
			p.Legend.Add(s.name, b)
		}
	}
	p.NominalX(categories...)
	if len(categories) > 3 || longest(categories) > 10 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.Y.Min = 0
	if len(ss) > 1 {
		p.Y.Max = top * 1.35 // room for the legend above the bars
	}
	return p
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

// handoverFailoverPanels: graceful handover (Hustings p50 and p99, the
// best peer's p50) and crash failover (p50, p99, the TTL) by backend.
func handoverFailoverPanels(rep *Report) []*plot.Plot {
	var names []string
	var hp50, hp99, peer []float64
	for _, r := range rep.Select("handover") {
		if strings.HasPrefix(r.Subject, "hustings") {
			names = append(names, r.Backend)
			hp50, hp99 = append(hp50, ms(int64(r.Latency.P50))), append(hp99, ms(int64(r.Latency.P99)))
			peer = append(peer, 0)
		} else if i := slices.Index(names, r.Backend); i >= 0 && (peer[i] == 0 || ms(int64(r.Latency.P50)) < peer[i]) {
			peer[i] = ms(int64(r.Latency.P50))
		}
	}
	var out []*plot.Plot
	if len(names) > 0 {
		out = append(out, bars("Graceful handover", "ms", names, []series{
			{"Hustings p50", hp50}, {"Hustings p99", hp99}, {"best peer p50", peer},
		}))
	}
	var fnames []string
	var fp50, fp99, ttl []float64
	for _, r := range rep.Select("failover") {
		fnames = append(fnames, r.Backend)
		fp50, fp99 = append(fp50, ms(int64(r.Latency.P50))), append(fp99, ms(int64(r.Latency.P99)))
		ttl = append(ttl, r.Values["ttl_ns"]/1e6)
	}
	if len(fnames) > 0 {
		p := bars("Crash failover (Hustings)", "ms", fnames, []series{{"p50", fp50}, {"p99", fp99}, {"TTL", ttl}})
		out = append(out, p)
	}
	return out
}

// acquirePanels: p50 of acquire + release and of the baselines, a panel per
// server backend.
func acquirePanels(rep *Report) []*plot.Plot {
	var out []*plot.Plot
	for _, backend := range backendsIn(rep) {
		var labels []string
		var p50 []float64
		for _, r := range rep.Select("acquire-release") {
			if r.Backend == backend && r.Values != nil {
				labels = append(labels, r.Subject)
				p50 = append(p50, ms(int64(r.Latency.P50)))
			}
		}
		if len(labels) > 0 {
			out = append(out, bars("Acquire + release: "+backend, "p50, ms", labels, []series{{"p50", p50}}))
		}
	}
	return out
}

// throughputPanels: runs per second at 1 and 8 goroutines, a panel per
// backend.
func throughputPanels(rep *Report) []*plot.Plot {
	var out []*plot.Plot
	for _, backend := range backendsIn(rep) {
		var subjects, params []string
		vals := map[string]map[string]float64{}
		for _, r := range rep.Select("throughput") {
			if r.Backend != backend {
				continue
			}
			if !slices.Contains(subjects, r.Subject) {
				subjects = append(subjects, r.Subject)
			}
			if !slices.Contains(params, r.Param) {
				params = append(params, r.Param)
			}
			if vals[r.Param] == nil {
				vals[r.Param] = map[string]float64{}
			}
			vals[r.Param][r.Subject] = r.Values["ops_per_s"]
		}
		if len(subjects) < 2 {
			continue
		}
		var ss []series
		for _, param := range params {
			s := series{name: param}
			for _, sub := range subjects {
				s.values = append(s.values, vals[param][sub])
			}
			ss = append(ss, s)
		}
		out = append(out, bars("Lock + unlock: "+backend, "runs/s", subjects, ss))
	}
	return out
}

// scalePanels: bytes per held campaign, and requests per second while
// holding, against the number of locks.
func scalePanels(rep *Report) []*plot.Plot {
	rows := rep.Select("scale")
	if len(rows) == 0 {
		return nil
	}
	mem := plot.New()
	mem.Title.Text = "Memory per held campaign"
	mem.X.Label.Text = "locks held"
	mem.Y.Label.Text = "heap + stacks, bytes (log)"
	mem.X.Scale, mem.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	mem.Y.Scale, mem.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	reqs := plot.New()
	reqs.Title.Text = "Requests while holding"
	reqs.X.Label.Text = "locks held"
	reqs.Y.Label.Text = "requests/s (log)"
	reqs.X.Scale, reqs.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	reqs.Y.Scale, reqs.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	i, anyReqs := 0, false
	for _, backend := range backendsIn(rep) {
		for _, subject := range []string{"hustings campaigns", "redislock"} {
			var mpts, rpts plotter.XYs
			for _, r := range rows {
				if r.Backend == backend && r.Subject == subject {
					n := r.Values["locks"]
					if n >= 10 { // fixed costs swamp the figure for one lock
						mpts = append(mpts, plotter.XY{X: n, Y: r.Values["bytes_per_campaign"]})
					}
					if backend != "memory" && r.Values["requests_per_s"] > 0 {
						rpts = append(rpts, plotter.XY{X: n, Y: r.Values["requests_per_s"]})
					}
				}
			}
			label := backend + " " + strings.TrimSuffix(subject, " campaigns")
			if subject == "redislock" {
				label = "redislock (" + backend + ")"
			}
			addLine(mem, label, mpts, i)
			addLine(reqs, label, rpts, i)
			anyReqs = anyReqs || len(rpts) > 0
			i++
		}
	}
	target, _ := plotter.NewLine(plotter.XYs{{X: 10, Y: 8192}, {X: 10000, Y: 8192}})
	if target != nil {
		target.Color = color.Gray{Y: 128}
		target.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		mem.Add(target)
		mem.Legend.Add("target: 8 KiB", target)
	}
	mem.Legend.Top = true
	reqs.Legend.Top, reqs.Legend.Left = true, true
	if !anyReqs { // the memory backend alone: no server to count
		return []*plot.Plot{mem}
	}
	return []*plot.Plot{mem, reqs}
}

func addLine(p *plot.Plot, label string, pts plotter.XYs, i int) {
	if len(pts) == 0 {
		return
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return
	}
	l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
	s.Shape = plotutil.Shape(i)
	p.Add(l, s)
	p.Legend.Add(label, l, s)
}
