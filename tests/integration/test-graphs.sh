#!/bin/bash
# CUDA graphs and stream capture that touch client memory behave as on a local GPU at every
# launch (graphs.c), through the pool as directly on softgpu.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M

out=$(on_softgpu "$GP_TESTBIN/graphs") || fail "directly on softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
out=$(run_client "$GP_TESTBIN/graphs") || fail "through the pool: $out"
echo "pool: $out"
gp_stop
