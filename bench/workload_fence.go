package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/fence"
)

// fenceLock is the lock the fenced-write workload holds while it writes.
const fenceLock = "bench-fence"

// guardBackend is the backend column of the fence.Guard rows: the Guard
// runs beside the resource, in front of an HTTP handler, with no store.
const guardBackend = "http"

// fencedWrite times one write through the backend's native fence, under
// the token of a lock held by a session, against the same write without
// the fence, in alternating order. On the run's first system it also
// times fence.Guard in front of an HTTP handler against the handler
// alone, under that lock's token.
func (b *bench) fencedWrite(ctx context.Context, s *system) error {
	if s.fence == nil {
		return fmt.Errorf("no native fence set up for %s", s.name)
	}
	sess, err := s.backend.Open(ctx, "bench-fence", s.maxTTL)
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close(context.WithoutCancel(ctx)) }()
	token, err := sess.Acquire(ctx, fenceLock, 0)
	if err != nil {
		return err
	}
	renewed := time.Now()
	chores := func(ctx context.Context) error {
		if time.Since(renewed) < s.maxTTL/4 {
			return nil
		}
		renewed = time.Now()
		return sess.KeepAlive(ctx)
	}
	pair, err := s.fence(ctx, fenceLock, token)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := b.timePair(ctx, s.name, pair, chores, ""); err != nil {
		return err
	}
	if len(b.systems) > 0 && s == b.systems[0] {
		return b.guardedHandler(ctx, token, s.name)
	}
	return nil
}

// timePair times pair's fenced and plain writes, one of each in turn
// (which goes first alternates), up to cfg.FenceWrites of each or for
// cfg.FenceWindow, after one untimed write of each; chores run untimed
// before every write. It adds a row for each.
func (b *bench) timePair(ctx context.Context, backend string, pair fencePair, chores func(context.Context) error, note string) error {
	subjects := []subject{pair.fenced, pair.plain}
	for _, sub := range subjects {
		if err := sub.op(ctx); err != nil {
			return fmt.Errorf("%s: warm-up: %w", sub.name, err)
		}
	}
	samples := make([][]time.Duration, len(subjects))
	start := time.Now()
	for i := 0; i < b.cfg.FenceWrites && (i == 0 || time.Since(start) < b.cfg.FenceWindow); i++ {
		for k := range subjects {
			j := (i + k) % len(subjects)
			if err := chores(ctx); err != nil {
				return fmt.Errorf("keep-alive: %w", err)
			}
			t := time.Now()
			if err := subjects[j].op(ctx); err != nil {
				return fmt.Errorf("%s (write %d): %w", subjects[j].name, i, err)
			}
			samples[j] = append(samples[j], time.Since(t))
		}
	}
	fenced, plain := Summarize(samples[0]), Summarize(samples[1])
	x := ratio(float64(fenced.P50), float64(plain.P50))
	b.report.Add(Row{Workload: "fenced-write", Backend: backend, Subject: pair.fenced.name, Param: "fenced", Latency: &fenced,
		Values: map[string]float64{"ops_per_s": perSecond(samples[0]), "x_unfenced": x}, Baseline: pair.plain.name, Ratio: x, Note: note})
	b.report.Add(Row{Workload: "fenced-write", Backend: backend, Subject: pair.plain.name, Param: "unfenced", Latency: &plain,
		Values: map[string]float64{"ops_per_s": perSecond(samples[1])}, Note: note})
	b.logf("  fenced   p50 %-9s unfenced p50 %-9s %s", fmtDur(fenced.P50), fmtDur(plain.P50), fmtRatio(x))
	return nil
}

// perSecond is how many writes a second one writer makes at the
// samples' pace.
func perSecond(samples []time.Duration) float64 {
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return ratio(float64(len(samples)), sum.Seconds())
}

// guardedHandler times POSTs to an HTTP handler behind fence.Guard's
// Handler, the client setting the fence's headers with token, against
// POSTs to the handler alone, on a loopback server of its own.
func (b *bench) guardedHandler(ctx context.Context, token events.Token, from string) error {
	b.logf("fenced-write: fence.Guard in front of an HTTP handler")
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	var g fence.Guard
	mux := http.NewServeMux()
	mux.Handle("/plain", handler)
	mux.Handle("/guarded", g.Handler(handler))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := srv.Client()
	post := func(path string, fenced bool) func(context.Context) error {
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, nil)
			if err != nil {
				return err
			}
			if fenced {
				fence.SetHeaders(req.Header, fenceLock, token)
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				return fmt.Errorf("POST %s: %s", path, resp.Status)
			}
			return nil
		}
	}
	pair := fencePair{
		fenced: subject{"POST through Guard.Handler, fence.SetHeaders on the client", post("/guarded", true)},
		plain:  subject{"POST to the handler alone", post("/plain", false)},
	}
	none := func(context.Context) error { return nil }
	return b.timePair(ctx, guardBackend, pair, none, "loopback httptest server, keep-alive connection; token of the lock held on "+from)
}
