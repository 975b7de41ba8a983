package etcd_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

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

// TestThousandLocksOneRequestPerKeepAlive: a session holding 1,000 locks
// is kept alive by one lease keep-alive request per KeepAlive, with no
// request per lock.
func TestThousandLocksOneRequestPerKeepAlive(t *testing.T) {
	const locks, renewals = 1000, 5
	srv := etcdtest.Start(t)
	counts := &requests{n: make(map[string]int)}
	b := newBackend(t, srv.Client(t, counts.dialOptions()...))
	s := open(t, b, "many", 30*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, locks)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < locks; i += 8 {
				if _, err := s.Acquire(t.Context(), fmt.Sprintf("lock-%d", i), 0); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Acquire: %v", err)
	}

	before := counts.snapshot()
	for range renewals {
		if err := s.KeepAlive(t.Context()); err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
	}
	got := counts.since(before)
	want := map[string]int{"/etcdserverpb.Lease/LeaseKeepAlive": renewals}
	if !maps.Equal(got, want) {
		t.Fatalf("%d KeepAlives of a session with %d locks sent %v, want %v", renewals, locks, got, want)
	}
	for _, i := range []int{0, locks / 2, locks - 1} {
		name := fmt.Sprintf("lock-%d", i)
		if h, err := b.Holder(t.Context(), name); err != nil || h.ID != "many" {
			t.Fatalf("Holder(%q) = %+v, %v; want many", name, h, err)
		}
	}
}
