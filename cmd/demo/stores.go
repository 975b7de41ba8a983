package main

import (
	"net/url"
	"slices"
	"strings"

	"github.com/hustings/hustings/backends/dial"

	// The stores the demo opens by URL. Kubernetes is in stores_k8s.go,
	// built with -tags k8s (or stores): client-go would more than double
	// what the demo's first run downloads and compiles. Consul, MongoDB
	// and DynamoDB are in stores_more.go, built with -tags stores: their
	// clients (the AWS SDK above all) took the cold first run from about
	// 100 s to over 200.
	_ "github.com/hustings/hustings/backends/etcd/etcddial"
	_ "github.com/hustings/hustings/backends/mysql/mysqldial"
	_ "github.com/hustings/hustings/backends/nats/natsdial"
	_ "github.com/hustings/hustings/backends/postgres/pgdial"
	_ "github.com/hustings/hustings/backends/redis/redisdial"
	_ "github.com/hustings/hustings/backends/zookeeper/zkdial"
)

// tagged are the schemes only a demo built with a tag opens, and the tag.
var tagged = map[string]string{"k8s": "k8s", "kubernetes": "k8s", "consul": "stores", "mongodb": "stores", "dynamodb": "stores"}

// missingTag returns the build tag that would let this demo open raw, if
// raw is a URL of a store this build left out; "" otherwise.
func missingTag(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	if slices.Contains(dial.Schemes(), scheme) {
		return ""
	}
	return tagged[scheme]
}
