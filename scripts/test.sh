#!/bin/sh
# test.sh [BUILD_DIR] -- build everything and run every test (unit, softgpu,
# integration). Exits non-zero when anything fails.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
"$top/scripts/build.sh" "$build"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
