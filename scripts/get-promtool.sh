#!/bin/sh
# get-promtool.sh -- put Prometheus' promtool (which the metrics test runs) in a cache, from
# Debian's prometheus package, without installing that package (a daemon and ~100 MB we do
# not want): the .deb is downloaded with apt-get download and only usr/bin/promtool is taken
# out of it. Prints the path of the binary. Safe to run again: a cached copy is reused.
#
#   scripts/get-promtool.sh            # cache: ${XDG_CACHE_HOME:-$HOME/.cache}/gpupool
#   GP_PROMTOOL_CACHE=DIR scripts/get-promtool.sh
set -eu

CACHE="${GP_PROMTOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpupool}"
BIN="$CACHE/promtool"

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
	echo "$BIN"
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
	echo "get-promtool: apt-get and dpkg-deb are needed (a Debian system)" >&2
	exit 1
fi

mkdir -p "$CACHE"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/get-promtool.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
# apt-get download needs the package lists; fetch them only if they are missing or stale.
if ! apt-get download -q prometheus >"$TMP/download.log" 2>&1; then
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then
		SUDO="sudo"
	fi
	$SUDO apt-get update -qq
	apt-get download -q prometheus >"$TMP/download.log" 2>&1 || {
		cat "$TMP/download.log" >&2
		echo "get-promtool: apt-get download prometheus failed" >&2
		exit 1
	}
fi
deb=$(ls "$TMP"/prometheus_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$TMP" ./usr/bin/promtool
# Into place in one rename, so that a run beside this one never sees half a binary.
mv "$TMP/usr/bin/promtool" "$BIN.tmp.$$"
mv "$BIN.tmp.$$" "$BIN"
"$BIN" --version >/dev/null
echo "$BIN"
