package dynamodb_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/dynamodb"
	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
	"github.com/hustings/hustings/internal/testserver"
)

// errLost is the error a lossy client returns for a request the server
// applied: its answer lost, as a 500 (which the SDK retries).
type errLost struct{}

func (errLost) Error() string       { return "injected: the answer was lost (HTTP 500)" }
func (errLost) HTTPStatusCode() int { return 500 }

// lossy is a client of the server whose next request of a kind (armed)
// is sent, applied by the server, and answered with errLost: a write
// that may have succeeded, as a timeout or a 5xx leaves it
// (cirello-io/dynamolock #280). The SDK retries it up to attempts times.
type lossy struct {
	armed atomic.Pointer[func(any) bool] // which request to lose the answer of
	lost  atomic.Int32                   // answers lost

	onLoss func() // called as an answer is lost, if set
	drop   bool   // the armed request is not sent at all (it will "land late")
}

type loseKey struct{}

func (l *lossy) client(srv *dynamotest.Server, attempts int) *sdk.Client {
	return srv.Client(func(o *sdk.Options) {
		o.RetryMaxAttempts = attempts
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			if err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("lose-mark",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if f := l.armed.Load(); f != nil && (*f)(in.Parameters) && l.armed.CompareAndSwap(f, nil) {
						ctx = context.WithValue(ctx, loseKey{}, new(atomic.Bool))
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.Before); err != nil {
				return err
			}
			return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("lose",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					once, marked := ctx.Value(loseKey{}).(*atomic.Bool)
					if marked && l.drop && once.CompareAndSwap(false, true) {
						l.lost.Add(1)
						return middleware.FinalizeOutput{}, middleware.Metadata{}, errLost{}
					}
					out, md, err := next.HandleFinalize(ctx, in)
					if marked && err == nil && once.CompareAndSwap(false, true) {
						l.lost.Add(1)
						if l.onLoss != nil {
							l.onLoss()
						}
						return middleware.FinalizeOutput{}, md, errLost{}
					}
					return out, md, err
				}), middleware.After) // inside the retry loop: one attempt's answer
		})
	})
}

func (l *lossy) arm(f func(any) bool) { l.armed.Store(&f) }

func lockPut(p any) bool {
	in, ok := p.(*sdk.PutItemInput)
	return ok && strings.HasPrefix(in.Item["pk"].(*types.AttributeValueMemberS).Value, "lock#")
}

func sessionRenew(p any) bool {
	in, ok := p.(*sdk.UpdateItemInput)
	return ok && strings.HasPrefix(in.Key["pk"].(*types.AttributeValueMemberS).Value, "session#")
}

func lockDelete(p any) bool {
	in, ok := p.(*sdk.DeleteItemInput)
	return ok && strings.HasPrefix(in.Key["pk"].(*types.AttributeValueMemberS).Value, "lock#")
}

// TestAmbiguousWritesAreReadBack: a take, a renewal and a release whose
// answers are lost after the server applied them are read back and
// adopted, with no SDK retry (the read back finds the version written)
// and with one (the retry fails its condition, since the first attempt
// was applied: dynamolock #280). The session keeps its lock, its token
// and its life; the release frees the lock.
func TestAmbiguousWritesAreReadBack(t *testing.T) {
	srv := dynamotest.Start(t)
	for _, attempts := range []int{1, 3} {
		l := &lossy{}
		b := newBackend(t, l.client(srv, attempts))
		other := newBackend(t, srv.Client())
		name := "ambiguous-" + string(rune('0'+attempts))
		s := backendtest.Open(t, b, "a", 5*time.Second)

		l.arm(lockPut)
		tok, err := s.Acquire(t.Context(), name, 0)
		if err != nil || l.lost.Load() != 1 {
			t.Fatalf("attempts %d: Acquire with its answer lost = %d, %v (answers lost: %d); want the take adopted", attempts, tok, err, l.lost.Load())
		}
		if h, err := other.Holder(t.Context(), name); err != nil || h.ID != "a" || h.Token != tok {
			t.Fatalf("attempts %d: Holder = %+v, %v; want a under %d", attempts, h, err, tok)
		}

		l.arm(sessionRenew)
		if err := s.KeepAlive(t.Context()); err != nil || l.lost.Load() != 2 {
			t.Fatalf("attempts %d: KeepAlive with its answer lost = %v (answers lost: %d); want the renewal adopted", attempts, err, l.lost.Load())
		}
		for range 3 {
			if err := s.KeepAlive(t.Context()); err != nil {
				t.Fatalf("attempts %d: KeepAlive after the adopted renewal: %v", attempts, err)
			}
		}
		if lost := s.Lost(); lost != nil {
			t.Fatalf("attempts %d: Lost() = %v, want nil", attempts, lost)
		}
		if again, err := s.Acquire(t.Context(), name, 0); err != nil || again != tok {
			t.Fatalf("attempts %d: Acquire again = %d, %v; want %d", attempts, again, err, tok)
		}

		l.arm(lockDelete)
		if err := s.Release(t.Context(), name, tok, 0); err != nil || l.lost.Load() != 3 {
			t.Fatalf("attempts %d: Release with its answer lost = %v (answers lost: %d); want nil", attempts, err, l.lost.Load())
		}
		if h, err := other.Holder(t.Context(), name); err != nil || h.ID != "" {
			t.Fatalf("attempts %d: Holder after the release = %+v, %v; want none", attempts, h, err)
		}
	}
}

// TestLostAnswerOfATakeIsAdoptedLater: a take whose answer is lost and
// which cannot read back (the caller's context ended meanwhile) is an
// error; the item it wrote names the session, and the next Acquire
// adopts it, token and all, rather than waiting for it to expire.
func TestLostAnswerOfATakeIsAdoptedLater(t *testing.T) {
	srv := dynamotest.Start(t)
	l := &lossy{}
	b := newBackend(t, l.client(srv, 1))
	s := backendtest.Open(t, b, "a", 5*time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	l.onLoss = cancel
	l.arm(lockPut)
	if _, err := s.Acquire(ctx, "later", 0); err == nil || l.lost.Load() != 1 {
		t.Fatalf("Acquire whose answer was lost, its context ended = %v (answers lost: %d); want an error", err, l.lost.Load())
	}
	tok, err := s.Acquire(t.Context(), "later", 0)
	if err != nil {
		t.Fatalf("Acquire after a take whose answer was lost: %v", err)
	}
	other := newBackend(t, srv.Client())
	if h, err := other.Holder(t.Context(), "later"); err != nil || h.ID != "a" || h.Token != tok {
		t.Fatalf("Holder = %+v, %v; want a under %d", h, err, tok)
	}
}

// TestLateRenewalIsNotAdopted: a renewal whose answer is lost and which
// the read back finds not applied, then lands late (made here by a write
// of the next version), is not adopted by the next KeepAlive, which
// finds that version: it writes a fresh renewal on it, since the late
// write started before the KeepAlive that found it and other clients may
// count from it.
func TestLateRenewalIsNotAdopted(t *testing.T) {
	srv := dynamotest.Start(t)
	l := &lossy{drop: true}
	b := newBackend(t, l.client(srv, 1))
	s := backendtest.Open(t, b, "late", 5*time.Second)
	l.arm(sessionRenew)
	if err := s.KeepAlive(t.Context()); err == nil || l.lost.Load() != 1 {
		t.Fatalf("KeepAlive whose request was dropped = %v (lost: %d); want an error", err, l.lost.Load())
	}
	c := srv.Client()
	sid, ver := sessionOf(t, c, "late")
	if ver != 1 {
		t.Fatalf("session item at version %d after a dropped renewal, want 1", ver)
	}
	if _, err := c.UpdateItem(t.Context(), &sdk.UpdateItemInput{ // the dropped renewal lands late
		TableName:                 aws.String(dynamodb.DefaultTable),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "session#" + sid}, "sk": &types.AttributeValueMemberS{Value: "-"}},
		UpdateExpression:          aws.String("SET ver = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "2"}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive after the late landing: %v", err)
	}
	if _, ver := sessionOf(t, c, "late"); ver != 3 {
		t.Fatalf("session item at version %d after the KeepAlive, want 3 (a fresh renewal over the late one)", ver)
	}
}

// sessionOf returns the ID and version of candidate cand's session item.
func sessionOf(t *testing.T, c *sdk.Client, cand string) (string, int) {
	t.Helper()
	out, err := c.Scan(t.Context(), &sdk.ScanInput{
		TableName:                 aws.String(dynamodb.DefaultTable),
		FilterExpression:          aws.String("begins_with(pk, :s) AND cand = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "session#"}, ":c": &types.AttributeValueMemberS{Value: cand}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("Scan for %s's session: %v, %d items; want 1", cand, err, len(out.Items))
	}
	it := out.Items[0]
	v, _ := strconv.Atoi(it["ver"].(*types.AttributeValueMemberN).Value)
	return strings.TrimPrefix(it["pk"].(*types.AttributeValueMemberS).Value, "session#"), v
}

// Fault-test timing: short TTLs, generous waits.
const (
	faultTTL    = 3 * time.Second
	faultMargin = time.Second
	faultWait   = 30 * time.Second
)

func faultOpts() []campaign.Option {
	return []campaign.Option{
		campaign.WithTTL(faultTTL),
		campaign.WithSafetyMargin(faultMargin),
		campaign.WithRetry(200 * time.Millisecond),
		campaign.WithGrace(time.Second),
	}
}

// timeoutClient gives every request a timeout, as a caller's client
// should: a blackholed link then fails requests instead of hanging them.
func timeoutClient(o *sdk.Options) { o.HTTPClient = &http.Client{Timeout: time.Second} }

// TestFaults runs the fault scenarios one after another on one
// persistent server and one lock name, and checks that the fencing token
// never went backwards across all of them, the crashes included.
func TestFaults(t *testing.T) {
	srv := dynamotest.Start(t, dynamotest.Persistent())
	var elected []events.Event
	for _, f := range []struct {
		name string
		run  func(t *testing.T, srv *dynamotest.Server) []*backendtest.Recorder
	}{
		{"BlackholedLeader", blackholedLeader},
		{"ServerRestart", serverRestart},
		{"Latency", latency},
	} {
		t.Run(f.name, func(t *testing.T) {
			ks := f.run(t, srv)
			backendtest.CheckPairs(t, ks...)
			logTerms(t, ks...)
			for _, k := range ks {
				k.Stop()
				elected = append(elected, k.Elected()...)
			}
		})
	}
	backendtest.CheckTokens(t, elected)
}

const faultLock = "faults"

// blackholedLeader: the leader's link goes dark (a pause, as the
// server's other clients see it: its session item stops changing). It
// publishes Revoked at its local deadline; a candidate on a direct link,
// which judges the lease on its own clock from when it first saw the
// session's last version, takes the lock after that, with a larger
// token. When the link heals, the old leader's renewal fails (its
// session item was deleted) and it campaigns again, and wins once the
// other stops.
func blackholedLeader(t *testing.T, srv *dynamotest.Server) []*backendtest.Recorder {
	link := faultlink.NewLink(t, srv.Addr())
	viaLink := newBackend(t, dynamotest.NewClient("http://"+link.Addr(), timeoutClient))
	direct := newBackend(t, srv.Client(timeoutClient))
	a := backendtest.Record(t, viaLink, faultLock, "a", faultOpts()...)
	first := a.Expect(t, events.Elected, faultWait)
	b := backendtest.Record(t, direct, faultLock, "b", faultOpts()...)
	if h, err := direct.Holder(t.Context(), faultLock); err != nil || h.ID != "a" {
		t.Fatalf("Holder before the blackhole = %+v, %v; want a", h, err)
	}

	link.Blackhole()
	revoked := a.Expect(t, events.Revoked, faultTTL+faultWait)
	if !errors.Is(revoked.Reason, events.ErrLeaseExpired) {
		t.Errorf("a revoked with reason %v, want unreachable or lease expired", revoked.Reason)
	}
	second := b.Expect(t, events.Elected, faultWait)
	if !second.Time.After(revoked.Time) || second.Token <= first.Token {
		t.Fatalf("b elected at %v under %d; want after a's Revoked at %v, above %d", second.Time, second.Token, revoked.Time, first.Token)
	}

	link.Heal()
	b.Stop()
	third := a.Expect(t, events.Elected, faultWait)
	if third.Token <= second.Token {
		t.Fatalf("a's token after the heal = %d, want > %d", third.Token, second.Token)
	}
	return []*backendtest.Recorder{a, b}
}

// serverRestart: the server crashes (SIGKILL) and comes back (its
// tables persisted) after an outage longer than the TTL, then crashes
// and comes back at once. Leases are the clients': after the long outage
// the sessions have expired on their owners' clocks and the campaigns
// open new ones; the counter survives, so tokens go on increasing.
func serverRestart(t *testing.T, srv *dynamotest.Server) []*backendtest.Recorder {
	a := backendtest.Record(t, newBackend(t, srv.Client(timeoutClient)), faultLock, "a", faultOpts()...)
	b := backendtest.Record(t, newBackend(t, srv.Client(timeoutClient)), faultLock, "b", faultOpts()...)
	leader, first := electedOf(t, a, b)

	srv.Kill()
	leader.Expect(t, events.Revoked, faultTTL+faultWait)
	// Kept as a sleep: the outage lasting longer than the TTL (the
	// sessions expire on their owners' clocks) is what is tested; nothing
	// happens in it to wait on, and nobody may be elected.
	time.Sleep(faultTTL)
	for _, k := range []*backendtest.Recorder{a, b} {
		if s := k.C.State(); s.Leader {
			t.Fatalf("%s believes it leads while the server is down", k.ID)
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	_, second := electedOf(t, a, b)
	if second.Token <= first.Token {
		t.Fatalf("token after the restart = %d, want > %d", second.Token, first.Token)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testserver.Eventually(t, "a leader after the quick restart", faultWait, func() bool {
		return a.C.State().Leader || b.C.State().Leader
	})
	return []*backendtest.Recorder{a, b}
}

func electedOf(t *testing.T, ks ...*backendtest.Recorder) (*backendtest.Recorder, events.Event) {
	t.Helper()
	var got *backendtest.Recorder
	testserver.Eventually(t, "somebody elected", faultWait, func() bool {
		for _, k := range ks {
			if k.Pending() {
				got = k
				return true
			}
		}
		return false
	})
	return got, got.Expect(t, events.Elected, 0)
}

// latency: 100 ms added each way on the leader's link, with a TTL of
// seconds, revokes nothing, and the other candidate, which sees the
// leader's session change at every renewal, never takes over.
func latency(t *testing.T, srv *dynamotest.Server) []*backendtest.Recorder {
	link := faultlink.NewLink(t, srv.Addr())
	link.Latency(100*time.Millisecond, 0)
	opts := []campaign.Option{campaign.WithTTL(3 * time.Second), campaign.WithRetry(200 * time.Millisecond)}
	a := backendtest.Record(t, newBackend(t, dynamotest.NewClient("http://"+link.Addr())), faultLock, "a", opts...)
	first := a.Expect(t, events.Elected, faultWait)
	b := backendtest.Record(t, newBackend(t, srv.Client()), faultLock, "b", opts...)
	a.Quiet(t, 5*time.Second)
	b.Quiet(t, 0)
	if s := a.C.State(); !s.Leader || s.Token != first.Token {
		t.Fatalf("a's state after 5s of latency = %+v, want leading with token %d", s, first.Token)
	}
	return []*backendtest.Recorder{a, b}
}

func logTerms(t *testing.T, ks ...*backendtest.Recorder) {
	for _, k := range ks {
		for _, e := range k.Events() {
			t.Logf("%s %s %s", e.Time.Format("15:04:05.000"), k.ID, e)
		}
	}
}
