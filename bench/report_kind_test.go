package main

import (
	"strings"
	"testing"
)

// TestReportSaysWhatKindOfRun: a run limited by -backends, -workloads or
// -scale is not called a full run at the top of its report.
func TestReportSaysWhatKindOfRun(t *testing.T) {
	for _, c := range []struct {
		rep  Report
		want string
	}{
		{Report{}, "full run, started"},
		{Report{Partial: true}, "partial run (some backends, workloads or scale points), started"},
		{Report{Quick: true}, "quick run (-quick"},
	} {
		first := strings.SplitN(strings.TrimPrefix(c.rep.Markdown(), "# Hustings benchmarks\n\n"), "\n", 2)[0]
		if !strings.HasPrefix(first, c.want) {
			t.Errorf("report of %+v opens with %q, want %q", c.rep, first, c.want)
		}
	}
}
