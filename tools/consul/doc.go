// Package consul holds no code. Its module only builds Consul for the
// Consul backend's tests (backends/consul/consultest): build.sh builds it
// once per machine. It lives apart from the library's module so that no
// user of Hustings ever downloads Consul.
//
// Consul's go.mod replaces its api, sdk and proto-public modules with
// directories of its repository; replaces apply only in the main module,
// so here they resolve to the published releases its go.mod requires
// (api v1.18.1, sdk v0.13.0, proto-public v0.2.1). Consul v1.14.11 (its
// LICENSE: MPL 2.0) is the newest release whose go.mod needs no module
// the repository may not use: 1.15 and 1.16 also require envoyextensions
// and troubleshoot, whose licence is not an open-source one. Every
// version is pinned: change the require and consultest.Version together,
// then go mod tidy.
package consul
