//go:build tools

// Package tools pins nats-server for build.sh, which builds it once per
// machine for the NATS backend's tests (backends/nats/natstest). It lives
// apart from the library's module so that no user of Hustings downloads
// the server. Every version is pinned in go.mod; change the require and
// run go mod tidy to move to another release (and natstest.Version).
package tools

import _ "github.com/nats-io/nats-server/v2"
