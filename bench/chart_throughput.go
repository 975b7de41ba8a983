package main

import (
	"image/color"
	"slices"
	"strings"
)

// throughputKind is a kind of throughput subject, told apart on the chart
// by its colour.
type throughputKind struct {
	name  string // in the legend
	color color.Color
	is    func(subject string) bool
}

// throughputKinds: RunIfLeader without a session and on one have colours
// of their own, so that the two Hustings bars of a backend are not read
// as one subject.
var throughputKinds = []throughputKind{
	{"Hustings", colHustings, func(s string) bool { return !isPeer(s) && s != subjectRunIfSession }},
	{"Hustings on a session", colSession, func(s string) bool { return s == subjectRunIfSession }},
	{"peer library", colPeer, isPeer},
}

func isPeer(subject string) bool { return !strings.HasPrefix(subject, "hustings") }

// throughputFigure: runs per second at 1 and 8 goroutines, a panel per
// backend with peers.
func throughputFigure(rep *Report) figure {
	f := figure{cols: 3} // eleven backends in one row were unreadable
	var params []string
	for _, r := range rep.Select("throughput") {
		if !slices.Contains(params, r.Param) {
			params = append(params, r.Param)
		}
	}
	shown := make([]bool, len(throughputKinds)) // kinds with bars in some panel
	for _, backend := range backendsIn(rep) {
		subjects, vals := throughputOf(rep, backend)
		if !slices.ContainsFunc(subjects, isPeer) {
			continue // memory: nothing to compare with
		}
		var sets []barSet
		for slot, param := range params {
			for k, kind := range throughputKinds {
				if !slices.ContainsFunc(subjects, kind.is) {
					continue
				}
				shown[k] = true
				set := barSet{color: shade(kind.color, slot), slot: slot}
				for _, sub := range subjects {
					set.values = append(set.values, pick(kind.is(sub), vals[param][sub]))
				}
				sets = append(sets, set)
			}
		}
		f.panels = append(f.panels, bars("Lock + unlock: "+backend, "runs/s", subjects, len(params), sets, fmtNum, false))
	}
	for k, kind := range throughputKinds {
		for slot, param := range params {
			if shown[k] {
				f.key(kind.name+", "+param, swatch{shade(kind.color, slot)})
			}
		}
	}
	return f
}

// throughputOf returns the throughput subjects of backend in their order,
// and their runs/s by param and subject.
func throughputOf(rep *Report, backend string) ([]string, map[string]map[string]float64) {
	var subjects []string
	vals := map[string]map[string]float64{}
	for _, r := range rep.Select("throughput") {
		if r.Backend != backend {
			continue
		}
		if !slices.Contains(subjects, r.Subject) {
			subjects = append(subjects, r.Subject)
		}
		if vals[r.Param] == nil {
			vals[r.Param] = map[string]float64{}
		}
		vals[r.Param][r.Subject] = r.Values["ops_per_s"]
	}
	return subjects, vals
}

// shade is c for the first setting (slot 0), its lighter shade after.
func shade(c color.Color, slot int) color.Color {
	if slot > 0 {
		return lighter(c)
	}
	return c
}
