#!/bin/bash
# Calls real programs make that a local GPU answers (misc_calls.c), through the pool and
# directly on softgpu.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M GPUPOOL_GPUS=2

out=$(on_softgpu "$GP_TESTBIN/misc_calls" "$GP_TESTBIN/spin_kernel.ptx") || fail "softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
out=$(run_client "$GP_TESTBIN/misc_calls" "$GP_TESTBIN/spin_kernel.ptx") || fail "pool: $out"
echo "pool: $out"
gp_stop
