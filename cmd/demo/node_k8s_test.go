package main

import (
	"fmt"
	"net/url"
	"syscall"
	"testing"
	"time"

	_ "github.com/hustings/hustings/backends/kubernetes/k8sdial" // as -tags k8s does: the nodes are this test binary
	"github.com/hustings/hustings/backends/kubernetes/kubetest"
)

// TestNodesFailOverOnKubernetes: "demo node --backend k8s://…" runs on
// Leases (a demo built with -tags k8s registers k8sdial): two node processes on a real
// kube-apiserver elect one, and when it is killed with SIGKILL the other
// takes over with a larger token.
func TestNodesFailOverOnKubernetes(t *testing.T) {
	srv := kubetest.Start(t)
	raw := "k8s:///?" + url.Values{"kubeconfig": {srv.Kubeconfig()}, "namespace": {"default"}}.Encode()
	name := fmt.Sprintf("demo-k8s-%x", time.Now().UnixNano())
	var nodes []*nodeProc
	for _, id := range []string{"n1", "n2"} {
		nodes = append(nodes, startNode(t, "--backend", raw, "--name", name, "--ttl", "2s", "--id", id))
	}
	leader := func(dead *nodeProc) *nodeProc {
		for _, n := range nodes {
			if n != dead && n.leads() {
				return n
			}
		}
		return nil
	}
	waitNodes(t, "a first leader", func() bool { return leader(nil) != nil })
	first := leader(nil)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, "a new leader after SIGKILL", func() bool { return leader(first) != nil })
	checkTokensGrow(t, nodes)
}
