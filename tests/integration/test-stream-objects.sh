#!/bin/bash
# TOOLS_CONTEXT's stream objects and ids (stream_objects.c), directly on softgpu and through
# the pool, where the interposer answers them.
. "$(dirname "$0")/lib.sh"

out=$(on_softgpu "$GP_TESTBIN/stream_objects") || fail "softgpu: $out"
echo "softgpu: $out"
gp_start
out=$(run_client "$GP_TESTBIN/stream_objects") || fail "pool: $out"
echo "pool: $out"
gp_stop
