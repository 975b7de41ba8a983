package crleader_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hustings/hustings/backends/kubernetes/kubetest"
)

// srv is the one kube-apiserver of the package's tests: every manager
// talks to it, and the Kubernetes backend keeps its Leases there, each
// test in a namespace of its own.
var srv *kubetest.Server

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	s, err := kubetest.StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv = s
	code := m.Run()
	s.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// config returns a client configuration for srv, unthrottled, whose
// connections go through c if c is not nil.
func config(c *cut) *rest.Config {
	cfg := &rest.Config{
		Host:            srv.URL(),
		BearerToken:     srv.Token(),
		TLSClientConfig: rest.TLSClientConfig{CAFile: srv.CAFile()},
		QPS:             -1,
	}
	if c != nil {
		cfg.Dial = c.dial
	}
	return cfg
}

// namespace creates a namespace for t.
func namespace(t *testing.T, name string) {
	t.Helper()
	cs, err := clientset.NewForConfig(config(nil))
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// cut is a link one replica's backend client dials through, which the
// test can freeze: from then on it is a black hole, as a SIGKILLed
// process's peer sees it from the other side. Writes are swallowed,
// what the server sends is dropped, and new dials hang until their
// context ends. Close closes every connection, for the test's cleanup.
type cut struct {
	gone   chan struct{} // closed by Close
	mu     sync.Mutex
	frozen bool
	closed bool
	conns  []net.Conn
}

// freeze makes the link a black hole.
func (c *cut) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = true
}

func (c *cut) isFrozen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	return c.frozen
}

// init makes c.gone. c.mu is held.
func (c *cut) init() {
	if c.gone == nil {
		c.gone = make(chan struct{})
	}
}

// Close closes every connection made through c; later dials fail.
func (c *cut) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if !c.closed {
		close(c.gone)
	}
	c.closed = true
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

func (c *cut) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.isFrozen() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.gone:
			return nil, net.ErrClosed
		}
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		conn.Close()
		return nil, net.ErrClosed
	}
	c.conns = append(c.conns, conn)
	return &cutConn{Conn: conn, cut: c}, nil
}

// cutConn is a connection of a cut.
type cutConn struct {
	net.Conn
	cut *cut
}

// Read drops what arrives while the link is frozen, and keeps reading:
// it returns only on an error (a read deadline, the connection closed).
func (cc *cutConn) Read(p []byte) (int, error) {
	for {
		n, err := cc.Conn.Read(p)
		if err != nil || !cc.cut.isFrozen() {
			return n, err
		}
	}
}

// Write swallows p while the link is frozen.
func (cc *cutConn) Write(p []byte) (int, error) {
	if cc.cut.isFrozen() {
		return len(p), nil
	}
	return cc.Conn.Write(p)
}
