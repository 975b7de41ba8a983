package ops_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/ops"
)

// TestMetrics runs a scripted scenario and checks every metric's value.
func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := ops.NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ops.NewMetrics(reg); err == nil {
			t.Fatal("registering the metrics twice on one registry succeeded")
		}
		b := memory.New()
		with := ops.WithMetrics(m)

		// A campaign wins the lock; a one-shot run skips for contention.
		a, err := campaign.New(b, "lock", campaign.WithID("a"), campaign.WithTTL(10*time.Second), with)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Run(context.Background()) }()
		if e := <-a.Events(); e.Kind != events.Elected {
			t.Fatalf("first event %s, want elected", e)
		}
		answer := func(context.Context, events.Token) (int, error) { return 42, nil }
		if res, err := campaign.RunIfLeader(t.Context(), b, "lock", answer, with); err != nil || res.Outcome != campaign.Skipped {
			t.Fatalf("one-shot on a held lock: %v, %v; want skipped", res.Outcome, err)
		}
		// An action that fails.
		boom := errors.New("boom")
		fail := func(context.Context, events.Token) (int, error) { return 0, boom }
		if res, err := campaign.RunIfLeader(t.Context(), b, "job", fail, with); err != nil || !errors.Is(res.Err, boom) {
			t.Fatalf("failing action: %+v, %v; want its error in the result", res, err)
		}

		time.Sleep(5 * time.Second) // fake time: a keep-alive or so

		// The backend goes down: one run per failure mode, then the
		// campaign's lease is lost.
		b.PartitionAll()
		for _, mode := range [][]campaign.Option{nil, {campaign.WithFailOpen()}} {
			// Each mode's result is the subject of TestFailureModes;
			// here only what they count matters, and that a failure is
			// the backend's.
			if _, err := campaign.RunIfLeader(t.Context(), b, "job", answer, append(mode, with, campaign.WithTTL(2*time.Second))...); err != nil && !errors.Is(err, backends.ErrUnavailable) {
				t.Fatalf("a run on a backend that is down: %v, want ErrUnavailable or none", err)
			}
		}
		if e := <-a.Events(); e.Kind != events.Revoked {
			t.Fatalf("got %s, want the lease lost", e)
		}
		for _, c := range []struct {
			metric string
			labels []string // name, backend[, reason]
			want   float64
		}{
			{"hustings_attempts_total", []string{"lock", "memory"}, 2}, // the campaign's try and the one-shot's
			{"hustings_acquired_total", []string{"lock", "memory"}, 1},
			{"hustings_acquired_total", []string{"job", "memory"}, 1}, // the failing action's run
			{"hustings_elections_won_total", []string{"lock", "memory"}, 1},
			{"hustings_active_terms", []string{"lock", "memory"}, 0},
			{"hustings_action_failures_total", []string{"job", "memory"}, 1},
			{"hustings_not_acquired_total", []string{"lock", "memory", "contention"}, 1},
			{"hustings_not_acquired_total", []string{"job", "memory", "backend-error"}, 1},
			{"hustings_not_acquired_total", []string{"job", "memory", "fail-open-forced"}, 1},
			{"hustings_revoked_total", []string{"lock", "memory", "unreachable"}, 1},
		} {
			if got := value(t, reg, c.metric, c.labels); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.metric, c.labels, got, c.want)
			}
		}
		if got := value(t, reg, "hustings_action_duration_seconds", []string{"job", "memory"}); got != 2 {
			t.Errorf("action durations observed: %v, want 2 (the failing action, the fail-open run)", got)
		}
		if got := value(t, reg, "hustings_keepalive_duration_seconds", []string{"memory"}); got == 0 {
			t.Error("no keep-alive latency observed")
		}
		b.HealAll()
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		<-done
	})
}

// value returns a metric's value (a histogram's sample count) for the
// labels, in the order name, backend, reason; 0 if absent.
func value(t *testing.T, reg *prometheus.Registry, metric string, labels []string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"name", "backend", "reason"}
	if len(labels) == 1 {
		keys = []string{"backend"}
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i, v := range labels {
				if got[keys[i]] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

// TestNewMetricsRefusesNil: a nil Registerer or Metrics is ErrInvalid, not
// a panic.
func TestNewMetricsRefusesNil(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("NewMetrics(nil) panicked: %v", r)
		}
	}()
	_, err := ops.NewMetrics(nil)
	if !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("NewMetrics(nil): %v, want ErrInvalid", err)
	}
	if _, err := ops.NewMetrics((*prometheus.Registry)(nil)); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("NewMetrics of a nil *prometheus.Registry: %v, want ErrInvalid", err)
	}
	if _, err := campaign.New(memory.New(), "x", ops.WithMetrics(nil)); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("WithMetrics(nil): %v, want ErrInvalid", err)
	}
}

// TestAttemptsBalance: every attempt ends acquired or not_acquired, also
// one that ends with its ctx while it waits.
func TestAttemptsBalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := ops.NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		b := memory.New()
		s, err := b.Open(t.Context(), "holder", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Acquire(t.Context(), "x", 0); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		answer := func(context.Context, events.Token) (int, error) { return 42, nil }
		if _, err := campaign.RunIfLeader(ctx, b, "x", answer, ops.WithMetrics(m), campaign.WithWait(time.Minute)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("RunIfLeader against a holder, ctx ending first: %v, want the ctx's error", err)
		}
		att := value(t, reg, "hustings_attempts_total", []string{"x", "memory"})
		acq := value(t, reg, "hustings_acquired_total", []string{"x", "memory"})
		na := 0.0
		for _, r := range []string{"contention", "backend-error", "fail-open-forced", "canceled", "invalid"} {
			na += value(t, reg, "hustings_not_acquired_total", []string{"x", "memory", r})
		}
		if att != acq+na {
			t.Errorf("attempts %v != acquired %v + not_acquired %v", att, acq, na)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
}
