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
# A launch is one message: 200 launches of an 8-node graph are about 200 calls, not 1600.
out=$(run_client "$GP_TESTBIN/graphs" launches 200) || fail "launches: $out"
wait_for '.sessions | length == 0' 10
calls=$(grep -o 'ended: .* calls [0-9]*' "$T/daemon.log" | tail -n 1 | grep -o '[0-9]*$')
[ -n "$calls" ] || fail "no session summary in the daemon log"
[ "$calls" -ge 200 ] && [ "$calls" -lt 260 ] || fail "200 graph launches took $calls calls"
echo "pool: $out ($calls calls)"
gp_stop
