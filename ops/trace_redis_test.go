package ops_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"

	"github.com/hustings/hustings/backends/backendtest"
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
	t.Cleanup(func() { _ = client.Close() }) // after the campaign's (cleanups run last first)
	b, err := redis.New(client)
	if err != nil {
		t.Fatal(err)
	}
	tp, exp := newTracing(t)
	const ttl = 3 * time.Second
	r := backendtest.Record(t, b, "job", "a", campaign.WithTTL(ttl), campaign.WithRetry(ttl/4), ops.WithTracerProvider(tp))

	elected := r.WaitFor(t, events.Elected, time.Minute)
	srv.Kill()
	revoked := r.WaitFor(t, events.Revoked, time.Minute)
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
