#!/bin/sh
# build.sh [BUILD_DIR] -- install missing dependencies, configure and build.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
"$top/scripts/install-deps.sh"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" ${GP_CMAKE_ARGS:-} >/dev/null
echo "build: compiling into $build (log: $build/build.log)"
if ! cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1; then
	tail -n 60 "$build/build.log" >&2
	echo "build: FAILED" >&2
	exit 1
fi
