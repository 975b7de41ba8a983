# make test: what CI runs (.ci/run) and what a newcomer runs first.
# It installs the servers the backend tests start (redis-server, ZooKeeper,
# PostgreSQL) and the browser the live page's test drives (Chromium) when
# they are missing, builds kube-apiserver, nats-server, FerretDB and Consul
# and installs dynalite when they are missing (once per machine: minutes the
# first time), then vets and runs
# every test with the race detector, in the library, the bench/ module
# and the controller-runtime module. No backend test is skipped.

GO ?= go

.PHONY: test test-busy deps kube-apiserver nats-server ferretdb dynalite consul vet demo chaos bench bench-quick bench-check tools-check crleader-check

# The chaos suite runs after the other packages, on its own: its failover
# bounds are about the library, not about sharing two cores with a
# ZooKeeper JVM and another package's race-detected tests.
test: deps kube-apiserver nats-server ferretdb dynalite consul vet bench-check tools-check crleader-check
	$(GO) test -race $$($(GO) list ./... | grep -v '/chaos$$')
	$(GO) test -race ./chaos

# vet also fails on a file gofmt would change (every module of the repo).
vet:
	@unformatted=$$("$$($(GO) env GOROOT)/bin/gofmt" -l .); if [ -n "$$unformatted" ]; then echo "gofmt -l: not formatted:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# make test-busy: make test beside two CPU burners (started and stopped by
# PID), with the test cache cleared first, as a busy CI runner would run
# it. Every change must pass it; a test that fails here has a defect.
test-busy:
	$(GO) clean -testcache
	@sh -c 'while :; do :; done' & b1=$$!; sh -c 'while :; do :; done' & b2=$$!; \
	trap 'kill $$b1 $$b2' EXIT INT TERM; \
	$(MAKE) test

demo:
	$(GO) run ./cmd/demo

# make chaos: the long fault-injection run (package chaos), 10 minutes of
# faults per backend (ten: Redis, etcd, ZooKeeper, PostgreSQL, MySQL, Kubernetes
# Leases, NATS, Consul, MongoDB, DynamoDB), about 110 minutes in all, held to the issue's bounds.
# Built without the race detector so that its timings are a user's; make
# test runs a short profile with it. Histories and the summary table go
# to chaos/out/.
chaos: deps kube-apiserver nats-server ferretdb dynalite consul
	mkdir -p chaos/out
	HUSTINGS_CHAOS=long HUSTINGS_CHAOS_OUT=$(CURDIR)/chaos/out $(GO) test -count=1 -timeout 150m -run TestChaos -v ./chaos

# bench-check vets and tests the bench/ module (its own go.mod, so that
# the peer libraries stay out of the library's): loopback only, seconds.
bench-check:
	cd bench && $(GO) vet ./... && $(GO) test -race ./...

# bench: every workload on every backend beside the peer libraries; about
# 70 minutes for the eleven backends (the scale workload 20 of them);
# results in bench/results/.
bench: deps kube-apiserver nats-server ferretdb dynalite consul
	cd bench && $(GO) run .

# bench-quick: a smoke run of every workload, about 12 minutes for every backend.
bench-quick: deps kube-apiserver nats-server ferretdb dynalite consul
	cd bench && $(GO) run . -quick

# kube-apiserver builds the kube-apiserver that the Kubernetes backend's
# tests start (backends/kubernetes/kubetest), from its own module
# (tools/kube-apiserver, so that the library's go.mod never requires
# Kubernetes), into ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/, keyed by
# version: once per machine, a few minutes; when it is there, at once.
kube-apiserver:
	@GO=$(GO) ./tools/kube-apiserver/build.sh

# nats-server builds the nats-server that the NATS backend's tests start
# (backends/nats/natstest), from its own module (tools/nats-server, so that
# the library's go.mod never requires the server), into
# ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/, keyed by version: once per
# machine, under a minute; when it is there, at once.
nats-server:
	@GO=$(GO) ./tools/nats-server/build.sh

# ferretdb builds FerretDB v1, the MongoDB stand-in that the MongoDB
# backend's tests start (backends/mongodb/mongotest), over SQLite, from its
# own module (tools/ferretdb), into ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/,
# keyed by version: once per machine, a few minutes; when it is there, at
# once.
ferretdb:
	@GO=$(GO) ./tools/ferretdb/build.sh

# dynalite installs dynalite, the DynamoDB stand-in that the DynamoDB
# backend's tests start (backends/dynamodb/dynamotest), with npm from
# tools/dynalite's lockfile into ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/,
# keyed by version: once per machine, about 20 s; when it is there, at
# once. It needs Node.js and npm (deps installs them when missing).
dynalite: deps
	@./tools/dynalite/install.sh

# consul builds Consul v1.14 (MPL), the server that the Consul backend's
# tests start (backends/consul/consultest), from its own module
# (tools/consul, so that the library's go.mod never requires Consul), into
# ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/, keyed by version: once per
# machine, about 12 minutes (10 CPU-minutes) on 2 cores; when it is
# there, at once.
consul:
	@GO=$(GO) ./tools/consul/build.sh

# tools-check vets and tests the tools/kube-apiserver module: its pins are
# Kubernetes' own (no upgrade beneath it). A second.
tools-check:
	cd tools/kube-apiserver && $(GO) vet ./... && $(GO) test ./...

# crleader-check vets and tests the controller-runtime module
# (backends/kubernetes/controllerruntime, its own go.mod so that
# controller-runtime stays out of the library's): real managers against
# kube-apiserver, on Leases and on Redis; about 30 s.
crleader-check: deps kube-apiserver
	cd backends/kubernetes/controllerruntime && $(GO) vet ./... && $(GO) test -race ./...

# deps installs redis-server, ZooKeeper, PostgreSQL, MariaDB, Chromium (for the
# live page's browser test, cmd/demo/live_test.go) and Node.js with npm (for
# dynalite, the DynamoDB tests' server) from Debian when
# missing (as root); elsewhere it says what to install. The PostgreSQL
# tests make clusters of their own (backends/postgres/pgtest): the
# package's system cluster is never used; the MariaDB tests likewise
# start servers of their own (backends/mysql/mysqltest).
deps:
	@./tools/deps/install.sh
