package kubetest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/kubernetes/kubetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	namespace = "hustings"
	leases    = "/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases"
)

// lease is the part of a coordination.k8s.io/v1 Lease the tests use.
type lease struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   metadata `json:"metadata"`
	Spec       struct {
		HolderIdentity       string `json:"holderIdentity,omitempty"`
		LeaseDurationSeconds int    `json:"leaseDurationSeconds,omitempty"`
	} `json:"spec"`
}

type metadata struct {
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// TestLeaseLifecycle: through plain HTTPS and JSON, a Lease is created,
// watched, updated on its resourceVersion, refused with 409 Conflict on a
// stale one, and the watch sees the update.
func TestLeaseLifecycle(t *testing.T) {
	srv := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": metadata{Name: namespace}}
	call(ctx, t, srv, http.MethodPost, "/api/v1/namespaces", ns, http.StatusCreated, nil)
	var created lease
	call(ctx, t, srv, http.MethodPost, leases, newLease("a", 15), http.StatusCreated, &created)
	events := watch(ctx, t, srv, created.Metadata.ResourceVersion)

	renewed := created
	renewed.Spec.HolderIdentity = "b"
	var updated lease
	call(ctx, t, srv, http.MethodPut, leases+"/a", renewed, http.StatusOK, &updated)
	if updated.Spec.HolderIdentity != "b" || updated.Metadata.ResourceVersion == created.Metadata.ResourceVersion {
		t.Fatalf("updated lease %+v: want holder b and a new resourceVersion", updated)
	}
	stale := created
	stale.Spec.HolderIdentity = "c"
	var refused status
	call(ctx, t, srv, http.MethodPut, leases+"/a", stale, http.StatusConflict, &refused)
	if refused.Reason != "Conflict" {
		t.Fatalf("update on stale resourceVersion %s: reason %q, want Conflict", created.Metadata.ResourceVersion, refused.Reason)
	}

	for ev := range events {
		if ev.Type == "MODIFIED" && ev.Object.Metadata.ResourceVersion == updated.Metadata.ResourceVersion {
			if ev.Object.Spec.HolderIdentity != "b" {
				t.Fatalf("watched update: holder %q, want b", ev.Object.Spec.HolderIdentity)
			}
			return
		}
		t.Logf("watch event %s at %s", ev.Type, ev.Object.Metadata.ResourceVersion)
	}
	t.Fatalf("watch ended without the update to resourceVersion %s: %v", updated.Metadata.ResourceVersion, ctx.Err())
}

// TestKillRestart: a killed apiserver answers nothing; restarted, on
// the same URL and token, it serves the Leases written before, at the
// same resourceVersion, and again after its etcd was stopped and the
// restart started that too.
func TestKillRestart(t *testing.T) {
	srv := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": metadata{Name: namespace}}
	call(ctx, t, srv, http.MethodPost, "/api/v1/namespaces", ns, http.StatusCreated, nil)
	var created lease
	call(ctx, t, srv, http.MethodPost, leases, newLease("a", 10), http.StatusCreated, &created)
	url := srv.URL()

	srv.Kill()
	srv.HTTPClient().CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+leases+"/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := srv.HTTPClient().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("GET from a killed apiserver: %s, want an error", resp.Status)
	}
	for _, stopEtcd := range []bool{false, true} {
		if stopEtcd {
			srv.Etcd().Stop()
		}
		if err := srv.Restart(); err != nil {
			t.Fatalf("restart (etcd stopped: %v): %v", stopEtcd, err)
		}
		if srv.URL() != url {
			t.Fatalf("restarted on %s, was %s", srv.URL(), url)
		}
		var got lease
		call(ctx, t, srv, http.MethodGet, leases+"/a", nil, http.StatusOK, &got)
		if got.Metadata.ResourceVersion != created.Metadata.ResourceVersion {
			t.Fatalf("after restart (etcd stopped: %v): Lease at %s, was %s", stopEtcd, got.Metadata.ResourceVersion, created.Metadata.ResourceVersion)
		}
	}
}

// TestTokenRequired: a request without the bearer token is refused; the
// kubeconfig names the server and carries the token.
func TestTokenRequired(t *testing.T) {
	srv := kubetest.Start(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+leases, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := tokenless(t, srv)
	defer plain.CloseIdleConnections()
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET without a token: %s, want 401", resp.Status)
	}
	kc, err := os.ReadFile(srv.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), srv.URL()) || !strings.Contains(string(kc), srv.Token()) {
		t.Fatalf("kubeconfig lacks the URL or the token:\n%s", kc)
	}
}

// TestVersionIsTheToolsModules: the version the tests look for is the
// one tools/kube-apiserver builds.
func TestVersionIsTheToolsModules(t *testing.T) {
	mod, err := os.ReadFile("../../../tools/kube-apiserver/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/kubernetes" {
			if f[1] != kubetest.Version {
				t.Fatalf("tools/kube-apiserver requires k8s.io/kubernetes %s, kubetest.Version is %s", f[1], kubetest.Version)
			}
			return
		}
	}
	t.Fatal("tools/kube-apiserver/go.mod requires no k8s.io/kubernetes")
}

// tokenless returns a client that trusts the server's CAFile and sends no
// token.
func tokenless(t *testing.T, srv *kubetest.Server) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(srv.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("no certificate in %s", srv.CAFile())
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Transport: tr}
}

func newLease(name string, seconds int) lease {
	l := lease{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Metadata: metadata{Name: name}}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = name, seconds
	return l
}

// status is the part of a metav1.Status, the answer to a failed request,
// the tests use.
type status struct {
	Reason string `json:"reason"`
}

// call sends body as JSON, fails t unless the answer's status code is
// want, and decodes the answer into out if it is not nil.
func call(ctx context.Context, t *testing.T, srv *kubetest.Server, method, path string, body any, want int, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, method, srv.URL()+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s, want %d: %s", method, path, resp.Status, want, answer)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, answer)
		}
	}
}

type event struct {
	Type   string `json:"type"`
	Object lease  `json:"object"`
}

// watch opens a watch of the namespace's Leases from resourceVersion rv
// and returns its events; the channel is closed when the watch ends. The
// watch ends with ctx or the test.
func watch(ctx context.Context, t *testing.T, srv *kubetest.Server, rv string) <-chan event {
	t.Helper()
	url := fmt.Sprintf("%s%s?watch=1&resourceVersion=%s", srv.URL(), leases, rv)
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("watch: %s", resp.Status)
	}
	ch := make(chan event)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev event
			if err := dec.Decode(&ev); err != nil {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}
