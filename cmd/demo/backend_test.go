package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

func TestBadBackendURLs(t *testing.T) {
	tests := []struct{ url, names string }{
		{"mysql://localhost:3306", `scheme "mysql"`},
		{"redis://", "no host:port"},
		{"redis://localhost", `"localhost" is not host:port`},
		{"redis://localhost:99999", `port "99999"`},
		{"redis://localhost:6379/x", `database "x"`},
		{"redis://a:1,b:2", "one host:port"},
		{"etcd://a:1,b", "invalid port"},
		{"etcd://a:1,:2", `":2" is not host:port`},
		{"zk://:2181", `":2181" is not host:port`},
		{"%zz", "bad backend URL"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, _, err := openBackend(t.Context(), tt.url)
			if !errors.Is(err, errBackendURL) || !strings.Contains(err.Error(), tt.names) {
				t.Fatalf("openBackend(%q) = %v, want a bad-URL error naming %s", tt.url, err, tt.names)
			}
		})
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
