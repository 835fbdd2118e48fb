#!/bin/bash
# A session past its memory limit gets CUDA_ERROR_OUT_OF_MEMORY; the limit is what
# cuMemGetInfo reports; other sessions carry on.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

# Sessions that ask for nothing reserve 128 MiB, so several share the GPU.
gp_config "default_memory 128M"
gp_start
hold A 4096
# 64 MiB reserved: two allocations of 40 MiB do not fit.
set +e
out=$(GPUPOOL_MEMORY=64M run_client "$GP_TESTBIN/hold_session" 41943040 2 </dev/null 2>&1)
set -e
echo "$out"
case "$out" in *"ERROR cuMemAlloc"*"CUDA_ERROR_OUT_OF_MEMORY"*) ;; *) fail "expected OOM: $out" ;; esac
# Within the limit, cuMemGetInfo reports it as the device's size.
out=$(echo | GPUPOOL_MEMORY=64M run_client "$GP_TESTBIN/hold_session" 41943040 1 2>&1)
case "$out" in *"total 67108864"*) ;; *) fail "cuMemGetInfo should report the 64 MiB limit: $out" ;; esac
# Globals, the device heap: memory a session uses without allocating it counts too.
out=$(GPUPOOL_MEMORY=64M run_client "$GP_TESTBIN/limits" 2>&1) || fail "limits: $out"
echo "$out"
# A library's module costs memory in every context that uses it, charged in each.
out=$(GPUPOOL_MEMORY=256M run_client "$GP_TESTBIN/libinst" fit 2>&1) || fail "libinst: $out"
echo "$out"
# 42 MiB: its two contexts hold 9 MiB each (heap, printf buffer); one 16 MiB copy fits, two do not.
out=$(GPUPOOL_MEMORY=42M run_client "$GP_TESTBIN/libinst" over 2>&1) || fail "libinst over: $out"
echo "$out"
out=$(GPUPOOL_MEMORY=256M run_client "$GP_TESTBIN/libinst" nocurrent 2>&1) ||
	fail "libinst nocurrent: $out"
echo "$out"
# The first session is untouched and the pool still computes.
out=$(run_client "$GP_STAGE/bin/vector_add" 10000) || fail "vector_add: $out"
wait_for '.sessions | length == 1' 10
release A
gp_stop
echo PASS
