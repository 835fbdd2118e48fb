#!/bin/bash
# An asynchronous device-to-host copy into page-locked memory does not block its caller,
# and its bytes land before its completion is observable (async_dtoh.c), through the pool
# as directly on softgpu.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M
n=100000000
[ -n "${GP_SAN_RUNTIME:-}" ] && n=10000000

out=$(on_softgpu "$GP_TESTBIN/async_dtoh" "$n") || fail "directly on softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
out=$(run_client "$GP_TESTBIN/async_dtoh" "$n") || fail "through the pool: $out"
echo "pool: $out"
gp_stop
