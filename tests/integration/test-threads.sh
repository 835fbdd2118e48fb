#!/bin/bash
# One client process calling the driver API from many threads at once (threads.c): cuInit
# racing device queries, shared primary-context retains and releases, kernels and copies
# interleaved on one connection. Every thread's result is right and the session ends clean.
. "$(dirname "$0")/lib.sh"

gp_start
out=$(run_client "$GP_TESTBIN/threads" 2>&1) || fail "threads failed: $out"
echo "$out"
case "$out" in *PASSED*) ;; *) fail "threads did not report PASSED: $out" ;; esac
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
