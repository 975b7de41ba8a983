package ops

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/validate"
)

// tracerName is the instrumentation scope of the spans.
const tracerName = "github.com/hustings/hustings/ops"

// The attributes of the spans.
const (
	attrName    = attribute.Key("hustings.lock.name")
	attrSlot    = attribute.Key("hustings.lock.slot")
	attrToken   = attribute.Key("hustings.token")
	attrBackend = attribute.Key("hustings.backend")
	attrID      = attribute.Key("hustings.candidate.id")
	attrReason  = attribute.Key("hustings.revoke.reason")
	attrOutcome = attribute.Key("hustings.outcome")
)

// WithTracerProvider makes a campaign, group, session, RunIfLeader or
// Every record OpenTelemetry spans with a tracer of tp:
//
//   - "hustings.term", one per term, from its election to its revocation:
//     attributes hustings.lock.name, hustings.lock.slot, hustings.token,
//     hustings.backend and hustings.candidate.id; ended with
//     hustings.revoke.reason (resigned, lease-expired, session-lost,
//     lock-lost, unreachable, canceled), and an error status unless the
//     term was resigned or canceled. Each keep-alive of its session that
//     fails while the term is in force is a "keep-alive failed" event on
//     it (one that hangs until after the term's end is not: give the
//     backend's client short timeouts to see them). A term's span is a new trace
//     (a term outlives any request), linked to the span of the context
//     given to Run, if any; the term's context carries it, so spans of
//     work bound to the term are its children.
//   - "hustings.run", one per one-shot run, a child of the span of the
//     context given to RunIfLeader: the lock's name, backend and candidate;
//     slot and token once the lock is had; hustings.outcome (succeeded,
//     skipped, action-failed, or error when the run returned an error) and
//     an error status with the error when there is one. fn's context
//     carries it.
//
// Default: no spans. tp is used as is (the program configures and shuts
// down its SDK); a nil tp is refused with campaign.ErrInvalid. Spans start
// and end in the campaign's callbacks: give the SDK a batching span
// processor (sdktrace.WithBatcher), not a synchronous exporter, in
// production.
func WithTracerProvider(tp trace.TracerProvider) campaign.Option {
	return elector.Opt("ops.WithTracerProvider", uses, func(c *elector.Config) {
		if validate.Nil(tp) {
			c.Reject(errors.New("ops: nil trace.TracerProvider"))
			return
		}
		c.Hooks = append(c.Hooks, &traceHook{tracer: tp.Tracer(tracerName), terms: map[*traceTerm]struct{}{}})
	})
}

// traceHook records spans. The hook of a session's Config hears its
// keep-alives and holds the spans of the terms in force on it, which the
// terms' hooks (the same one on a private session) put there.
type traceHook struct {
	tracer trace.Tracer
	mu     sync.Mutex
	terms  map[*traceTerm]struct{} // in force on the session this hook hears
}

func (*traceHook) Campaign(string, string)            {}
func (*traceHook) Try(string, string, elector.Reason) {}

func (k *traceHook) Term(ctx context.Context, e events.Event, backend string, _ time.Duration, session elector.Hooks, _ func() time.Time) elector.TermHook {
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(), trace.WithTimestamp(e.Time),
		trace.WithAttributes(attrName.String(e.Name), attrSlot.Int(e.Slot), attrToken.Int64(int64(e.Token)),
			attrBackend.String(backend), attrID.String(e.Holder)),
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	_, span := k.tracer.Start(ctx, "hustings.term", opts...)
	t := &traceTerm{span: span, on: tracerOf(session)}
	if t.on != nil {
		t.on.mu.Lock()
		t.on.terms[t] = struct{}{}
		t.on.mu.Unlock()
	}
	return t
}

// tracerOf returns the first trace hook of a session's hooks, or nil.
func tracerOf(session elector.Hooks) *traceHook {
	for _, h := range session {
		if k, ok := h.(*traceHook); ok {
			return k
		}
	}
	return nil
}

func (k *traceHook) KeepAlive(_ string, _ time.Duration, err error) {
	if err == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for t := range k.terms {
		t.span.AddEvent("keep-alive failed", trace.WithAttributes(attribute.String("exception.message", err.Error())))
	}
}

func (k *traceHook) Run(ctx context.Context, name, backend, id string) elector.RunHook {
	_, span := k.tracer.Start(ctx, "hustings.run",
		trace.WithAttributes(attrName.String(name), attrBackend.String(backend), attrID.String(id)))
	return traceRun{span}
}

// traceTerm is a term's span.
type traceTerm struct {
	span trace.Span
	on   *traceHook // the session's hook, which holds it while in force; nil if none
}

func (t *traceTerm) Context(ctx context.Context) context.Context {
	return trace.ContextWithSpan(ctx, t.span)
}

func (t *traceTerm) Work() func() { return func() {} }

func (t *traceTerm) Ended(e events.Event) {
	if t.on != nil {
		t.on.mu.Lock()
		delete(t.on.terms, t)
		t.on.mu.Unlock()
	}
	t.span.SetAttributes(attrReason.String(elector.ReasonCode(e.Reason)))
	if e.Reason != nil && !errors.Is(e.Reason, events.ErrResigned) {
		t.span.SetStatus(codes.Error, e.Reason.Error())
	}
	t.span.End(trace.WithTimestamp(e.Time))
}

// traceRun is a one-shot run's span.
type traceRun struct{ span trace.Span }

func (r traceRun) Context(ctx context.Context) context.Context {
	return trace.ContextWithSpan(ctx, r.span)
}

func (r traceRun) Work(slot int, token events.Token, _ time.Time) func() {
	r.span.SetAttributes(attrSlot.Int(slot), attrToken.Int64(int64(token)))
	return func() {}
}

func (r traceRun) Ended(outcome string, err error) {
	if outcome == "" {
		outcome = "error"
	}
	r.span.SetAttributes(attrOutcome.String(outcome))
	if err != nil {
		r.span.RecordError(err)
		r.span.SetStatus(codes.Error, err.Error())
	}
	r.span.End()
}
