package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/dial"
)

// TestBadBackendURL: the demo passes package dial's errors through (dial
// tests the URLs themselves, and connecting to each server).
func TestBadBackendURL(t *testing.T) {
	_, _, err := openBackend(t.Context(), "redis://localhost")
	if !errors.Is(err, dial.ErrURL) || !strings.Contains(err.Error(), `"localhost" is not host:port`) {
		t.Fatalf("openBackend = %v, want dial's bad-URL error", err)
	}
}

// TestEmbeddedEtcd: etcd-embedded, the demo's own URL, serves locks.
func TestEmbeddedEtcd(t *testing.T) {
	b, closeBackend, err := openBackend(t.Context(), "etcd-embedded")
	if err != nil {
		t.Fatal(err)
	}
	defer closeBackend()
	s, err := b.Open(t.Context(), "demo", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	if _, err := s.Acquire(t.Context(), "demo-url-test", 0); err != nil {
		t.Fatalf("Acquire on embedded etcd: %v", err)
	}
	if h, err := b.Holder(t.Context(), "demo-url-test"); err != nil || h.ID != "demo" {
		t.Fatalf("Holder = %+v, %v; want demo", h, err)
	}
}
