//go:build tools

// Package tools pins FerretDB for build.sh, which builds it once per
// machine for the MongoDB backend's tests (backends/mongodb/mongotest).
// It lives apart from the library's module so that no user of Hustings
// downloads the server. Every version is pinned in go.mod; change the
// require and run go mod tidy to move to another release (and
// mongotest.Version). FerretDB v2 needs PostgreSQL's DocumentDB
// extension, which Debian lacks: stay on v1.
package tools

import _ "github.com/FerretDB/FerretDB/cmd/ferretdb"
