package nats_test

import (
	"context"
	"errors"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/nats"
	"github.com/hustings/hustings/backends/nats/natstest"
	"github.com/hustings/hustings/events"
)

// newBackend returns a Backend on a connection to url (closed when the
// test ends), its bucket made.
func newBackend(t testing.TB, url string, opts ...nats.Option) *nats.Backend {
	t.Helper()
	js := newJS(t, url)
	if err := nats.CreateBucket(t.Context(), js, opts...); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	b, err := nats.New(js, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// connect returns a connection to url that the test closes itself, and
// its JetStream.
func connect(t testing.TB, url string) (*natsgo.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := natstest.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func newJS(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(natstest.Conn(t, url))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// deleteLock deletes the record of lock name behind its holder's back,
// as an operator's `nats kv del` would.
func deleteLock(t *testing.T, kv jetstream.KeyValue, name string) {
	t.Helper()
	if err := kv.Delete(t.Context(), nats.LockKey(name)); err != nil {
		t.Fatalf("delete lock %q: %v", name, err)
	}
}

// fencedWrite writes a key under the lock's fence.
func fencedWrite(ctx context.Context, b backends.Backend, name string, token events.Token) error {
	_, err := b.(*nats.Backend).Fence(ctx, name, token, "fenced.write", []byte(name))
	return err
}

func bucketKV(t *testing.T, url string) jetstream.KeyValue {
	t.Helper()
	kv, err := newJS(t, url).KeyValue(t.Context(), nats.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func TestContract(t *testing.T) {
	srv := natstest.Start(t)
	newBackend(t, srv.URL()) // makes the bucket
	kv := bucketKV(t, srv.URL())
	backendtest.Run(t, backendtest.Harness{
		New:    func(t *testing.T) backends.Backend { return newBackend(t, srv.URL()) },
		TTL:    time.Second,
		Delete: func(t *testing.T, _ backends.Backend, name string) { deleteLock(t, kv, name) },
		Fence:  fencedWrite,
	})
}

// TestGroups runs the group scenario of the contract suite against a
// real server, in real time.
func TestGroups(t *testing.T) {
	srv := natstest.Start(t)
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.URL()) },
		TTL: time.Second,
	})
}

func TestStorm(t *testing.T) {
	srv := natstest.Start(t)
	backendtest.RunStorm(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.URL()) },
		TTL: time.Second,
	}, 2_000)
}

// TestClosedClient: see backendtest.ClosedClient.
func TestClosedClient(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := connect(t, srv.URL())
	if err := nats.CreateBucket(t.Context(), js); err != nil {
		t.Fatal(err)
	}
	b, err := nats.New(js)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	backendtest.ClosedClient(t, b)
}

func TestNewRejectsBadInput(t *testing.T) {
	nc, err := natsgo.Connect("nats://127.0.0.1:1", natsgo.RetryOnFailedConnect(true), natsgo.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var typedNil jetstream.JetStream = (*fakeJS)(nil)
	tests := []struct {
		name string
		js   jetstream.JetStream
		opts []nats.Option
	}{
		{"nil JetStream", nil, nil},
		{"typed nil JetStream", typedNil, nil},
		{"empty bucket", js, []nats.Option{nats.WithBucket("")}},
		{"bucket with a dot", js, []nats.Option{nats.WithBucket("a.b")}},
		{"no replicas", js, []nats.Option{nats.WithReplicas(0)}},
		{"six replicas", js, []nats.Option{nats.WithReplicas(6)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := nats.New(tt.js, tt.opts...); !errors.Is(err, backends.ErrInvalid) || b != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", b, err)
			}
			if err := nats.CreateBucket(t.Context(), tt.js, tt.opts...); !errors.Is(err, backends.ErrInvalid) {
				t.Fatalf("CreateBucket = %v; want ErrInvalid", err)
			}
		})
	}
}

// TestNewRefusesReplicas: WithReplicas is CreateBucket's; New refuses it
// instead of ignoring it.
func TestNewRefusesReplicas(t *testing.T) {
	srv := natstest.Start(t)
	js := newJS(t, srv.URL())
	if err := nats.CreateBucket(t.Context(), js, nats.WithReplicas(1)); err != nil {
		t.Fatal(err)
	}
	if b, err := nats.New(js, nats.WithReplicas(1)); !errors.Is(err, backends.ErrInvalid) || b != nil {
		t.Fatalf("New with WithReplicas = %v, %v; want ErrInvalid", b, err)
	}
}

// fakeJS is a JetStream of which only a typed nil is used.
type fakeJS struct{ jetstream.JetStream }

// TestContractReplicated runs the contract suite on a bucket of three
// replicas in a cluster of three servers, each backend on a connection to
// another node: writes go through the stream's leader, direct gets may be
// answered by any replica.
func TestContractReplicated(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	js := newJS(t, c.Servers[0].URL())
	if err := nats.CreateBucket(t.Context(), js, nats.WithReplicas(3)); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), nats.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend {
			next++
			b, err := nats.New(newJS(t, c.Servers[next%3].URL()))
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		TTL:    time.Second,
		Delete: func(t *testing.T, _ backends.Backend, name string) { deleteLock(t, kv, name) },
		Fence:  fencedWrite,
	})
}
