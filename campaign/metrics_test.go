package campaign_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// TestMetrics runs a scripted scenario and checks every metric's value.
func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := campaign.NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := campaign.NewMetrics(reg); err == nil {
			t.Fatal("registering the metrics twice on one registry succeeded")
		}
		b := memory.New()
		with := campaign.WithMetrics(m)

		// A campaign wins the lock; a one-shot run skips for contention.
		a := start(t, b, "a", with)
		next(t, a.c.Events())
		if res, _ := campaign.RunIfLeader(t.Context(), b, "lock", answer, with); res.Outcome != campaign.Skipped {
			t.Fatalf("one-shot on a held lock: %v", res.Outcome)
		}
		// An action that fails.
		boom := func(context.Context, events.Token) (int, error) { return 0, errors.New("boom") }
		campaign.RunIfLeader(t.Context(), b, "job", boom, with)

		time.Sleep(5 * time.Second) // a keep-alive or so

		// The backend goes down: one run per failure mode, then the
		// campaign's lease is lost.
		b.PartitionAll()
		for _, mode := range [][]campaign.Option{nil, {campaign.WithSkipOnFailure()}, {campaign.WithFailOpen()}} {
			campaign.RunIfLeader(t.Context(), b, "job", answer, append(mode, with, campaign.WithLease(2*time.Second))...)
		}
		if e := next(t, a.c.Events()); e.Kind != events.Revoked {
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
			{"hustings_not_acquired_total", []string{"job", "memory", "backend-error"}, 2}, // rethrow and skip
			{"hustings_not_acquired_total", []string{"job", "memory", "fail-open-forced"}, 1},
			{"hustings_revoked_total", []string{"lock", "memory", "unreachable"}, 1},
		} {
			if got := value(t, reg, c.metric, c.labels); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.metric, c.labels, got, c.want)
			}
		}
		if got := value(t, reg, "hustings_action_duration_seconds", []string{"job", "memory"}); got != 2 {
			t.Errorf("action durations observed: %v, want 2 (the failing action, the fail-open run; none for skips)", got)
		}
		if got := value(t, reg, "hustings_keepalive_duration_seconds", []string{"memory"}); got == 0 {
			t.Error("no keep-alive latency observed")
		}
		b.HealAll()
		a.stop(t)
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
