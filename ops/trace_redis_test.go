package ops_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"

	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/ops"
)

// On a real Redis server that dies, the term's span records the failed
// keep-alives as events and ends with the campaign's verdict:
// unreachable, an error.
func TestTraceOfATermWhoseRedisDies(t *testing.T) {
	srv := redistest.Start(t)
	// A client that reports a dead server at once rather than retry until
	// the keep-alive's deadline, which is past the term's.
	o := redistest.Options(srv.Addr())
	o.MaxRetries, o.DialerRetries = -1, 1
	client := goredis.NewClient(o)
	defer client.Close()
	b, err := redis.New(client)
	if err != nil {
		t.Fatal(err)
	}
	tp, exp := newTracing(t)
	const ttl = 3 * time.Second
	c, err := campaign.New(b, "job", campaign.WithID("a"), campaign.WithTTL(ttl), campaign.WithRetry(ttl/4), ops.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	elected := next(t, c.Events(), events.Elected, time.Minute)
	srv.Kill()
	revoked := next(t, c.Events(), events.Revoked, time.Minute)
	if revoked.Token != elected.Token {
		t.Fatalf("revoked term %d, want %d", revoked.Token, elected.Token)
	}

	terms := spansNamed(exp, "hustings.term")
	if len(terms) != 1 {
		t.Fatalf("%d term spans ended, want 1", len(terms))
	}
	s, a := terms[0], attrs(terms[0])
	if a["hustings.backend"].AsString() != "redis" || a["hustings.token"].AsInt64() != int64(elected.Token) || a["hustings.lock.name"].AsString() != "job" {
		t.Errorf("the term's span has attributes %v; want redis, token %d, job", s.Attributes, elected.Token)
	}
	if got := a["hustings.revoke.reason"].AsString(); got != "unreachable" || s.Status.Code != codes.Error {
		t.Errorf("the term's span ended with reason %q, status %v; want unreachable, an error (revoked: %v)", got, s.Status, revoked.Reason)
	}
	failures := 0
	for _, ev := range s.Events {
		if ev.Name == "keep-alive failed" {
			failures++
		}
	}
	if failures == 0 {
		t.Errorf("the term's span has events %v; want the failed keep-alives", s.Events)
	}
	if !s.EndTime.Equal(revoked.Time) {
		t.Errorf("the span ended at %v, the term at %v", s.EndTime, revoked.Time)
	}
}

// next returns the first event of kind on ch, failing the test after
// limit.
func next(t *testing.T, ch <-chan events.Event, kind events.Kind, limit time.Duration) events.Event {
	t.Helper()
	timeout := time.After(limit)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("the events closed before a %v", kind)
			}
			if e.Kind == kind {
				return e
			}
		case <-timeout:
			t.Fatalf("no %v within %v", kind, limit)
		}
	}
}
