package main

import (
	"net/url"
	"slices"
	"strings"

	"github.com/hustings/hustings/backends/dial"

	// The stores the demo opens by URL. Kubernetes is in stores_k8s.go,
	// built with -tags k8s: client-go would more than double what the
	// demo's first run downloads and compiles.
	_ "github.com/hustings/hustings/backends/consul/consuldial"
	_ "github.com/hustings/hustings/backends/etcd/etcddial"
	_ "github.com/hustings/hustings/backends/mongodb/mongodial"
	_ "github.com/hustings/hustings/backends/mysql/mysqldial"
	_ "github.com/hustings/hustings/backends/nats/natsdial"
	_ "github.com/hustings/hustings/backends/postgres/pgdial"
	_ "github.com/hustings/hustings/backends/redis/redisdial"
	_ "github.com/hustings/hustings/backends/zookeeper/zkdial"
)

// withoutKubernetes reports whether raw is a Kubernetes URL that this
// build cannot open (it was built without -tags k8s).
func withoutKubernetes(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	return (scheme == "k8s" || scheme == "kubernetes") && !slices.Contains(dial.Schemes(), scheme)
}
