package nats_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/nats"
	"github.com/hustings/hustings/backends/nats/natstest"
)

// TestWaitOutlastsTheLastWatch: a Backend made with New, whose last
// watch ended and whose connection was closed, leaves no goroutine once
// its Wait returned: the feed that its watches started has stopped.
func TestWaitOutlastsTheLastWatch(t *testing.T) {
	srv := natstest.Start(t)
	newBackend(t, srv.URL()) // makes the bucket
	before := goleak.IgnoreCurrent()
	nc, js := connect(t, srv.URL())
	b, err := nats.New(js)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := b.Watch(ctx, "job")
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	cancel()
	for range ch {
	}
	nc.Close()
	wctx, stop := context.WithTimeout(t.Context(), 30*time.Second)
	defer stop()
	if err := b.Wait(wctx); err != nil {
		t.Fatalf("Wait after the last watch and the connection's close: %v", err)
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("goroutines left after Wait: %v", err)
	}
}
