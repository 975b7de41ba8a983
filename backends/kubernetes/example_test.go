package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/kubernetes"
)

// Two candidates share a namespace's Leases: the first takes the lock,
// the second is told it is held, and takes it after the release with a
// larger fencing token (the resourceVersion its take was conditioned on).
// The apiserver here is the tests' (kubetest); in a cluster the client
// comes from rest.InClusterConfig.
func Example() {
	cfg := srv.RESTConfig() // in a cluster: rest.InClusterConfig()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		log.Fatal(err)
	}
	// hc.CloseIdleConnections would stop at client-go's wrappers.
	defer utilnet.CloseIdleConnectionsFor(hc.Transport)
	cs, err := clientset.NewForConfigAndClient(cfg, hc)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		log.Fatal(err)
	}

	b, err := kubernetes.New(cs, "example")
	if err != nil {
		log.Fatal(err)
	}
	alice, err := b.Open(ctx, "alice", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close(ctx)
	bob, err := b.Open(ctx, "bob", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer bob.Close(ctx)

	first, _ := alice.Acquire(ctx, "nightly-settlement", 0)
	_, err = bob.Acquire(ctx, "nightly-settlement", 0)
	fmt.Println("bob skips:", errors.Is(err, backends.ErrHeld))

	_ = alice.Release(ctx, "nightly-settlement", first, 0)
	second, _ := bob.Acquire(ctx, "nightly-settlement", 0)
	h, _ := b.Holder(ctx, "nightly-settlement")
	fmt.Println(h.ID, "holds it; larger token:", second > first)
	fmt.Println("its Lease:", b.LockLease("nightly-settlement"))
	// Output:
	// bob skips: true
	// bob holds it; larger token: true
	// its Lease: hustings-lock-nightly-settlement-f2e6a09dc221edf18b3b
}
