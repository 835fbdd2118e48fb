#!/bin/bash
# A graph's structure and parameters read back as built (graph_query.c), for graphs made,
# cloned and captured, through the pool as directly on softgpu.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M

out=$(on_softgpu "$GP_TESTBIN/graph_query") || fail "directly on softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
out=$(run_client "$GP_TESTBIN/graph_query") || fail "through the pool: $out"
echo "pool: $out"
gp_stop
