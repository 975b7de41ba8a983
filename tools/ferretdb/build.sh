#!/usr/bin/env bash
# build.sh builds FerretDB, at the version this module requires, once per
# machine, for backends/mongodb/mongotest. It does nothing when the binary
# is there already, so make test runs it every time.
#
# The binary goes to $HUSTINGS_FERRETDB if set, otherwise to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/ferretdb-<version>/ferretdb
# (Go's os.UserCacheDir on Linux, where mongotest looks). A new version is
# a new directory; delete old ones by hand.
#
# FerretDB v1 is pure Go (its SQLite backend is modernc.org/sqlite), so CGO
# stays off. Cold (modules already downloaded), measured on the 2-core
# machine beside other work (load ~8): 2 min 41 s, 2.0 CPU-minutes, 0.6 GB
# of RAM at peak; the binary, stripped, is 34 MB.
set -euo pipefail
cd "$(dirname "$0")"

go=${GO:-go}
version=$(awk '$1 == "github.com/FerretDB/FerretDB" { print $2; exit } $1 == "require" && $2 == "github.com/FerretDB/FerretDB" { print $3; exit }' go.mod)
if [ -z "$version" ]; then
	echo "build.sh: go.mod requires no github.com/FerretDB/FerretDB" >&2
	exit 1
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}
bin=${HUSTINGS_FERRETDB:-$cache/hustings/ferretdb-$version/ferretdb}
if [ -x "$bin" ]; then
	exit 0
fi

echo "building FerretDB $version once per machine into $bin…"
start=$(date +%s)
"$go" mod download
mkdir -p "$(dirname "$bin")"
tmp="$bin.tmp.$$"
# FerretDB's main package panics at start unless build/version/version.txt
# holds its version, a file its release build writes and the module lacks.
# Files in the module cache are read-only (and -overlay may not replace
# them), so build from a copy of the module's source with the file added:
# a throwaway go.mod, this one plus a replace of FerretDB by the copy,
# keeps every other module at this go.mod's pins (and go.sum's hashes).
work=$(mktemp -d)
trap 'rm -f "$tmp"; chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -R "$("$go" list -m -f '{{.Dir}}' github.com/FerretDB/FerretDB)" "$work/src"
chmod -R u+w "$work/src"
echo "$version" >"$work/src/build/version/version.txt"
cp go.mod go.sum "$work/"
"$go" mod edit -modfile="$work/go.mod" -replace "github.com/FerretDB/FerretDB=$work/src"
CGO_ENABLED=0 "$go" build -modfile="$work/go.mod" -trimpath -ldflags "-s -w" -o "$tmp" github.com/FerretDB/FerretDB/cmd/ferretdb
mv "$tmp" "$bin"
echo "built $bin in $(($(date +%s) - start))s"
