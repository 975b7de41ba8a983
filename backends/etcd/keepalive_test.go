package etcd_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
)

// requests counts the requests a client sends, by gRPC method: each unary
// call, and each message sent on a stream.
type requests struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *requests) add(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[method]++
}

// since returns the counts added after before was taken with snapshot.
func (r *requests) since(before map[string]int) map[string]int {
	d := r.snapshot()
	for m, n := range before {
		if d[m] -= n; d[m] == 0 {
			delete(d, m)
		}
	}
	return d
}

func (r *requests) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// dialOptions makes a client count through r. The interceptors run inside
// the etcd client's retries, so every attempt is counted.
func (r *requests) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		r.add(method)
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return countedStream{s, r, method}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

type countedStream struct {
	grpc.ClientStream
	r      *requests
	method string
}

func (s countedStream) SendMsg(m any) error {
	s.r.add(s.method)
	return s.ClientStream.SendMsg(m)
}

// TestKeepAliveRequests: a KeepAlive sends one lease keep-alive request,
// and one transaction per 128 locks held (64 acquired with a lease) to
// confirm them; nothing per lock.
func TestKeepAliveRequests(t *testing.T) {
	const renewals = 3
	srv := etcdtest.Start(t)
	counts := &requests{n: make(map[string]int)}
	b := newBackend(t, srv.Client(t, counts.dialOptions()...))
	plain := open(t, b, "plain", time.Minute)
	guarded := open(t, b, "guarded", time.Minute)
	for _, tc := range []struct {
		s           backends.Session
		lease       time.Duration
		locks, txns int
	}{
		{plain, 0, 0, 0},
		{plain, 0, 1, 1},
		{plain, 0, 128, 1},
		{plain, 0, 129, 2},
		{plain, 0, 1000, 8}, // ⌈1000/128⌉
		{guarded, time.Minute, 64, 1},
		{guarded, time.Minute, 100, 2},
	} {
		acquireMany(t, tc.s, tc.locks, tc.lease)
		before := counts.snapshot()
		for range renewals {
			keepAlive(t, tc.s)
		}
		got := counts.since(before)
		want := map[string]int{"/etcdserverpb.Lease/LeaseKeepAlive": renewals}
		if tc.txns > 0 {
			want["/etcdserverpb.KV/Txn"] = renewals * tc.txns
		}
		if !maps.Equal(got, want) {
			t.Errorf("%d KeepAlives of a session with %d locks (lease %v) sent %v, want %v", renewals, tc.locks, tc.lease, got, want)
		}
		if lost := tc.s.Lost(); lost != nil {
			t.Fatalf("Lost() = %v with every lock in place", lost)
		}
	}
	for _, i := range []int{0, 500, 999} {
		name := fmt.Sprintf("%s-%d", plain.ID(), i)
		if h, err := b.Holder(t.Context(), name); err != nil || h.ID != plain.ID() {
			t.Fatalf("Holder(%q) = %+v, %v; want %s", name, h, err, plain.ID())
		}
	}
}

// TestWatchedKeepAliveReadsNoLock: with the session's loss watch
// following, a KeepAlive of 1,000 locks sends the same few requests as
// one of no lock: one lease keep-alive, one read of the revision and a
// progress request or two on the watch's stream; no transaction.
func TestWatchedKeepAliveReadsNoLock(t *testing.T) {
	const renewals = 3
	srv := etcdtest.Start(t)
	counts := &requests{n: make(map[string]int)}
	b := newBackend(t, srv.Client(t, counts.dialOptions()...))
	s := open(t, b, "watched", time.Minute)
	s.Losses()
	acquireMany(t, s, 1000, 0)
	keepAlive(t, s) // the watch catches up with the acquires
	// A KeepAlive whose progress answer takes longer than progressWait
	// asks again, then reads the locks, as it should: on a busy machine a
	// round may do so, so up to five rounds are tried; one must be lean.
	lean := func(got map[string]int) bool {
		return got["/etcdserverpb.KV/Txn"] == 0 && got["/etcdserverpb.Lease/LeaseKeepAlive"] == renewals &&
			got["/etcdserverpb.KV/Range"] == renewals && got["/etcdserverpb.Watch/Watch"] <= 2*renewals
	}
	var got map[string]int
	for range 5 {
		before := counts.snapshot()
		for range renewals {
			keepAlive(t, s)
		}
		if got = counts.since(before); lean(got) {
			break
		}
	}
	if !lean(got) {
		t.Errorf("%d KeepAlives of a watched session with 1,000 locks sent %v, want %d keep-alives, %d ranges, "+
			"at most %d watch messages and no Txn", renewals, got, renewals, renewals, 2*renewals)
	}
	if lost := s.Lost(); lost != nil {
		t.Fatalf("Lost() = %v with every lock in place", lost)
	}
}

// TestKeepAliveOneRoundTrip: on a link with 50 ms of latency each way, a
// KeepAlive of a session holding 1,000 locks sends its nine requests at
// once: it takes about one round trip, and well under the nine it would
// take one after another (the bound, 5, leaves room for a busy machine). The link is slow from
// the start, as a real one is: gRPC sizes its flow-control windows from
// the round trips it measures, and until it has, the first KeepAlive's
// 90 KB of transactions wait one round trip more for window.
func TestKeepAliveOneRoundTrip(t *testing.T) {
	const rtt = 100 * time.Millisecond
	link, cli := etcdtest.Start(t).Linked(t)
	t.Cleanup(link.Heal) // before the link closes: toxiproxy leaks an active latency toxic's goroutine
	link.Latency(rtt/2, 0)
	s := open(t, newBackend(t, cli), "many", time.Minute)
	acquireMany(t, s, 1000, 0)
	for range 3 {
		keepAlive(t, s) // let gRPC size its windows
	}
	best := time.Hour
	for range 3 {
		start := time.Now()
		keepAlive(t, s)
		best = min(best, time.Since(start))
	}
	t.Logf("KeepAlive of 1,000 locks over a %v round trip: %v at best", rtt, best)
	if best > 5*rtt {
		t.Fatalf("KeepAlive of 1,000 locks took %v at best, want under %v (five round trips); nine in a row would take %v", best, 5*rtt, 9*rtt)
	}
}

// acquireMany makes s hold n locks named after its ID, s.ID()+"-0" to
// s.ID()+"-"+(n-1), with lease; those it holds already stay as they are.
func acquireMany(t *testing.T, s backends.Session, n int, lease time.Duration) {
	t.Helper()
	const workers = 100 // enough to be quick on a slow link
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if _, err := s.Acquire(t.Context(), fmt.Sprintf("%s-%d", s.ID(), i), lease); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%s: Acquire: %v", s.ID(), err)
	}
}
