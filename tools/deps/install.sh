#!/bin/sh
# install.sh installs, from Debian, the servers and programs make test
# needs and this machine lacks: only those, so that a program installed
# some other way is kept (a Node.js from NodeSource carries its own npm,
# and Debian's npm conflicts with it). As root with apt-get; elsewhere it
# says what to install and fails.
set -eu

missing=""
need() { # need PACKAGE: add a Debian package to install
	missing="$missing $1"
}
command -v redis-server >/dev/null 2>&1 || need redis-server
[ -x /usr/share/zookeeper/bin/zkServer.sh ] || need zookeeper
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need postgresql
command -v mariadbd >/dev/null 2>&1 || need mariadb-server
command -v chromium >/dev/null 2>&1 || need chromium
command -v node >/dev/null 2>&1 || need nodejs
command -v npm >/dev/null 2>&1 || need npm

[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing$missing"
	apt-get update -qq
	# shellcheck disable=SC2086 # one word per package
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
	echo "make test needs$missing; on Debian: sudo apt-get install -y$missing" >&2
	exit 1
fi
