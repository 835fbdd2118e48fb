#!/bin/bash
# bench.sh [BUILD_DIR] [gpupool-bench options] -- builds, then runs gpupool-bench from the
# build's stage tree: what a CUDA program pays through gpupool on this machine, as ratios to
# baselines measured in the same run (docs/performance.md). It starts its own daemon on
# loopback with softgpu; GPUPOOL_SERVER (with GPUPOOL_CA) measures another pool instead, and
# GPUPOOL_BENCH_DRIVER names the driver (NVIDIA's libcuda.so.1 on a GPU host).
#
#   scripts/bench.sh                  the full run, a table
#   scripts/bench.sh build --json     the same as JSON
#   scripts/bench.sh build --short    a quick run (what CI runs, never judged)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	build=$1
	shift
fi
"$top/scripts/build.sh" "$build" >/dev/null
exec "$build/stage/bin/gpupool-bench" "$@"
