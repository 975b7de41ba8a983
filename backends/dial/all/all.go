// Package all registers every URL scheme of this module with package dial:
// it imports each opener package for its side effect, so a program that
// imports it links every store's client (client-go included). Programs
// that open one or two stores should import their openers instead.
//
//	import _ "github.com/hustings/hustings/backends/dial/all"
package all

import (
	_ "github.com/hustings/hustings/backends/consul/consuldial"   // consul://
	_ "github.com/hustings/hustings/backends/dynamodb/dynamodial" // dynamodb://
	_ "github.com/hustings/hustings/backends/etcd/etcddial"       // etcd://
	_ "github.com/hustings/hustings/backends/kubernetes/k8sdial"  // k8s://, kubernetes://
	_ "github.com/hustings/hustings/backends/mongodb/mongodial"   // mongodb://
	_ "github.com/hustings/hustings/backends/mysql/mysqldial"     // mysql://, mariadb://
	_ "github.com/hustings/hustings/backends/nats/natsdial"       // nats://
	_ "github.com/hustings/hustings/backends/postgres/pgdial"     // postgres://, postgresql://
	_ "github.com/hustings/hustings/backends/redis/redisdial"     // redis://
	_ "github.com/hustings/hustings/backends/zookeeper/zkdial"    // zk://
)
