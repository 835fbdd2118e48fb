#!/bin/bash
# TOOLS_MODULE slot 7, a module's kernels handed to a callback (module_functions.c), directly
# on softgpu and through the pool, where the interposer answers it.
. "$(dirname "$0")/lib.sh"

out=$(on_softgpu "$GP_TESTBIN/module_functions") || fail "softgpu: $out"
echo "softgpu: $out"
gp_start
out=$(run_client "$GP_TESTBIN/module_functions") || fail "pool: $out"
echo "pool: $out"
gp_stop
