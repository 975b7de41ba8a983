package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/validate"
)

// Metrics counts what campaigns, groups and one-shot runs do, as
// Prometheus metrics (all named hustings_*, labelled by the full lock name
// and the backend). Make one with NewMetrics, registered on your
// Registerer, and hand it to every campaign with WithMetrics. Each lock
// name is a label value: for names with unbounded parts (a lock per
// tenant), give those campaigns a Metrics of their own, or none. Safe for
// concurrent use.
type Metrics struct {
	attempts, acquired, won, actionFailures *prometheus.CounterVec
	notAcquired, revoked                    *prometheus.CounterVec
	active                                  *prometheus.GaugeVec
	action                                  *prometheus.HistogramVec
	keepAlive                               *prometheus.HistogramVec
	keepAliveFailures                       *prometheus.CounterVec
}

// NewMetrics makes the metrics and registers them on reg; nothing is
// registered globally. It returns the registration's error, for example
// when the metrics are already registered on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if validate.Nil(reg) {
		return nil, fmt.Errorf("%w: ops: nil prometheus.Registerer", campaign.ErrInvalid)
	}
	nb := []string{"name", "backend"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hustings_" + name, Help: help}, labels)
	}
	m := &Metrics{
		attempts:          counter("attempts_total", "Tries for a lock.", nb...),
		acquired:          counter("acquired_total", "Tries that got the lock.", nb...),
		won:               counter("elections_won_total", "Terms begun by campaigns and groups.", nb...),
		notAcquired:       counter("not_acquired_total", "Tries that did not get the lock, by reason (contention, backend-error, fail-open-forced, canceled, invalid).", "name", "backend", "reason"),
		revoked:           counter("revoked_total", "Terms ended, by reason (resigned, lease-expired, session-lost, lock-lost, unreachable, canceled).", "name", "backend", "reason"),
		actionFailures:    counter("action_failures_total", "One-shot runs whose function returned an error.", nb...),
		keepAliveFailures: counter("keepalive_failures_total", "Session renewals that failed.", "backend"),
		active:            prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hustings_active_terms", Help: "Terms in force."}, nb),
		action: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hustings_action_duration_seconds",
			Help: "How long one-shot functions ran.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, nb),
		keepAlive: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hustings_keepalive_duration_seconds",
			Help: "How long session renewals took.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"backend"}),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.acquired, m.won, m.notAcquired, m.revoked,
		m.actionFailures, m.keepAliveFailures, m.active, m.action, m.keepAlive} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// WithMetrics makes a campaign, group, session, RunIfLeader or Every
// report to m; a nil m is ErrInvalid. Default: no metrics.
func WithMetrics(m *Metrics) campaign.Option {
	return elector.Opt("ops.WithMetrics", uses, func(c *elector.Config) {
		if m == nil {
			c.Reject(errors.New("ops: nil Metrics"))
			return
		}
		c.Hooks = append(c.Hooks, metricsHook{m: m})
	})
}

// metricsHook feeds Metrics from the engine.
type metricsHook struct {
	elector.NopHook
	m *Metrics
}

func (k metricsHook) Try(name, backend string, why elector.Reason) {
	k.m.attempts.WithLabelValues(name, backend).Inc()
	if why == elector.NoReason {
		k.m.acquired.WithLabelValues(name, backend).Inc()
		return
	}
	k.m.notAcquired.WithLabelValues(name, backend, why.String()).Inc()
}

func (k metricsHook) Term(_ context.Context, e events.Event, backend string, _ time.Duration, _ elector.Hooks, _ func() time.Time) elector.TermHook {
	k.m.won.WithLabelValues(e.Name, backend).Inc()
	k.m.active.WithLabelValues(e.Name, backend).Inc()
	return metricsTerm{m: k.m, backend: backend}
}

func (k metricsHook) KeepAlive(backend string, d time.Duration, err error) {
	k.m.keepAlive.WithLabelValues(backend).Observe(d.Seconds())
	if err != nil {
		k.m.keepAliveFailures.WithLabelValues(backend).Inc()
	}
}

func (k metricsHook) Run(_ context.Context, name, backend, _ string) elector.RunHook {
	return metricsRun{m: k.m, name: name, backend: backend}
}

// metricsTerm ends a term's count.
type metricsTerm struct {
	m       *Metrics
	backend string
}

func (t metricsTerm) Context(ctx context.Context) context.Context { return ctx }
func (t metricsTerm) Work() func()                                { return func() {} }

func (t metricsTerm) Ended(e events.Event) {
	t.m.active.WithLabelValues(e.Name, t.backend).Dec()
	t.m.revoked.WithLabelValues(e.Name, t.backend, elector.ReasonCode(e.Reason)).Inc()
}

// metricsRun times a one-shot run's function and counts its failure.
type metricsRun struct {
	m             *Metrics
	name, backend string
}

func (r metricsRun) Context(ctx context.Context) context.Context { return ctx }

func (r metricsRun) Work(int, events.Token, time.Time) func() {
	began := time.Now()
	return func() { r.m.action.WithLabelValues(r.name, r.backend).Observe(time.Since(began).Seconds()) }
}

func (r metricsRun) Ended(outcome string, _ error) {
	if outcome == campaign.ActionFailed.String() {
		r.m.actionFailures.WithLabelValues(r.name, r.backend).Inc()
	}
}
