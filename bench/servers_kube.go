package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/backends/kubernetes/kubetest"
)

// kubeNamespace is the namespace of every Lease the bench writes.
const kubeNamespace = "bench"

// kubeClients makes clientsets of one kubetest server, each on
// connections of its own (as another process's would be) and
// unthrottled (client-go allows 5 requests a second by default, which
// would measure its rate limiter), counting the writes they all send.
type kubeClients struct {
	srv    *kubetest.Server
	writes atomic.Int64 // POST, PUT, PATCH and DELETE requests sent
}

// open returns a new clientset and a function that closes its
// connections. Once crashed (if not nil) is true, its requests hang until
// their context ends, as a process's that stopped would.
func (k *kubeClients) open(crashed *atomic.Bool) (clientset.Interface, func(), error) {
	cfg := k.srv.RESTConfig()
	// A dialer of its own keeps client-go from sharing one cached
	// transport, and so one HTTP/2 connection, among all clients.
	cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countWrites{n: &k.writes, crashed: crashed, next: rt}
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	// hc.CloseIdleConnections would stop at client-go's wrappers.
	closer := func() { utilnet.CloseIdleConnectionsFor(hc.Transport) }
	cs, err := clientset.NewForConfigAndClient(cfg, hc)
	if err != nil {
		closer()
		return nil, nil, err
	}
	return cs, closer, nil
}

// countWrites counts the requests that write; once crashed (if not nil)
// is true, it sends none: each waits for its context to end.
type countWrites struct {
	n       *atomic.Int64
	crashed *atomic.Bool
	next    http.RoundTripper
}

func (c countWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.crashed != nil && c.crashed.Load() {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

// WrappedRoundTripper lets utilnet.CloseIdleConnectionsFor reach the
// transport.
func (c countWrites) WrappedRoundTripper() http.RoundTripper { return c.next }

// startKubernetes starts a kube-apiserver over an embedded etcd (package
// kubetest; the binary is built once per machine by make kube-apiserver)
// and makes the namespace the bench writes in.
func startKubernetes() (*system, error) {
	srv, err := kubetest.StartServer()
	if err != nil {
		return nil, err
	}
	s := &system{name: "kubernetes", maxTTL: 30 * time.Second, closers: []func(){srv.Stop}}
	k := &kubeClients{srv: srv}
	cs, closer, err := k.open(nil)
	if err != nil {
		return s, err
	}
	s.closers = append(s.closers, closer)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubeNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return s, err
	}
	leases := cs.CoordinationV1().Leases(kubeNamespace)
	if _, err := leases.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "bench-read"}}, metav1.CreateOptions{}); err != nil {
		return s, err
	}
	if s.backend, err = kubernetes.New(cs, kubeNamespace); err != nil {
		return s, err
	}
	s.fence = kubeFence(s.backend.(*kubernetes.Backend), leases)
	s.fresh = func() (backends.Backend, func(), error) {
		cs, closer, err := k.open(nil)
		if err != nil {
			return nil, nil, err
		}
		b, err := kubernetes.New(cs, kubeNamespace)
		if err != nil {
			closer()
			return nil, nil, err
		}
		return b, closer, nil
	}
	s.readName, s.read = "GET of a Lease", func(ctx context.Context) error {
		_, err := leases.Get(ctx, "bench-read", metav1.GetOptions{})
		return err
	}
	s.writeName, s.write = "create of a Lease", func(ctx context.Context) error {
		l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-write-%d", seq.Add(1))}}
		_, err := leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	s.requestsName = "writes sent (POST, PUT, PATCH, DELETE; counted by the clients' round tripper)"
	s.requests = func(context.Context) (int64, error) { return k.writes.Load(), nil }
	s.peers = kubePeers(k)
	s.kube = k
	return s, nil
}
