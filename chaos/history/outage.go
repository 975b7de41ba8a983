package history

import (
	"slices"
	"time"
)

// The nodes whose stalls are the run's environment rather than a
// candidate's: the harness records them (see Stall).
const (
	// Harness is the test process, which carries every node's link to the
	// server (and, for etcd, the server itself; for Kubernetes, the
	// apiserver's etcd): its own clock jumped.
	Harness = "harness"
	// Server is the backend server as the harness's direct reads (no link)
	// found it: a read that failed or was slow.
	Server = "server"
)

// outages are the merged intervals in which the harness or the server
// stalled, sorted by From.
type outages []Fault

// outagesOf returns the environment's stalls among faults, merged.
func outagesOf(faults []Fault) outages {
	var in []Fault
	for _, f := range faults {
		if f.Kind == Stall && (f.Node == Harness || f.Node == Server) && f.To.After(f.From) {
			in = append(in, f)
		}
	}
	slices.SortFunc(in, func(a, b Fault) int { return a.From.Compare(b.From) })
	var out outages
	for _, f := range in {
		if n := len(out); n > 0 && !f.From.After(out[n-1].To) {
			if f.To.After(out[n-1].To) {
				out[n-1].To = f.To
			}
			continue
		}
		out = append(out, Fault{Kind: Stall, From: f.From, To: f.To})
	}
	return out
}

// total returns how long the outages last in all (they do not overlap).
func (o outages) total() time.Duration {
	var d time.Duration
	for _, f := range o {
		d += f.To.Sub(f.From)
	}
	return d
}

// within returns how much of [from, to] the outages cover.
func (o outages) within(from, to time.Time) time.Duration {
	var d time.Duration
	for _, f := range o {
		lo, hi := maxTime(f.From, from), minTime(f.To, to)
		if hi.After(lo) {
			d += hi.Sub(lo)
		}
	}
	return d
}

// Outage returns how much of [from, to] the environment's stalls among
// faults cover: the time in which the harness or the server did not answer.
func Outage(faults []Fault, from, to time.Time) time.Duration {
	return outagesOf(faults).within(from, to)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
