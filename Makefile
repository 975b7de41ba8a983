# make test: what CI runs (.ci/run) and what a newcomer runs first.
# It installs the servers the backend tests start (redis-server, ZooKeeper)
# when they are missing, then vets and runs every test with the race
# detector. No backend test is skipped.

GO ?= go

.PHONY: test deps vet demo

test: deps vet
	$(GO) test -race ./...

vet:
	$(GO) vet ./...

demo:
	$(GO) run ./cmd/demo

# deps installs redis-server and ZooKeeper from Debian when missing (as
# root); elsewhere it says what to install.
deps:
	@if ! command -v redis-server >/dev/null 2>&1 || [ ! -x /usr/share/zookeeper/bin/zkServer.sh ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing redis-server and zookeeper"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server zookeeper >/dev/null; \
		else \
			echo "make test needs redis-server and ZooKeeper; on Debian: sudo apt-get install -y redis-server zookeeper" >&2; \
			exit 1; \
		fi; \
	fi
