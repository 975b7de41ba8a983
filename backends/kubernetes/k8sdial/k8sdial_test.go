package k8sdial_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	_ "github.com/hustings/hustings/backends/kubernetes/k8sdial"
	"github.com/hustings/hustings/backends/kubernetes/kubetest"
)

// srv is the one kube-apiserver of the package's tests.
var srv *kubetest.Server

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, &srv)) }

func TestBadK8sURLs(t *testing.T) {
	tests := []struct{ url, names string }{
		{"k8s://host:6443", "no host"},
		{"k8s://u:secret@/", "no host"},
		{"k8s:///x", `no path (got "/x")`},
		{"k8s:opaque", `no // after "k8s:"`},
		{"k8s:///#f", "fragments are not supported"},
		{"k8s:///?context=x", `parameter "context" is not one of kubeconfig, namespace, prefix, qps`},
		{"k8s:///?qps=fast", `qps "fast" is not a number`},
		{"k8s:///?qps=0", `qps "0" is not a number`},
		{"k8s:///?namespace=a&namespace=b", `"namespace" given 2 times`},
		{"k8s:///?namespace=Not_A_Label", `namespace "Not_A_Label" is not a DNS label`},
		{"k8s:///?prefix=" + strings.Repeat("p", 21), "prefix"},
		{"k8s:///?kubeconfig=", "kubeconfig is empty"},
		{"kubernetes:///?x=1", `parameter "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := dial.Parse(tt.url)
			if !errors.Is(err, dial.ErrURL) || !strings.Contains(err.Error(), tt.names) {
				t.Fatalf("Parse(%q) = %v, want a bad-URL error naming %s", tt.url, err, tt.names)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q shows a password", err)
			}
		})
	}
}

func TestOpenWithKubeconfig(t *testing.T) {
	for _, scheme := range []string{"k8s", "KUBERNETES"} {
		raw := scheme + ":///?" + url.Values{"kubeconfig": {srv.Kubeconfig()}, "namespace": {"default"}, "prefix": {"dialtest"}, "qps": {"-1"}}.Encode()
		b, closeFn, err := dial.Open(t.Context(), raw, dial.WithTimeout(30*time.Second))
		if err != nil {
			t.Fatalf("Open(%s) = %v", raw, err)
		}
		s, err := b.Open(t.Context(), "c1-"+strings.ToLower(scheme), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := s.Acquire(t.Context(), "lock-"+strings.ToLower(scheme), 10*time.Second)
		if err != nil || tok == 0 {
			t.Fatalf("Acquire = %v, %v, want a token", tok, err)
		}
		h, err := b.Holder(t.Context(), "lock-"+strings.ToLower(scheme))
		if err != nil || h.ID != "c1-"+strings.ToLower(scheme) {
			t.Fatalf("Holder = %+v, %v, want c1", h, err)
		}
		if err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		closeFn()
	}
}

func TestOpenFailures(t *testing.T) {
	dead := t.TempDir() + "/kubeconfig"
	text, err := os.ReadFile(srv.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	// The same cluster on a port nobody listens on.
	moved := strings.ReplaceAll(string(text), strings.TrimPrefix(srv.URL(), "https://"), "127.0.0.1:1")
	if err := os.WriteFile(dead, []byte(moved), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url  string
		is   error
		want string
	}{
		{"k8s:///?kubeconfig=" + dead, dial.ErrUnreachable, "127.0.0.1:1"},
		{"k8s:///?kubeconfig=/nonexistent/kubeconfig", nil, "nonexistent"},
	}
	for _, tt := range tests {
		_, _, err := dial.Open(t.Context(), tt.url, dial.WithTimeout(2*time.Second))
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%s) = %v, want an error naming %s", tt.url, err, tt.want)
		}
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		if _, _, err := dial.Open(t.Context(), "k8s://"); err == nil || !strings.Contains(err.Error(), "KUBERNETES_SERVICE_HOST") {
			t.Errorf("Open(k8s://) outside a cluster = %v, want the in-cluster config's error", err)
		}
	}
}

// TestCloseEndsConnections: closing what Open returned ends the client's
// connections, also one a request still holds, so that none of the
// client's goroutines outlives it once that request ends.
func TestCloseEndsConnections(t *testing.T) {
	before := goleak.IgnoreCurrent()
	raw := "k8s:///?" + url.Values{"kubeconfig": {srv.Kubeconfig()}, "namespace": {"default"}, "qps": {"-1"}}.Encode()
	b, closeFn, err := dial.Open(t.Context(), raw, dial.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatalf("Open(%s) = %v", raw, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := b.Watch(ctx, "close-ends-connections") // a stream in flight
	if err != nil {
		t.Fatal(err)
	}
	closeFn()
	cancel()
	for range ch {
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("after closing the backend: %v", err)
	}
}
