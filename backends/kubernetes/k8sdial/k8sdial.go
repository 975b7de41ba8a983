// Package k8sdial registers the URL schemes k8s:// and kubernetes:// with
// package dial, so that dial.Open opens a Kubernetes Lease backend
// (package backends/kubernetes). Import it for its side effect:
//
//	import _ "github.com/hustings/hustings/backends/kubernetes/k8sdial"
//
// The URL names no host: the API server comes from the configuration.
//
//	k8s://                                  in-cluster config, the pod's namespace
//	k8s:///?namespace=ns                    in-cluster config, namespace ns
//	k8s:///?kubeconfig=/path&namespace=ns   the kubeconfig's current context
//	k8s:///?prefix=p                        Lease names start with p (kubernetes.WithPrefix)
//	k8s:///?qps=n                           the client's rate limit, n requests a second
//
// Without kubeconfig, Open uses the service account of the pod it runs in
// (rest.InClusterConfig) and, without namespace, the pod's namespace. With
// kubeconfig, the namespace defaults to the current context's, else
// "default". Without qps the client has client-go's default rate limit (5
// requests a second, burst 10), which queues every request, KeepAlive
// included: give a qps that covers the campaigns' acquires, or a negative
// one for no limit (rest.Config.QPS). Parameters other than these four are
// bad URLs. Open lists the namespace's Leases once to check that the
// server answers and lets the credentials read them. client-go logs through klog, which WithLogger
// does not route.
//
// It is a package of its own so that a program that calls kubernetes.New
// does not link dial, and one that dials links client-go only if it asks.
package k8sdial

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/kubernetes"
)

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() {
	_ = dial.Register("k8s", opener{})
	_ = dial.Register("kubernetes", opener{})
}

// podNamespace is where a pod's service account names its namespace.
const podNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// opener opens k8s:// URLs.
type opener struct{}

// params is what a k8s:// URL says.
type params struct {
	kubeconfig, namespace, prefix string
	qps                           float32 // 0: client-go's default
}

func (opener) Usage(scheme string) string {
	if scheme != "k8s" {
		return "" // an alias
	}
	return "k8s://[/?kubeconfig=path&namespace=ns]"
}

func (opener) Check(u *url.URL) error {
	_, err := parse(u)
	return err
}

func parse(u *url.URL) (params, error) {
	switch {
	case u.Opaque != "":
		return params{}, fmt.Errorf("no // after %q: write %s://", u.Scheme+":", u.Scheme)
	case u.User != nil || u.Host != "":
		return params{}, errors.New("no host: the API server comes from the kubeconfig or the pod (write " + u.Scheme + ":///?kubeconfig=path)")
	case strings.Trim(u.Path, "/") != "":
		return params{}, fmt.Errorf("no path (got %q)", u.Path)
	case u.Fragment != "":
		return params{}, errors.New("fragments are not supported")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return params{}, err
	}
	var p params
	for k, v := range q {
		if len(v) != 1 {
			return params{}, fmt.Errorf("parameter %q given %d times", k, len(v))
		}
		switch k {
		case "kubeconfig":
			p.kubeconfig = v[0]
		case "namespace":
			p.namespace = v[0]
		case "prefix":
			p.prefix = v[0]
		case "qps":
			f, err := strconv.ParseFloat(v[0], 32)
			if err != nil || f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return params{}, fmt.Errorf("qps %q is not a number of requests a second (negative: no limit)", v[0])
			}
			p.qps = float32(f)
		default:
			return params{}, fmt.Errorf("parameter %q is not one of kubeconfig, namespace, prefix, qps", k)
		}
	}
	if q.Has("kubeconfig") && p.kubeconfig == "" {
		return params{}, errors.New("kubeconfig is empty")
	}
	// New checks the namespace and prefix without a request.
	ns := p.namespace
	if ns == "" {
		ns = "default"
	}
	if _, err := kubernetes.New(new(clientset.Clientset), ns, p.options()...); err != nil {
		return params{}, errors.New(strings.TrimPrefix(err.Error(), backends.ErrInvalid.Error()+": kubernetes: "))
	}
	return p, nil
}

func (p params) options() []kubernetes.Option {
	if p.prefix == "" {
		return nil
	}
	return []kubernetes.Option{kubernetes.WithPrefix(p.prefix)}
}

// config returns the client configuration and the namespace p names.
func (p params) config() (*rest.Config, string, error) {
	if p.kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", err
		}
		ns := p.namespace
		if ns == "" {
			b, err := os.ReadFile(podNamespace)
			if err != nil {
				return nil, "", fmt.Errorf("no namespace parameter and no pod namespace: %w", err)
			}
			ns = strings.TrimSpace(string(b))
		}
		return cfg, ns, nil
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: p.kubeconfig}, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	ns := p.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", err
		}
	}
	return cfg, ns, nil
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	shown := u.Redacted()
	p, err := parse(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, shown, err)
	}
	cfg, ns, err := p.config()
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	if p.qps != 0 {
		cfg.QPS = p.qps
	}
	// The client is Open's own, so closing the backend closes every
	// connection it dialed: CloseIdleConnections alone would leave one
	// whose last request was cancelled a moment before (its stream still
	// being reset), and that connection's read loop would outlive Close.
	conns := &tracker{
		d:    net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		open: map[*trackedConn]struct{}{},
	}
	cfg.Dial = conns.dial
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	closeFn := func() {
		utilnet.CloseIdleConnectionsFor(hc.Transport)
		conns.close()
	}
	cs, err := clientset.NewForConfigAndClient(cfg, hc)
	if err != nil {
		closeFn()
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	b, err := kubernetes.New(cs, ns, p.options()...)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	if _, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		closeFn()
		if isAPI(err) { // the server answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
		}
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v", c.Timeout)
		}
		return nil, nil, fmt.Errorf("%w %s: %w", dial.ErrUnreachable, shown, err)
	}
	return b, closeFn, nil
}

// tracker dials a client's connections and closes those still open when
// the client is done.
type tracker struct {
	d      net.Dialer
	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	closed bool
}

// dial opens a connection as client-go's default dialer does.
func (t *tracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := t.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, t: t}
	t.open[tc] = struct{}{}
	return tc, nil
}

// close closes every open connection; later dials fail.
func (t *tracker) close() {
	t.mu.Lock()
	open := t.open
	t.open, t.closed = nil, true
	t.mu.Unlock()
	for c := range open {
		c.Conn.Close()
	}
}

// trackedConn leaves its tracker's set when closed.
type trackedConn struct {
	net.Conn
	t *tracker
}

func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	delete(c.t.open, c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}

// isAPI reports whether err is a status the API server sent.
func isAPI(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}
