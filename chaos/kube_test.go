package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/backends/kubernetes/kubetest"
	"github.com/hustings/hustings/events"
)

// kubeNamespace is where the suite's Leases live.
const kubeNamespace = "chaos"

// kubeconfigs writes the kubeconfigs by which the harness and the nodes
// reach a kubetest server through a link, one per link address.
type kubeconfigs struct {
	t       *testing.T
	s       *kubetest.Server
	dir     string
	mu      sync.Mutex
	written map[string]string // link address → kubeconfig path
}

// url returns the k8s:// URL (package k8sdial) of the namespace
// kubeNamespace through addr, a link's (the server's certificate names
// 127.0.0.1, whatever the port): its kubeconfig is the server's with
// addr for the server's address. The client is unthrottled (qps -1):
// client-go's default limit, 5 requests a second, would queue a node's
// keep-alive behind its acquires.
func (k *kubeconfigs) url(addr string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	path, ok := k.written[addr]
	if !ok {
		path = filepath.Join(k.dir, fmt.Sprintf("kubeconfig-%d", len(k.written)))
		text, err := os.ReadFile(k.s.Kubeconfig())
		if err == nil {
			text = []byte(strings.ReplaceAll(string(text), strings.TrimPrefix(k.s.URL(), "https://"), addr))
			err = os.WriteFile(path, text, 0o600)
		}
		if err != nil {
			k.t.Errorf("kubeconfig for %s: %v", addr, err) // the nodes that open it fail too
		}
		k.written[addr] = path
	}
	q := url.Values{"kubeconfig": {path}, "namespace": {kubeNamespace}, "qps": {"-1"}}
	return "k8s:///?" + q.Encode()
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
	kc := &kubeconfigs{t: t, s: s, dir: t.TempDir(), written: map[string]string{}}
	return server{
		addr: addr,
		url:  kc.url,
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
		tamper: func(ctx context.Context, name string, token events.Token) error {
			// The holder's session watches its locks: it learns of the
			// delete at once. Deleted only at a version whose token
			// annotation is token; waiters joining the line change the
			// version under the holder, so a conflict is read again.
			leases := cs.CoordinationV1().Leases(kubeNamespace)
			lease := lb.LockLease(name)
			for range 10 {
				l, err := leases.Get(ctx, lease, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("read Lease %s of %s: %w", lease, name, err)
				}
				if got := l.Annotations["hustings.io/token"]; got != strconv.FormatUint(uint64(token), 10) {
					return fmt.Errorf("Lease %s of %s is not under token %d (token %q)", lease, name, token, got)
				}
				rv := l.ResourceVersion
				err = leases.Delete(ctx, lease, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
				if !apierrors.IsConflict(err) {
					if err != nil {
						return fmt.Errorf("delete Lease %s of %s: %w", lease, name, err)
					}
					return nil
				}
			}
			return fmt.Errorf("delete Lease %s of %s: the version kept changing", lease, name)
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
