#!/bin/bash
# kernel_timeout: a kernel that never ends holds the GPU only that long. The client's call
# fails with CUDA_ERROR_LAUNCH_TIMEOUT and a message naming kernel_timeout, the daemon logs
# it, and the session is gone. The tenant's own value wins over the file's.
. "$(dirname "$0")/lib.sh"

gp_config "kernel_timeout 600" "tenant default kernel_timeout=2"
gp_start
set +e
out=$(GPUPOOL_LOG=info run_client "$GP_TESTBIN/spin" 9000000000000000000 2>&1)
set -e
echo "$out"
# 702 is CUDA_ERROR_LAUNCH_TIMEOUT.
case "$out" in *"ERROR cuCtxSynchronize() 702"*) ;; *) fail "expected LAUNCH_TIMEOUT: $out" ;; esac
case "$out" in *"kernel_timeout ended the session"*) ;; *) fail "no message: $out" ;; esac
wait_for '.sessions | length == 0' 10
grep -q "a call has run past kernel_timeout (2 s)" "$T/daemon.log" ||
	fail "the daemon should log the timeout"
# A short kernel is not touched.
out=$(run_client "$GP_TESTBIN/spin" 1000 2>&1) || fail "a short kernel: $out"
case "$out" in *"DONE"*ok*) ;; *) fail "a short kernel: $out" ;; esac
gp_stop

# A bad value names the file and line.
gp_config "kernel_timeout soon"
set +e
out=$("$GP_STAGE/bin/gpupoold" -n -f "$T/gpupoold.conf" 2>&1)
set -e
case "$out" in *"gpupoold.conf:7"*kernel_timeout*) ;; *) fail "bad kernel_timeout: $out" ;; esac
gp_config "tenant a kernel_timeout=-1"
set +e
out=$("$GP_STAGE/bin/gpupoold" -n -f "$T/gpupoold.conf" 2>&1)
set -e
case "$out" in *"gpupoold.conf:7"*kernel_timeout*) ;; *) fail "bad tenant kernel_timeout: $out" ;; esac
echo PASS
