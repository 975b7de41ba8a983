#!/usr/bin/env bash
# build.sh builds nats-server, at the version this module requires, once
# per machine, for backends/nats/natstest. It does nothing when the binary
# is there already, so make test runs it every time.
#
# The binary goes to $HUSTINGS_NATS_SERVER if set, otherwise to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/nats-server-<version>/nats-server
# (Go's os.UserCacheDir on Linux, where natstest looks). A new version is a
# new directory; delete old ones by hand.
set -euo pipefail
cd "$(dirname "$0")"

go=${GO:-go}
version=$(awk '{ for (i = 1; i < NF; i++) if ($i == "github.com/nats-io/nats-server/v2") { print $(i + 1); exit } }' go.mod)
if [ -z "$version" ]; then
	echo "build.sh: go.mod requires no github.com/nats-io/nats-server/v2" >&2
	exit 1
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}
bin=${HUSTINGS_NATS_SERVER:-$cache/hustings/nats-server-$version/nats-server}
if [ -x "$bin" ]; then
	exit 0
fi

echo "building nats-server $version once per machine into $bin…"
start=$(date +%s)
"$go" mod download
mkdir -p "$(dirname "$bin")"
tmp="$bin.tmp.$$"
trap 'rm -f "$tmp"' EXIT
CGO_ENABLED=0 "$go" build -trimpath -ldflags "-s -w" -o "$tmp" github.com/nats-io/nats-server/v2
mv "$tmp" "$bin"
echo "built $bin in $(($(date +%s) - start))s"
