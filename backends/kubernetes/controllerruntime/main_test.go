package crleader_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hustings/hustings/backends/kubernetes/kubetest"
	"github.com/hustings/hustings/internal/faultlink"
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
		if err := goleak.Find(faultlink.KnownLeaks()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// config returns a client configuration for srv, unthrottled (client-go
// allows 5 requests a second by default).
func config() *rest.Config {
	return &rest.Config{
		Host:            srv.URL(),
		BearerToken:     srv.Token(),
		TLSClientConfig: rest.TLSClientConfig{CAFile: srv.CAFile()},
		QPS:             -1,
	}
}

// wait returns what ch delivers, failing t if nothing comes within d.
func wait[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
		panic("unreachable")
	}
}

// namespace creates a namespace for t.
func namespace(t *testing.T, name string) {
	t.Helper()
	cs, err := clientset.NewForConfig(config())
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
