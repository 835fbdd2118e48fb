#!/bin/bash
# Utilization on MIG instances (softgpu's MIG emulation): kernels of a known length on one
# instance are that instance's busy time; its GPU's figure weighs each instance by its share
# of the SMs (10 of 70 here), and so does its tenant's; /metrics exports the instance as
# DCGM_FI_PROF_GR_ENGINE_ACTIVE.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=8G SOFTGPU_SMS=70 SOFTGPU_MIG="0:1g.2gb,2g.4gb"
export GPUPOOL_MEMORY=64M SOFTGPU_THREADS=2
gp_config "metrics_listen 127.0.0.1:0"
gp_start
out=$(GPUPOOL_SLICE=1g.2gb run_client "$GP_TESTBIN/busy" 250 8) || fail "busy: $out"
ran=$(echo "$out" | sed -n 's/^DONE 8 //p')
wait_for '.sessions | length == 0' 10
status_json >"$T/s.json"
jq '[.gpus[] | {index, mig, instance, sms, profile, util_1m, busy_1m_seconds}]' "$T/s.json"
close() { awk -v g="$1" -v w="$2" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 0.04 * w + 0.02) }'; }
inst=$(jq -r '.gpus[] | select(.profile == "1g.2gb") | .busy_1m_seconds' "$T/s.json")
close "$inst" "$ran" || fail "the 1g.2gb instance's busy seconds $inst should be the kernels' ${ran}s"
jq -e '(.gpus[] | select(.profile == "2g.4gb") | .busy_1m_seconds) == 0' "$T/s.json" >/dev/null ||
	fail "the other instance was not used"
par=$(jq -r '.gpus[] | select(.mig) | .busy_1m_seconds' "$T/s.json")
want=$(awk -v r="$inst" 'BEGIN { print r * 10 / 70 }')
close "$par" "$want" || fail "the GPU's busy seconds $par should be its instance's weighed by SMs: $want"
# Its tenant kept a seventh of a GPU busy, not a whole one: weighed as its GPU weighs it.
ten=$(jq -r '[.utilization.tenants[].busy_1m_seconds] | add' "$T/s.json")
close "$ten" "$want" || fail "the tenant's busy seconds $ten should be its instance's weighed by SMs: $want"
jq -e '.utilization.util_1m == (.gpus[] | select(.mig) | .util_1m)' "$T/s.json" >/dev/null ||
	fail "the host's figure is its one GPU's (instances counted within it)"
url=$(grep -o "http://[0-9.:]*/metrics" "$T/daemon.log" | head -n 1)
curl -sf "$url" >"$T/metrics" || fail "GET $url"
grep -E '^DCGM' "$T/metrics"
grep -Eq '^DCGM_FI_PROF_GR_ENGINE_ACTIVE\{gpu="64",UUID="MIG-[0-9a-f-]{36}",modelName="[^"]*",Hostname="[^"]+",GPU_I_PROFILE="1g.2gb",GPU_I_ID="[0-9]+"\} 0\.[0-9]+$' \
	"$T/metrics" || fail "metrics: the instance's DCGM_FI_PROF_GR_ENGINE_ACTIVE"
grep -q '^DCGM_FI_DEV_GPU_UTIL' "$T/metrics" && fail "a GPU in MIG mode has no DCGM_FI_DEV_GPU_UTIL"
gp_stop
echo PASS
