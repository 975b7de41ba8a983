package ops_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/ops"
)

// newTracing returns an SDK provider that exports every span, as it
// ends, to the in-memory exporter returned with it.
func newTracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// spansNamed returns the ended spans called name, in the order they ended.
func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// attrs returns a span's attributes by key.
func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// skewed is a clock for the memory backend that can be moved ahead.
type skewed struct{ ahead atomic.Int64 }

func (c *skewed) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// Each term is a span with the lock, slot, token, backend and candidate,
// ended with its revocation's reason; the term's work is its child; a
// failed keep-alive is an event of the term it threatened.
func TestTraceOfTerms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, exp := newTracing(t)
		clock := &skewed{}
		b := memory.New(memory.WithClock(clock))
		var tokens []events.Token
		work := func(ctx context.Context, term events.Event) error {
			tokens = append(tokens, term.Token)
			_, span := tp.Tracer("test").Start(ctx, "work")
			defer span.End()
			<-ctx.Done()
			return nil
		}
		c := start(t, b, "job", "a", work, ops.WithTracerProvider(tp))
		synctest.Wait()
		if err := c.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl) // elected again
		synctest.Wait()
		clock.ahead.Store(int64(10 * ttl)) // the backend sees the session expired: the next keep-alive fails
		time.Sleep(ttl)
		synctest.Wait()

		terms := spansNamed(exp, "hustings.term")
		if len(terms) < 2 || len(tokens) < 2 {
			t.Fatalf("%d term spans ended for tokens %v, want at least 2", len(terms), tokens)
		}
		for i, want := range []struct {
			reason string
			status codes.Code
		}{{"resigned", codes.Unset}, {"session-lost", codes.Error}} {
			s, a := terms[i], attrs(terms[i])
			if a["hustings.lock.name"].AsString() != "job" || a["hustings.lock.slot"].AsInt64() != 0 ||
				a["hustings.token"].AsInt64() != int64(tokens[i]) || a["hustings.backend"].AsString() != "memory" ||
				a["hustings.candidate.id"].AsString() != "a" {
				t.Errorf("term %d's span has attributes %v; want job, slot 0, token %d, memory, a", i, s.Attributes, tokens[i])
			}
			if got := a["hustings.revoke.reason"].AsString(); got != want.reason || s.Status.Code != want.status {
				t.Errorf("term %d's span ended with reason %q, status %v; want %q, %v", i, got, s.Status, want.reason, want.status)
			}
			if s.Parent.IsValid() {
				t.Errorf("term %d's span has a parent %v; want a root", i, s.Parent)
			}
		}
		if n := len(terms[0].Events); n != 0 {
			t.Errorf("the resigned term has %d events, want none: %v", n, terms[0].Events)
		}
		if ev := terms[1].Events; len(ev) != 1 || ev[0].Name != "keep-alive failed" {
			t.Errorf("the term whose session was lost has events %v; want one keep-alive failure", ev)
		}
		works := spansNamed(exp, "work")
		if len(works) < 2 || works[0].Parent.SpanID() != terms[0].SpanContext.SpanID() || works[1].Parent.SpanID() != terms[1].SpanContext.SpanID() {
			t.Errorf("the work spans are not children of their terms' spans")
		}
	})
}

// A failed keep-alive is an event of the terms on its session only, not
// of another session's with the same candidate ID on the same kind of
// backend; a campaign on a shared Session given WithTracerProvider, like
// the campaign, hears its failures.
func TestTraceOfKeepAliveFailuresStaysOnItsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, exp := newTracing(t)
		clock := &skewed{}
		failing, fine := memory.New(memory.WithClock(clock)), memory.New()
		s, err := campaign.NewSession(failing, campaign.WithID("a"), campaign.WithTTL(ttl), campaign.WithRetry(ttl/4), ops.WithTracerProvider(tp))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("the session's Run = %v, want context.Canceled", err)
			}
		}()
		shared, err := s.Campaign("job", ops.WithTracerProvider(tp))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := shared.Close(); err != nil {
				t.Error(err)
			}
		}()
		other := start(t, fine, "job", "a", nil, ops.WithTracerProvider(tp))
		synctest.Wait()
		if !shared.State().Leader || !other.State().Leader {
			t.Fatal("the campaigns on their two backends do not both lead")
		}
		clock.ahead.Store(int64(10 * ttl)) // the next keep-alive of the shared session fails
		time.Sleep(ttl)
		synctest.Wait()
		if err := other.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		byReason := map[string]tracetest.SpanStub{}
		for _, sp := range spansNamed(exp, "hustings.term") {
			byReason[attrs(sp)["hustings.revoke.reason"].AsString()] = sp
		}
		lost, ok1 := byReason["session-lost"]
		resigned, ok2 := byReason["resigned"]
		if !ok1 || !ok2 {
			t.Fatalf("term spans ended for %v; want one session-lost, one resigned", slices.Collect(maps.Keys(byReason)))
		}
		if ev := lost.Events; len(ev) != 1 || ev[0].Name != "keep-alive failed" {
			t.Errorf("the shared session's term has events %v; want one keep-alive failure", ev)
		}
		if len(resigned.Events) != 0 {
			t.Errorf("the other session's term has events %v; want none", resigned.Events)
		}
	})
}

// A one-shot run is a span under the caller's, with its outcome: fn runs
// under it, a skip is not an error, a failed action is.
func TestTraceOfOneShotRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, exp := newTracing(t)
		b := memory.New()
		start(t, b, "held", "a", nil)
		synctest.Wait()
		ctx, req := tp.Tracer("test").Start(t.Context(), "request")
		var inFn trace.SpanContext
		ok := func(ctx context.Context, _ events.Token) (int, error) {
			inFn = trace.SpanContextFromContext(ctx)
			return 1, nil
		}
		failed := func(context.Context, events.Token) (int, error) { return 0, errors.New("disk full") }
		opt := ops.WithTracerProvider(tp)
		for _, run := range []struct {
			name string
			fn   func(context.Context, events.Token) (int, error)
		}{{"job", ok}, {"held", ok}, {"job", failed}} {
			if _, err := campaign.RunIfLeader(ctx, b, run.name, run.fn, opt, campaign.WithID("b")); err != nil {
				t.Fatal(err)
			}
		}
		req.End()
		runs := spansNamed(exp, "hustings.run")
		if len(runs) != 3 {
			t.Fatalf("%d run spans, want 3", len(runs))
		}
		for i, want := range []struct {
			outcome string
			status  codes.Code
			token   bool
		}{{"succeeded", codes.Unset, true}, {"skipped", codes.Unset, false}, {"action-failed", codes.Error, true}} {
			s, a := runs[i], attrs(runs[i])
			if a["hustings.outcome"].AsString() != want.outcome || s.Status.Code != want.status {
				t.Errorf("run %d: outcome %q, status %v; want %q, %v", i, a["hustings.outcome"].AsString(), s.Status, want.outcome, want.status)
			}
			if _, has := a["hustings.token"]; has != want.token || a["hustings.candidate.id"].AsString() != "b" || a["hustings.backend"].AsString() != "memory" {
				t.Errorf("run %d: attributes %v; want a token: %v, candidate b, backend memory", i, s.Attributes, want.token)
			}
			if s.Parent.SpanID() != req.SpanContext().SpanID() {
				t.Errorf("run %d's span is not a child of the caller's span", i)
			}
		}
		if inFn.SpanID() != runs[0].SpanContext.SpanID() {
			t.Errorf("fn's context carries span %v, want the run's %v", inFn.SpanID(), runs[0].SpanContext.SpanID())
		}
		if ev := runs[2].Events; len(ev) != 1 || ev[0].Name != "exception" {
			t.Errorf("the failed run's events are %v, want its error recorded", ev)
		}
	})
}

func TestTracerProviderRejectsNil(t *testing.T) {
	if _, err := campaign.New(memory.New(), "x", ops.WithTracerProvider(nil)); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("WithTracerProvider(nil) = %v, want ErrInvalid", err)
	}
	if _, err := campaign.New(memory.New(), "x", ops.WithTracerProvider((*sdktrace.TracerProvider)(nil))); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("WithTracerProvider of a nil *sdktrace.TracerProvider = %v, want ErrInvalid", err)
	}
}
