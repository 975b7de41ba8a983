// Package zookeeper is the ZooKeeper backend: TODO.
package zookeeper
