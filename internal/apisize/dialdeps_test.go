package apisize

import (
	"slices"
	"strings"
	"testing"
)

// TestDialLinksNoKubernetesClient: client-go comes with the Kubernetes
// opener (backends/kubernetes/k8sdial), registered by importing it, not
// with dial.
func TestDialLinksNoKubernetesClient(t *testing.T) {
	for _, dep := range deps(t, "github.com/hustings/hustings/backends/dial") {
		if strings.HasPrefix(dep, "k8s.io/") {
			t.Errorf("backends/dial links %s", dep)
		}
	}
	if !slices.Contains(deps(t, "github.com/hustings/hustings/backends/kubernetes/k8sdial"), "k8s.io/client-go/kubernetes") {
		t.Error("k8sdial links no client-go: the check above proves nothing")
	}
}
