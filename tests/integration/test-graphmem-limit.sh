#!/bin/bash
# Graph memory within a session's memory limit: an executable graph holds its allocation
# nodes' memory, past the limit an instantiation or allocation is CUDA_ERROR_OUT_OF_MEMORY,
# what the driver keeps for graphs counts until a trim, and poolctl shows an executable's
# graph memory as the session's while it lives and not after.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

gp_config "default_memory 128M"
gp_start
out=$(GPUPOOL_MEMORY=64M run_client "$GP_TESTBIN/graphmem_limit" over 2>&1) ||
	fail "graphmem_limit over: $out"
case "$out" in *OK*) ;; *) fail "expected OK: $out" ;; esac
echo "$out"

# A session whose executable graph holds 32 MiB, then is destroyed (and the memory trimmed).
client_start G graphmem_limit hold
client_said G BASE
wait_for '.sessions | length == 1' 10
base=$(status_json | jq '.sessions[0].memory_used')
client_step G
client_said G HELD
wait_for ".sessions[0].memory_used == $base + 33554432" 10
assert_status ".gpus[0].memory_used >= 33554432" "the GPU shows the graph's memory in use"
client_step G
client_said G FREED
wait_for ".sessions[0].memory_used == $base" 10
release G || fail "graphmem_limit hold: $(cat "$T/G.out" "$T/G.err")"
grep -q '^DONE$' "$T/G.out" || fail "graphmem_limit hold did not finish: $(cat "$T/G.out")"
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
