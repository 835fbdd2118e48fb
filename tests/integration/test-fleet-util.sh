#!/bin/bash
# Utilization across hosts (issue 13): poolctl --pool shows each host's utilization, the
# fleet's (its hosts' weighted by their GPUs) and each tenant's busy time summed over hosts,
# from the daemons' own figures; kernels of a known length on one host (busy_kernel.cu,
# counted by the device's own timer) are what the fleet reports for their tenant.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet.sh"
export GPUPOOL_MEMORY=64M GPUPOOL_CONNECT_TIMEOUT=0 SOFTGPU_SMS=4 SOFTGPU_THREADS=2
export GPUPOOL_CERT=$T/certs/client.pem GPUPOOL_KEY=$T/certs/client.key

fleet_certs
admin_certs
common=("tls_ca $T/certs/ca.pem" "admin_ca $T/admin/ca.pem" "admin_name ops-ro read-only")
fleet_start 2 127.0.0.2:0 1 1G "${common[@]}" "admin_listen 127.0.0.2:0"
port=${D2_LISTEN##*:}
A2=$(jq -r .admin_listen "$T/d2/status.json")
aport=${A2##*:}
fleet_start 3 "127.0.0.3:$port" 3 1G "${common[@]}" "admin_listen 127.0.0.3:$aport"
export GPUPOOL_ADMIN_POOL=$A2,127.0.0.3:$aport

# 8 kernels of 250 ms on the host with one GPU, one after another, each on each host:
# 2 s there; then 4 kernels (1 s) on the host with three.
out=$(GPUPOOL_SERVER=127.0.0.2:$port run_client "$GP_TESTBIN/busy" 250 8) || fail "busy on d2: $out"
ran2=$(echo "$out" | sed -n 's/^DONE 8 //p')
out=$(GPUPOOL_SERVER=127.0.0.3:$port run_client "$GP_TESTBIN/busy" 250 4) || fail "busy on d3: $out"
ran3=$(echo "$out" | sed -n 's/^DONE 4 //p')
dwait 2 '.sessions | length == 0'
dwait 3 '.sessions | length == 0'
fpoolctl ops-ro status --json >"$T/f.json" || fail "poolctl --pool status"
fpoolctl ops-ro status | tee "$T/f.txt"
jq '{fleet, hosts: [.hosts[] | {endpoint, util_1m, gpus: [.gpus[].util_1m]}], tenants}' "$T/f.json"
close() { awk -v g="$1" -v w="$2" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 0.04 * w + 0.02) }'; }
t=$(jq -r '.tenants[] | select(.tenant == "default") | .busy_1m_seconds' "$T/f.json")
want=$(awk -v a="$ran2" -v b="$ran3" 'BEGIN { print a + b }')
close "$t" "$want" || fail "the tenant's busy seconds over both hosts $t should be the kernels' ${want}s"
# Each host's figure is the mean of its GPUs', the fleet's weighs its hosts' by their GPUs (1
# and 3); each daemon's own busy seconds are its kernels'.
jq -e '(.hosts | map(.util_1m)) as $u | $u[0] > 0 and $u[1] > 0 and
	(.hosts | all((.util_1m - (.gpus | map(.util_1m) | add / length) | fabs) < 0.02)) and
	(.fleet.util_1m - ($u[0] * 1 + $u[1] * 3) / 4 | fabs) < 0.02' "$T/f.json" >/dev/null ||
	fail "the fleet's utilization should be its hosts', weighed by their GPUs"
close "$(dstatus 2 | jq '.gpus[0].busy_1m_seconds')" "$ran2" || fail "daemon 2's busy seconds"
close "$(dstatus 3 | jq '[.gpus[].busy_1m_seconds] | add')" "$ran3" || fail "daemon 3's busy seconds"
jq -e '.hosts[1].gpus | map(.util_1m) | (map(select(. > 0)) | length) == 1' "$T/f.json" >/dev/null ||
	fail "on the host with three GPUs one was busy"
grep -q "UTIL 1M/1H" "$T/f.txt" && grep -q "BUSY GPUS 1M/1H" "$T/f.txt" ||
	fail "the fleet table should show utilization per host and busy GPUs per tenant"
# A host that is down has no figure, and the fleet's is that of the hosts that answered.
fleet_stop 3
fpoolctl ops-ro status --json >"$T/f.json"
jq -e '.hosts[1].up == false and .hosts[1].util_1m == null and .fleet.util_1m == .hosts[0].util_1m' \
	"$T/f.json" >/dev/null ||
	{ cat "$T/f.json"; fail "with one host down, the fleet's utilization is the other's"; }
fleet_stop 2
echo PASS
