#!/usr/bin/env bash
# install.sh installs dynalite, at the version package.json names and the
# exact tree package-lock.json pins, once per machine, for
# backends/dynamodb/dynamotest. It does nothing when it is there already,
# so make test runs it every time. It needs Node.js (20 or later) and npm;
# on Debian: apt-get install nodejs npm.
#
# The tree goes to $HUSTINGS_DYNALITE if set, otherwise to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/hustings/dynalite-<version>/
# (Go's os.UserCacheDir on Linux, where dynamotest looks), and the server
# is node_modules/dynalite/cli.js in it. A new version is a new directory;
# delete old ones by hand. Nothing is downloaded when the tests run.
#
# Install scripts are not run: the only one, classic-level's (LevelDB, for
# dynalite --path), picks a prebuilt binary it ships, at run time.
# Measured on the 2-core machine beside other work: 25 packages, 10 MB,
# 16 s cold, 2.5 CPU-seconds.
set -euo pipefail
cd "$(dirname "$0")"

version=$(sed -n 's/^ *"dynalite": "\([^"]*\)".*/\1/p' package.json | head -n 1)
if [ -z "$version" ]; then
	echo "install.sh: package.json names no dynalite" >&2
	exit 1
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}
dir=${HUSTINGS_DYNALITE:-$cache/hustings/dynalite-$version}
if [ -f "$dir/node_modules/dynalite/cli.js" ]; then
	exit 0
fi
for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "install.sh: $tool not found; on Debian: apt-get install nodejs npm" >&2
		exit 1
	fi
done

echo "installing dynalite $version once per machine into $dir…"
start=$(date +%s)
mkdir -p "$(dirname "$dir")"
tmp="$dir.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp"
cp package.json package-lock.json "$tmp/"
npm ci --prefix "$tmp" --ignore-scripts --no-audit --no-fund --loglevel=error
rm -rf "$dir"
mv "$tmp" "$dir"
echo "installed $dir in $(($(date +%s) - start))s"
