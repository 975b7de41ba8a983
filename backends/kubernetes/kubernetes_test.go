package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/backends/kubernetes/kubetest"
	"github.com/hustings/hustings/events"
)

// srv is the one kube-apiserver of the package's tests (3.5 s to start,
// 275 MB): every test shares it, each in namespaces or with Lease-name
// prefixes of its own.
var srv *kubetest.Server

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, &srv)) }

// config returns a client configuration for srv, unthrottled, whose
// transport counts the requests of each method in calls if it is not nil.
func config(calls *methodCount) *rest.Config {
	cfg := srv.RESTConfig()
	if calls != nil {
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counting{calls, rt} }
	}
	return cfg
}

// client returns a clientset for srv whose idle connections are closed
// when the test ends.
func client(t testing.TB, calls *methodCount) clientset.Interface {
	t.Helper()
	cfg := config(calls)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// hc.CloseIdleConnections would stop at client-go's wrappers.
	t.Cleanup(func() { utilnet.CloseIdleConnectionsFor(hc.Transport) })
	cs, err := clientset.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace creates a namespace named for the test and returns its name.
func namespace(t testing.TB, cs clientset.Interface) string {
	t.Helper()
	name := fmt.Sprintf("t%x", time.Now().UnixNano())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// newBackend returns a Backend in ns with a Lease-name prefix of its own.
func newBackend(t testing.TB, cs clientset.Interface, ns string) *kubernetes.Backend {
	t.Helper()
	return prefixed(t, cs, ns, fmt.Sprintf("h%x", time.Now().UnixNano()))
}

// prefixed returns a Backend in ns with Lease-name prefix p.
func prefixed(t testing.TB, cs clientset.Interface, ns, p string) *kubernetes.Backend {
	t.Helper()
	b, err := kubernetes.New(cs, ns, kubernetes.WithPrefix(p))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// deleteLock deletes the Lease of lock name behind its holder's back, as
// an operator would with kubectl delete lease.
func deleteLock(t *testing.T, cs clientset.Interface, ns string, b backends.Backend, name string) {
	t.Helper()
	lease := b.(*kubernetes.Backend).LockLease(name)
	if err := cs.CoordinationV1().Leases(ns).Delete(t.Context(), lease, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Lease %s: %v", lease, err)
	}
}

// fencedWrite writes the token into the lock's Lease under the fence.
func fencedWrite(ctx context.Context, b backends.Backend, name string, token events.Token) error {
	return b.(*kubernetes.Backend).Fence(ctx, name, token, map[string]string{"example.com/last-writer": fmt.Sprint(token)})
}

func TestContract(t *testing.T) {
	cs := client(t, nil)
	ns := namespace(t, cs)
	backendtest.Run(t, backendtest.Harness{
		New:    func(t *testing.T) backends.Backend { return newBackend(t, cs, ns) },
		TTL:    2 * time.Second,
		Delete: func(t *testing.T, b backends.Backend, name string) { deleteLock(t, cs, ns, b, name) },
		Fence:  fencedWrite,
	})
}

// TestGroups runs the group scenario of the contract suite (crashes and
// resignations among 8 candidates for 3 slots, ranked by FIFO through
// the registry) against the real apiserver, in real time.
func TestGroups(t *testing.T) {
	cs := client(t, nil)
	ns := namespace(t, cs)
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, cs, ns) },
		TTL: 2 * time.Second,
	})
}

func TestNewRejectsBadInput(t *testing.T) {
	cs := client(t, nil)
	tests := []struct {
		name, namespace string
		client          clientset.Interface
		opts            []kubernetes.Option
	}{
		{"nil client", "default", nil, nil},
		{"typed-nil *Clientset", "default", (*clientset.Clientset)(nil), nil},
		{"empty namespace", "", cs, nil},
		{"namespace with capitals", "Default", cs, nil},
		{"empty prefix", "default", cs, []kubernetes.Option{kubernetes.WithPrefix("")}},
		{"prefix ending in a dash", "default", cs, []kubernetes.Option{kubernetes.WithPrefix("app-")}},
		{"long prefix", "default", cs, []kubernetes.Option{kubernetes.WithPrefix("a23456789012345678901")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := kubernetes.New(tt.client, tt.namespace, tt.opts...); !errors.Is(err, backends.ErrInvalid) || b != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", b, err)
			}
		})
	}
}

// TestMissingNamespace: a namespace that does not exist is bad
// configuration, not an outage.
func TestMissingNamespace(t *testing.T) {
	b, err := kubernetes.New(client(t, nil), "no-such-namespace")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Open(t.Context(), "a", time.Second)
	if !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Open in a missing namespace: %v, want ErrInvalid", err)
	}
}

// methodCount counts requests by kind, and can answer the next watch
// that resumes from a resourceVersion with 410 Gone, as a server whose
// history no longer reaches that far does; or, while failing is set,
// every such watch, and every LIST with 503.
type methodCount struct {
	get, list, watch, post, put, del atomic.Int64
	expire, failing                  atomic.Bool
	beforeDelete                     atomic.Pointer[func()] // runs once, before the next DELETE is sent
}

// calls returns how many GETs and writes were counted: the requests of
// a session's calls, without the LISTs and WATCHes that the Backend's
// watch makes on its own schedule.
func (c *methodCount) calls() int64 { return c.get.Load() + c.writes() }

// writes returns how many writes were counted.
func (c *methodCount) writes() int64 { return c.post.Load() + c.put.Load() + c.del.Load() }

type counting struct {
	c  *methodCount
	rt http.RoundTripper
}

// gone is a watch stream of one ERROR event: 410, resourceVersion too old.
const gone = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
	`"message":"too old resource version","reason":"Expired","code":410}}` + "\n"

// unavailable is the body of a 503 without Retry-After: client-go does
// not retry it.
const unavailable = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
	`"message":"injected","reason":"ServiceUnavailable","code":503}`

// answer is a JSON response to req with status code and body.
func answer(req *http.Request, code int, body string) *http.Response {
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Request: req,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(body)),
	}
}

func (c counting) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	switch {
	case req.Method == http.MethodGet && q.Get("watch") == "true":
		c.c.watch.Add(1)
		if q.Get("resourceVersion") != "" && (c.c.failing.Load() || c.c.expire.CompareAndSwap(true, false)) {
			return answer(req, http.StatusOK, gone), nil
		}
	case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/leases"):
		c.c.list.Add(1)
		if c.c.failing.Load() {
			return answer(req, http.StatusServiceUnavailable, unavailable), nil
		}
	case req.Method == http.MethodGet:
		c.c.get.Add(1)
	case req.Method == http.MethodPost:
		c.c.post.Add(1)
	case req.Method == http.MethodPut:
		c.c.put.Add(1)
	case req.Method == http.MethodDelete:
		c.c.del.Add(1)
		if f := c.c.beforeDelete.Swap(nil); f != nil {
			(*f)()
		}
	}
	return c.rt.RoundTrip(req)
}

// WrappedRoundTripper lets utilnet.CloseIdleConnectionsFor reach the
// transport.
func (c counting) WrappedRoundTripper() http.RoundTripper { return c.rt }
