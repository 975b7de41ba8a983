//go:build k8s

package main

// Kubernetes Leases by k8s:// and kubernetes://, in a demo built with
// -tags k8s (see stores.go).
import _ "github.com/hustings/hustings/backends/kubernetes/k8sdial"
