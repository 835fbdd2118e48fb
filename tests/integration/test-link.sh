#!/bin/bash
# JIT linking (link.c): directly on softgpu, then through the pool, where the interposer
# collects the inputs and the worker links them with its driver when the image is loaded.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M

out=$(on_softgpu "$GP_TESTBIN/link") || fail "softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
out=$(run_client "$GP_TESTBIN/link" pool) || fail "pool: $out"
echo "pool: $out"
gp_stop
