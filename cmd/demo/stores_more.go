//go:build stores

package main

// Consul, MongoDB and DynamoDB by URL, in a demo built with -tags stores
// (see stores.go), with Kubernetes too (stores_k8s.go).
import (
	_ "github.com/hustings/hustings/backends/consul/consuldial"
	_ "github.com/hustings/hustings/backends/dynamodb/dynamodial"
	_ "github.com/hustings/hustings/backends/mongodb/mongodial"
)
