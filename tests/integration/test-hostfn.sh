#!/bin/bash
# Host functions run asynchronously and in stream order, in the client (hostfn.c), through
# the pool as directly on softgpu.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M

out=$(on_softgpu "$GP_TESTBIN/hostfn") || fail "directly on softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
# A hang here (the pool not reading the client's answers while a copy waits) is a failure.
out=$(timeout 120 env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/hostfn") ||
	fail "through the pool: $out"
echo "pool: $out"
gp_stop
