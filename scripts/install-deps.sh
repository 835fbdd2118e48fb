#!/bin/sh
# install-deps.sh -- install the Debian packages gpupool builds with, and check
# for the CUDA toolkit; fetch promtool (get-promtool.sh). Safe to run again: it
# installs only what is missing.
set -eu

PKGS="build-essential cmake pkg-config libuv1-dev libprotobuf-c-dev protobuf-c-compiler
libssl-dev openssl libcmocka-dev jq python3 python3-yaml curl libzstd-dev liblz4-dev libsystemd-dev"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done

if [ -n "$missing" ]; then
	echo "install-deps: installing:$missing"
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then
		SUDO="sudo"
	fi
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# promtool, for the metrics test (integration.metrics-promtool): taken out of Debian's
# prometheus package into a cache, not installed with it. Without it that test says SKIP.
if ! "$(dirname "$0")/get-promtool.sh" >/dev/null; then
	echo "install-deps: could not get promtool; integration.metrics-promtool will be skipped" >&2
fi

CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$CUDA_HOME/include/cuda.h" ] || [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
	echo "install-deps: the CUDA toolkit is missing: expected $CUDA_HOME/include/cuda.h and" >&2
	echo "install-deps: $CUDA_HOME/bin/nvcc. Install the CUDA 13 toolkit or set CUDA_HOME." >&2
	exit 1
fi
echo "install-deps: all dependencies present (CUDA_HOME=$CUDA_HOME)"
