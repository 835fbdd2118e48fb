#!/bin/bash
# A session that makes thousands of handles (the worker's handle table grows several times)
# and then loads modules: the worker does not crash, and the module's device memory is still
# charged against the session's limit (a module bigger than what is left is refused). Under
# the sanitizer build this also proves no handle pointer outlives the table's growth.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

gp_start
out=$(RAW_MEMORY=$((64 << 20)) "$GP_TESTBIN/raw_client" handles 2>&1) ||
	fail "module loads that grow the handle table: $out"
echo "$out"
wait_for '.sessions | length == 0' 10
if grep -q "killed by signal" "$T/daemon.log"; then fail "a worker died"; fi
# The pool still serves.
out=$(run_client "$GP_STAGE/bin/vector_add" 1000) || fail "vector_add: $out"
gp_stop
echo PASS
