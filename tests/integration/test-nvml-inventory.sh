#!/bin/bash
# The daemon's inventory cross-checks CUDA with the NVML beside the driver: softgpu's NVML agrees
# on every GPU (the same UUIDs and memory a program sees through softgpu's NVML directly); a
# driver directory without NVML still makes a working pool that says NVML is absent; an NVML
# that disagrees gets a warning per GPU and "mismatch" in poolctl status --json.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=256M

# softgpu's NVML, beside softgpu's libcuda.so.1.
gp_start
assert_status '.nvml.library | endswith("/softgpu/libnvidia-ml.so.1")' "the inventory should use softgpu's NVML"
assert_status '.nvml.driver_version == .version' "softgpu's NVML driver version is gpupool's"
assert_status '[.gpus[].nvml] == ["match", "match"]' "softgpu's NVML should agree on both GPUs"
grep -q "NVML .*softgpu/libnvidia-ml.so.1 .*cross-checked the GPUs" "$T/daemon.log" || fail "log line"
! grep -q "disagrees\|does not list" "$T/daemon.log" || fail "no warning expected"
# The same devices a program sees through softgpu's NVML, in the same order.
out=$(echo | on_softgpu "$GP_TESTBIN/nvml_client" nocuda) || fail "nvml_client on softgpu: $out"
echo "$out"
status_json >"$T/status.json"
for i in 0 1; do
	uuid=$(jq -r ".gpus[$i].uuid" "$T/status.json")
	total=$(jq -r ".gpus[$i].memory_total" "$T/status.json")
	grep -q "^nvml dev $i name=softgpu uuid=$uuid\$" <<<"$out" || fail "GPU $i: UUID $uuid"
	grep -q "^nvml mem $i total=$total " <<<"$out" || fail "GPU $i: memory $total"
done
gp_stop

# A driver directory without NVML: the pool works, NVML is absent.
mkdir -p "$T/bare"
cp "$GP_SOFTGPU" "$T/bare/libcuda.so.1"
gp_config "driver $T/bare/libcuda.so.1"
gp_start
assert_status '.nvml == null' "no NVML beside the driver"
assert_status '[.gpus[].nvml] == ["absent", "absent"]' "GPUs not cross-checked"
assert_status '.gpus | length == 2' "both GPUs from CUDA alone"
grep -q "no NVML beside the driver" "$T/daemon.log" || fail "the daemon should say NVML is absent"
out=$(run_client "$GP_STAGE/bin/vector_add" 1000) || fail "vector_add without NVML: $out"
gp_stop

# An NVML that knows only GPU 0, with the wrong size: a warning each, "mismatch" each.
mkdir -p "$T/odd"
cp "$GP_SOFTGPU" "$T/odd/libcuda.so.1"
cp "$GP_TESTBIN/fake-nvml/libnvidia-ml.so.1" "$T/odd/"
uuid0=$(jq -r '.gpus[0].uuid' "$T/status.json")
: >"$T/daemon.log"
gp_config "driver $T/odd/libcuda.so.1"
FAKE_NVML_UUID=$uuid0 FAKE_NVML_TOTAL=1234 gp_start
assert_status '[.gpus[].nvml] == ["mismatch", "mismatch"]' "a disagreeing NVML"
assert_status '.nvml.driver_version == "fake"' "the NVML's own version"
grep -q "GPU 0 (softgpu, $uuid0): NVML reports 1234 bytes of memory, CUDA 268435456" "$T/daemon.log" ||
	fail "warning for GPU 0's memory"
grep -q "GPU 1 (softgpu, GPU-[0-9a-f-]*): NVML does not list this GPU" "$T/daemon.log" ||
	fail "warning for GPU 1"
"$POOLCTL" -s "$T/admin.sock" status | grep -q "^0 .*NVML disagrees$" || fail "poolctl status should flag GPU 0"
# CUDA's answers stand: the pool still places sessions.
out=$(run_client "$GP_STAGE/bin/vector_add" 1000) || fail "vector_add with a disagreeing NVML: $out"
gp_stop
echo PASS
