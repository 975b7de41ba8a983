#!/usr/bin/env bash
# build.sh builds Consul, at the version this module requires, once per
# machine, for backends/consul/consultest. It does nothing when the binary
# is there already, so make test runs it every time.
#
# The binary goes to $HUSTINGS_CONSUL if set, otherwise to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/consul-<version>/consul
# (Go's os.UserCacheDir on Linux, where consultest looks). A new version is
# a new directory; delete old ones by hand.
#
# Cold, it downloads Consul's modules through the Go module proxy and
# compiles about 1,700 packages: measured on the 2-core machine beside
# other work (load ~7), 2 minutes of downloads, then 9 min 25 s and 9.6
# CPU-minutes of build, 1.7 GB of RAM at peak (the link); the binary,
# stripped, is 113 MB.
set -euo pipefail
cd "$(dirname "$0")"

go=${GO:-go}
version=$(awk '$1 == "github.com/hashicorp/consul" { print $2; exit } $1 == "require" && $2 == "github.com/hashicorp/consul" { print $3; exit }' go.mod)
if [ -z "$version" ]; then
	echo "build.sh: go.mod requires no github.com/hashicorp/consul" >&2
	exit 1
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}
bin=${HUSTINGS_CONSUL:-$cache/hustings/consul-$version/consul}
if [ -x "$bin" ]; then
	exit 0
fi

echo "building consul $version once per machine into $bin, minutes…"
start=$(date +%s)
echo "  downloading modules through the Go module proxy…"
"$go" mod download
mkdir -p "$(dirname "$bin")"
tmp="$bin.tmp.$$"
trap 'rm -f "$tmp"' EXIT
# CGO off as HashiCorp builds its releases.
CGO_ENABLED=0 "$go" build -trimpath -ldflags "-s -w" -o "$tmp" github.com/hashicorp/consul
mv "$tmp" "$bin"
echo "built $bin in $(($(date +%s) - start))s"
