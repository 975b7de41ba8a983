package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// timeDur converts a float count of nanoseconds from the JSON to a
// duration.
func timeDur(ns float64) time.Duration { return time.Duration(ns) }

// Row is one measured subject of one workload on one backend: a latency
// distribution, named values (ops/s, bytes per campaign, ...), or both,
// and its ratio to the baseline measured in the same run.
type Row struct {
	Workload string             `json:"workload"`
	Backend  string             `json:"backend"`
	Subject  string             `json:"subject"`
	Param    string             `json:"param,omitempty"`
	Latency  *Dist              `json:"latency,omitempty"`
	Values   map[string]float64 `json:"values,omitempty"`
	Baseline string             `json:"baseline,omitempty"`
	Ratio    float64            `json:"ratio,omitempty"`
	Note     string             `json:"note,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	OS        string `json:"os"`
	GoVersion string `json:"go_version"`
	Redis     string `json:"redis,omitempty"`
}

// Report is everything one run measured, written as latest.json and
// rendered as latest.md.
type Report struct {
	Started  time.Time         `json:"started"`
	Elapsed  time.Duration     `json:"elapsed_ns"`
	Command  string            `json:"command"`
	Revision string            `json:"revision,omitempty"` // of the library measured
	Quick    bool              `json:"quick"`
	Partial  bool              `json:"partial,omitempty"` // some backends, workloads or scale points only
	Machine  Machine           `json:"machine"`
	Settings map[string]string `json:"settings"`
	Rows     []Row             `json:"rows"`
	Targets  []Target          `json:"targets"`
	Errors   []string          `json:"errors,omitempty"`
}

// Add appends r to the report.
func (rep *Report) Add(r Row) { rep.Rows = append(rep.Rows, r) }

// Find returns the first row of the workload, backend and subject (and
// param, when not empty), or nil.
func (rep *Report) Find(workload, backend, subject, param string) *Row {
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if r.Workload == workload && r.Backend == backend && r.Subject == subject && (param == "" || r.Param == param) {
			return r
		}
	}
	return nil
}

// Select returns the rows of the workload, in the order they were added.
func (rep *Report) Select(workload string) []Row {
	var out []Row
	for _, r := range rep.Rows {
		if r.Workload == workload {
			out = append(out, r)
		}
	}
	return out
}

// WriteFiles writes latest.json and latest.md into dir.
func (rep *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latest.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "latest.md"), []byte(rep.Markdown()), 0o644)
}

// fmtDur formats a latency with three significant digits in a unit that
// suits it.
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return sig3(float64(d)/float64(time.Microsecond)) + " µs"
	case d < time.Second:
		return sig3(float64(d)/float64(time.Millisecond)) + " ms"
	}
	return sig3(d.Seconds()) + " s"
}

// sig3 formats v with about three significant digits.
func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtNum formats a count or rate with thousands separators, or with two
// decimals when it is small.
func fmtNum(v float64) string {
	if v < 10 && v != float64(int64(v)) {
		return fmt.Sprintf("%.2f", v)
	}
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtRatio formats a ratio as "1.23×", or "–" when there is none.
func fmtRatio(r float64) string {
	if r == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r)
}

// table renders a Markdown table.
func table(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}
