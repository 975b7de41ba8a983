#!/usr/bin/env bash
# build.sh builds kube-apiserver, at the version this module requires, once
# per machine, for backends/kubernetes/kubetest. It does nothing when the
# binary is there already, so make test runs it every time.
#
# The binary goes to $HUSTINGS_KUBE_APISERVER if set, otherwise to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/kube-apiserver-<version>/kube-apiserver
# (Go's os.UserCacheDir on Linux, where kubetest looks). A new version is a
# new directory; delete old ones by hand.
#
# Cold, it downloads Kubernetes' modules through the Go module proxy and
# compiles about 2,000 packages: measured on the 2-core machine beside
# other work, 8 minutes, 7.3 CPU-minutes and 2.4 GB of RAM at peak (the
# link); the binary, stripped, is 119 MB.
set -euo pipefail
cd "$(dirname "$0")"

go=${GO:-go}
version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' go.mod)
if [ -z "$version" ]; then
	echo "build.sh: go.mod requires no k8s.io/kubernetes" >&2
	exit 1
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}
bin=${HUSTINGS_KUBE_APISERVER:-$cache/hustings/kube-apiserver-$version/kube-apiserver}
if [ -x "$bin" ]; then
	exit 0
fi

echo "building kube-apiserver $version once per machine into $bin, a few minutes (~8 on 2 cores, 2.4 GB RAM)…"
start=$(date +%s)
echo "  downloading modules through the Go module proxy…"
"$go" mod download
total=$("$go" list -deps k8s.io/kubernetes/cmd/kube-apiserver | wc -l)
echo "  compiling (up to $total packages; cached ones are not counted)…"

# The version the binary reports (/version), as Kubernetes' release build
# stamps it; CGO off as upstream builds its servers.
minor=${version#v1.}
minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
mkdir -p "$(dirname "$bin")"
tmp="$bin.tmp.$$"
trap 'rm -f "$tmp"' EXIT
# go build -v names each package as it compiles it: count them, pass any
# other line (an error) through.
CGO_ENABLED=0 "$go" build -v -trimpath -ldflags "$ldflags" -o "$tmp" k8s.io/kubernetes/cmd/kube-apiserver 2>&1 |
	awk -v total="$total" '
		/^[^ :]+$/ { if (++n % 250 == 0) { printf "  %d/%d packages\n", n, total; fflush() }; next }
		{ print; fflush() }'
mv "$tmp" "$bin"
echo "built $bin in $(($(date +%s) - start))s"
