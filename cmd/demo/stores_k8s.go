//go:build k8s || stores

package main

// Kubernetes Leases by k8s:// and kubernetes://, in a demo built with
// -tags k8s or -tags stores (see stores.go).
import _ "github.com/hustings/hustings/backends/kubernetes/k8sdial"
