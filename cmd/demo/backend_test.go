package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// TestBadBackendURL: the demo passes package dial's errors through (dial
// tests the URLs themselves).
func TestBadBackendURL(t *testing.T) {
	_, _, err := openBackend(t.Context(), "redis://localhost")
	if !errors.Is(err, dial.ErrURL) || !strings.Contains(err.Error(), `"localhost" is not host:port`) {
		t.Fatalf("openBackend = %v, want dial's bad-URL error", err)
	}
}

// elect runs one campaign on the backend at url until it is elected.
func elect(t *testing.T, url string) {
	t.Helper()
	b, closeBackend, err := openBackend(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer closeBackend()
	c, err := campaign.New(b, "demo-url-test", campaign.WithTTL(2*campaign.DefaultRetry))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if e := <-c.Events(); e.Kind != events.Elected {
		t.Fatalf("first event on %s: %s", url, e)
	}
	cancel()
	<-done
}

func TestBackendURLsConnect(t *testing.T) {
	srv := redistest.Start(t)
	zks := zktest.Start(t)
	for _, url := range []string{"memory", "redis://" + srv.Addr() + "/0", "etcd-embedded", "zk://" + zks.Addr() + "/demo-test"} {
		t.Run(url, func(t *testing.T) { elect(t, url) })
	}
}
