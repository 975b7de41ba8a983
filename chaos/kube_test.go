package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	_ "github.com/hustings/hustings/backends/dial/all" // the schemes of the other servers
	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/backends/kubernetes/kubetest"
)

// kubeScheme is the scheme of the URLs by which the harness and the nodes
// reach a kubetest server. The k8s:// of package k8sdial does not serve
// here: it reads a kubeconfig (the suite would write one per link) and
// keeps client-go's default rate limit (5 requests a second, burst 10),
// behind which a node's keep-alive would queue; so the suite reads its
// own:
//
//	kubetest://host:port/namespace?token=T&ca=PATH
//
// host:port is the apiserver's (or a link's: its certificate names
// 127.0.0.1, whatever the port), T its bearer token, PATH its CA file.
const (
	kubeScheme    = "kubetest"
	kubeNamespace = "chaos"
)

// open opens the backend at rawURL (a server's url): a kubetest URL, or
// any URL of package dial. The function it returns closes the client.
func open(ctx context.Context, rawURL string) (backends.Backend, func(), error) {
	if !strings.HasPrefix(rawURL, kubeScheme+"://") {
		return dial.Open(ctx, rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	q := u.Query()
	cfg := &rest.Config{
		Host:            "https://" + u.Host,
		BearerToken:     q.Get("token"),
		TLSClientConfig: rest.TLSClientConfig{CAFile: q.Get("ca")},
		// client-go allows 5 requests a second by default, which would
		// queue a node's keep-alive behind its acquires.
		QPS: -1,
	}
	cs, closeClient, err := newClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	b, err := kubernetes.New(cs, strings.Trim(u.Path, "/"))
	if err != nil {
		closeClient()
		return nil, nil, err
	}
	return b, closeClient, nil
}

// newClient returns a clientset for cfg on an HTTP client of its own, and
// a function that closes the client's idle connections.
func newClient(cfg *rest.Config) (clientset.Interface, func(), error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	cs, err := clientset.NewForConfigAndClient(cfg, hc)
	if err != nil {
		closeIdle(hc)
		return nil, nil, err
	}
	return cs, func() { closeIdle(hc) }, nil
}

// closeIdle closes hc's idle connections. hc.CloseIdleConnections does
// nothing for a client of rest.HTTPClientFor: client-go's wrapping round
// trippers do not pass the call on (their connections' read loops were
// left running), so it is made through the wrappers.
func closeIdle(hc *http.Client) { utilnet.CloseIdleConnectionsFor(hc.Transport) }

// kubeURL returns the kubetest URL of s's namespace kubeNamespace through
// addr.
func kubeURL(s *kubetest.Server, addr string) string {
	q := url.Values{"token": {s.Token()}, "ca": {s.CAFile()}}
	return (&url.URL{Scheme: kubeScheme, Host: addr, Path: "/" + kubeNamespace, RawQuery: q.Encode()}).String()
}

// startKubernetes runs a kube-apiserver (package kubetest) over an etcd
// embedded in the test process. A restart is, in turn, a crash of the
// apiserver (SIGKILL; up is a new one on the same port and etcd) and an
// outage of its etcd (the apiserver runs on, failing or holding requests,
// and reconnects when it is back). A tamper deletes the lock's Lease, as
// an operator's kubectl delete would.
func startKubernetes(t *testing.T) server {
	s := kubetest.Start(t)
	addr := strings.TrimPrefix(s.URL(), "https://")
	cs := kubeClient(t, s)
	lb, err := kubernetes.New(cs, kubeNamespace) // for LockLease
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubeNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", kubeNamespace, err)
	}
	downs := 0
	etcdDown := false
	return server{
		addr: addr,
		url:  func(a string) string { return kubeURL(s, a) },
		down: func() {
			downs++
			if etcdDown = downs%2 == 0; etcdDown {
				s.Etcd().Stop()
				return
			}
			s.Kill()
		},
		up: func() error {
			if etcdDown {
				return s.Etcd().Restart()
			}
			return s.Restart()
		},
		tamper: func(ctx context.Context, name string) error {
			// The holder's session watches its locks: it learns of the
			// delete at once.
			lease := lb.LockLease(name)
			if err := cs.CoordinationV1().Leases(kubeNamespace).Delete(ctx, lease, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("delete Lease %s of %s: %w", lease, name, err)
			}
			return nil
		},
	}
}

// kubeClient returns a clientset straight to s, its connections closed
// when the test ends.
func kubeClient(t *testing.T, s *kubetest.Server) clientset.Interface {
	cs, closeClient, err := newClient(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeClient)
	return cs
}
