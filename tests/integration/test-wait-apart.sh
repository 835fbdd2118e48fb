#!/bin/bash
# One client thread's wait for a long kernel does not hold up another thread's wait for an
# idle stream, through the pool as directly on softgpu (wait_apart.c says how it checks).
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M
# A kernel long enough to outlast the other thread's calls (sanitizers slow softgpu ~10x).
n=100000000
[ -n "${GP_SAN_RUNTIME:-}" ] && n=10000000

out=$(on_softgpu "$GP_TESTBIN/wait_apart" "$n") || fail "directly on softgpu: $out"
echo "softgpu: $out"
out=$(on_softgpu "$GP_TESTBIN/wait_apart" "$n" per-thread) || fail "softgpu, per-thread: $out"
echo "softgpu, per-thread default streams: $out"
gp_config
gp_start
out=$(run_client "$GP_TESTBIN/wait_apart" "$n") || fail "through the pool: $out"
echo "pool: $out"
# Each thread's default stream is its own in the pool too.
out=$(run_client "$GP_TESTBIN/wait_apart" "$n" per-thread) || fail "per-thread streams: $out"
echo "pool, per-thread default streams: $out"
gp_stop
