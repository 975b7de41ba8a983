package main

import (
	"fmt"
	"strings"
)

// Summary renders one compact row per backend: the headline figures of
// every workload, for the root README.
func (rep *Report) Summary() string {
	var rows [][]string
	for _, backend := range backendsIn(rep) {
		rows = append(rows, []string{
			backend,
			rep.acquireCell(backend),
			rep.throughputCell(backend),
			rep.handoverCell(backend),
			rep.failoverCell(backend),
			rep.scaleCell(backend),
		})
	}
	return table([]string{"backend", "acquire + release p50 (one plain write; best peer)", "RunIfLeader runs/s, 1 goroutine (best peer)",
		"graceful handover p50 / p99 (best peer p50)", "crash failover p50 / p99", "most campaigns held: each; requests/s"}, rows)
}

func (rep *Report) acquireCell(backend string) string {
	h := rep.Find("acquire-release", backend, "hustings Acquire + Release", "")
	if h == nil {
		return "–"
	}
	var extra []string
	for _, r := range rep.Select("acquire-release") {
		if r.Backend == backend && r.Values["x_write"] == 1 {
			extra = append(extra, r.Subject+" "+fmtDur(r.Latency.P50))
		}
	}
	if p := rep.bestPeer("acquire-release", backend, "", lowerP50); p != nil {
		extra = append(extra, p.Subject+" "+fmtDur(p.Latency.P50))
	}
	return fmtDur(h.Latency.P50) + paren(extra)
}

// throughputCell gives RunIfLeader's runs/s at 1 goroutine without a
// session and on one, and the best peer's.
func (rep *Report) throughputCell(backend string) string {
	var parts []string
	var best *Row
	for _, sub := range []string{subjectRunIf, subjectRunIfSession} {
		h := rep.Find("throughput", backend, sub, "1 goroutine")
		if h == nil {
			continue
		}
		s := fmtNum(h.Values["ops_per_s"])
		if sub == subjectRunIfSession {
			s = "on a session " + s
		}
		parts = append(parts, s)
		if p := rep.Find("throughput", backend, h.Baseline, "1 goroutine"); p != nil {
			best = p
		}
	}
	if len(parts) == 0 {
		return "–"
	}
	s := strings.Join(parts, "; ")
	if best != nil {
		s += paren([]string{best.Subject + " " + fmtNum(best.Values["ops_per_s"])})
	}
	return s
}

func (rep *Report) handoverCell(backend string) string {
	h := rep.Find("handover", backend, "hustings Resign → Elected", "")
	if h == nil {
		return "–"
	}
	s := fmtDur(h.Latency.P50) + " / " + fmtDur(h.Latency.P99)
	if p := rep.bestPeer("handover", backend, "", lowerP50); p != nil {
		s += paren([]string{handoverLabel(p.Subject) + ": " + fmtDur(p.Latency.P50)})
	}
	return s
}

func (rep *Report) failoverCell(backend string) string {
	r := rep.Find("failover", backend, failoverSubject, "")
	if r == nil {
		return "–"
	}
	return fmt.Sprintf("%s / %s (TTL %s)", fmtDur(r.Latency.P50), fmtDur(r.Latency.P99), fmtDur(timeDur(r.Values["ttl_ns"])))
}

// scaleCell gives the largest point whose campaigns were all elected and
// held, and any larger point that was not.
func (rep *Report) scaleCell(backend string) string {
	var held, missed *Row
	for _, r := range rep.Select("scale") {
		if r.Backend != backend || r.Subject != "hustings campaigns" {
			continue
		}
		if heldAll(r) {
			held, missed = &r, nil
		} else if missed == nil {
			missed = &r
		}
	}
	var parts []string
	if held != nil {
		v := held.Values
		s := fmt.Sprintf("%s: %s B, %.2f goroutines", fmtNum(v["locks"]), fmtNum(v["bytes_per_campaign"]), v["goroutines_per_campaign"])
		if backend != "memory" {
			s += fmt.Sprintf("; %s/s", fmtRate(v["requests_per_s"]))
			if p := rep.Find("scale", backend, "redislock", held.Param); p != nil {
				s += fmt.Sprintf(" (redislock %s/s)", fmtNum(p.Values["requests_per_s"]))
			}
		}
		parts = append(parts, s)
	}
	if missed != nil {
		parts = append(parts, fmt.Sprintf("%s started at once: %s", fmtNum(missed.Values["locks"]), electedCell(*missed)))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "; ")
}

// bestPeer returns the best row of workload on backend that is not
// Hustings', by better.
func (rep *Report) bestPeer(workload, backend, param string, better func(a, b *Row) bool) *Row {
	var best *Row
	for i, r := range rep.Rows {
		if r.Workload != workload || r.Backend != backend || strings.HasPrefix(r.Subject, "hustings") || r.Latency == nil {
			continue
		}
		if r.Values != nil && r.Values["x_read"] == 1 || r.Values != nil && r.Values["x_write"] == 1 {
			continue // a server's plain round trip, not a peer
		}
		if param != "" && r.Param != param {
			continue
		}
		if best == nil || better(&rep.Rows[i], best) {
			best = &rep.Rows[i]
		}
	}
	return best
}

func lowerP50(a, b *Row) bool { return a.Latency.P50 < b.Latency.P50 }

func paren(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
