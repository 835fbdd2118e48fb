#!/bin/bash
# A kernel's device-side assert: CUDA_ERROR_ASSERT at the synchronize, and the assert's
# message on the client's stderr, through the pool as directly on softgpu — not in the
# daemon's log (asserter.c). Under the sanitizers the worker's stderr stays the log's
# (docs/conformance.md): only the error is checked there.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1

on_softgpu "$GP_TESTBIN/asserter" >"$T/out" 2>"$T/err" || fail "softgpu: $(cat "$T/out" "$T/err")"
grep -q "asserter: CUDA_ERROR_ASSERT" "$T/out" || fail "softgpu: $(cat "$T/out")"
grep -q "Assertion .*element must be zero.* failed" "$T/err" || fail "softgpu stderr: $(cat "$T/err")"
gp_config
gp_start
run_client "$GP_TESTBIN/asserter" >"$T/out" 2>"$T/err" || fail "pool: $(cat "$T/out" "$T/err")"
grep -q "asserter: CUDA_ERROR_ASSERT" "$T/out" || fail "pool: $(cat "$T/out")"
if [ -z "${GP_SAN_RUNTIME:-}" ]; then
	grep -q "Assertion .*element must be zero.* failed" "$T/err" ||
		fail "the assert's message should be on the client's stderr: $(cat "$T/err")"
	grep -q "element must be zero" "$T/out" && fail "the assert's message is not stdout's"
	grep -q "element must be zero" "$T/daemon.log" && fail "the assert's message is the client's, not the log's"
	# The worker's own log lines still reach the daemon's log.
	grep -q "gpupool-worker\[1\]: info: session 1 ended" "$T/daemon.log" || fail "the worker's log lines are missing"
fi
gp_stop
echo PASS
