#!/bin/bash
# GPU busy time and utilization (issue 13): a session's kernels of a known length, as the
# device's own timer counts them (busy_kernel.cu, %globaltimer), are what the pool reports:
# its accounting record's gpu_busy_seconds, its GPU's busy seconds and utilization over the
# last minute in `poolctl status --json` (and the table, and /metrics in dcgm-exporter's
# naming), its tenant's; within a few percent, the kernels' own count being the reference.
# A session without kernels measures 0, the GPU nobody used stays at 0.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M SOFTGPU_SMS=4 SOFTGPU_THREADS=2
A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb
ACCT=$T/usage.jsonl
gp_config "token $A alice" "token $B bob" "accounting_file $ACCT" "metrics_listen 127.0.0.1:0"
gp_start
# close: |got - want| <= 4% of want + 20 ms (each kernel's launch inside softgpu is counted).
close() { awk -v g="$1" -v w="$2" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 0.04 * w + 0.02) }'; }

# alice: 12 kernels of 250 ms, one after another: 3 s of kernel time on one GPU.
out=$(GPUPOOL_TOKEN=$A run_client "$GP_TESTBIN/busy" 250 12) || fail "busy: $out"
case "$out" in *"DONE 12 "*) ;; *) fail "busy: $out" ;; esac
ran=$(echo "$out" | sed -n 's/^DONE 12 //p')
echo "the kernels ran ${ran}s by the device's timer"
wait_for '.sessions | length == 0' 10
rec=$(jq -c 'select(.tenant == "alice")' "$ACCT")
echo "record: $rec"
busy=$(echo "$rec" | jq -r .gpu_busy_seconds)
gpu=$(echo "$rec" | jq -r '.gpus[0]')
[ "$busy" != null ] || fail "softgpu's busy time should be measured: $rec"
close "$busy" "$ran" || fail "the record's gpu_busy_seconds $busy should be the kernels' ${ran}s"
echo "$rec" | jq -e '.gpu_busy_seconds <= .held_s' >/dev/null || fail "busy for longer than held: $rec"

status_json >"$T/s.json"
jq '{utilization, gpus: [.gpus[] | {index, util_1m, util_1h, busy_1m_seconds, busy_1h_seconds}]}' "$T/s.json"
g1m=$(jq -r --argjson g "$gpu" '.gpus[] | select(.index == $g) | .busy_1m_seconds' "$T/s.json")
close "$g1m" "$ran" || fail "GPU $gpu's busy seconds over the last minute $g1m should be the kernels' ${ran}s"
jq -e --argjson g "$gpu" '.gpus[] | select(.index == $g) | .busy_1h_seconds == .busy_1m_seconds' \
	"$T/s.json" >/dev/null || fail "within the first minute, the hour's figure is the minute's"
# Its utilization: that time over the window the daemon measured (younger than a minute).
span=$(jq -r .utilization.span_1m "$T/s.json")
want=$(awk -v r="$ran" -v s="$span" 'BEGIN { p = 100 * r / s; print (p > 100 ? 100 : p) }')
u1m=$(jq -r --argjson g "$gpu" '.gpus[] | select(.index == $g) | .util_1m' "$T/s.json")
awk -v u="$u1m" -v w="$want" 'BEGIN { d = u - w; if (d < 0) d = -d; exit !(d <= 0.04 * w + 0.5) }' ||
	fail "GPU $gpu's utilization ${u1m}% should be ${want}% (${ran}s of ${span}s)"
jq -e --argjson g "$gpu" '[.gpus[] | select(.index != $g) | .util_1m, .busy_1m_seconds] | all(. == 0)' \
	"$T/s.json" >/dev/null || fail "the GPU nobody used should be at 0"
jq -e '.utilization.util_1m != null and (.utilization.util_1m - ([.gpus[].util_1m] | add / length) | fabs) < 0.02' \
	"$T/s.json" >/dev/null || fail "the host's utilization is the mean of its GPUs'"
t1m=$(jq -r '.utilization.tenants[] | select(.tenant == "alice") | .busy_1m_seconds' "$T/s.json")
close "$t1m" "$ran" || fail "alice's busy seconds $t1m should be the kernels' ${ran}s"

# bob: a live session that keeps kernels of 100 ms going, until told to stop.
rm -f "$T/bob.in"
mkfifo "$T/bob.in"
env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" GPUPOOL_TOKEN=$B "$GP_TESTBIN/busy" 100 0 \
	<"$T/bob.in" >"$T/bob.out" 2>"$T/bob.err" &
BOB_PID=$!
exec {BOB_IN}>"$T/bob.in"
wait_for '(.sessions | length) == 1 and .sessions[0].gpu_busy_seconds != null and .sessions[0].gpu_busy_seconds > 0.5' 60
assert_status '.sessions[0].compute_enforce == "" and .sessions[0].held_seconds == 0' \
	"a session without a share is never held"
"$POOLCTL" -s "$T/admin.sock" status | tee "$T/status.txt"
grep -q "UTIL 1M/1H" "$T/status.txt" || fail "poolctl status should have a utilization column"
grep -q "  busy [0-9.]*s" "$T/status.txt" || fail "poolctl status should show bob's busy time"
grep -q "^  tenant alice " "$T/status.txt" || fail "poolctl status should show alice's busy time"
url=$(grep -o "http://[0-9.:]*/metrics" "$T/daemon.log" | head -n 1)
curl -sf "$url" >"$T/metrics" || fail "GET $url"
grep -E '^(DCGM|gpupool_(gpu_util|session_gpu_busy|tenant_gpu_busy))' "$T/metrics"
for g in 0 1; do
	grep -Eq "^DCGM_FI_DEV_GPU_UTIL\\{gpu=\"$g\",UUID=\"GPU-[0-9a-f-]{36}\",modelName=\"softgpu\",Hostname=\"[^\"]+\"\\} [0-9]+\$" \
		"$T/metrics" || fail "metrics: GPU $g's DCGM_FI_DEV_GPU_UTIL"
done
grep -Eq '^gpupool_session_gpu_busy_seconds_total\{session="[0-9]+",tenant="bob",program="busy"\} [0-9.]+$' \
	"$T/metrics" || fail "metrics: bob's busy seconds"
grep -Eq '^gpupool_tenant_gpu_busy_seconds\{tenant="alice",window="1m"\} [0-9.]+$' "$T/metrics" ||
	fail "metrics: alice's busy seconds"
echo stop >&"$BOB_IN"
exec {BOB_IN}>&-
wait "$BOB_PID" || fail "bob's busy: $(cat "$T/bob.out" "$T/bob.err")"
ranb=$(sed -n 's/^DONE [0-9]* //p' "$T/bob.out")
wait_for '.sessions | length == 0' 10
rb=$(jq -r 'select(.tenant == "bob") | .gpu_busy_seconds' "$ACCT")
close "$rb" "$ranb" || fail "bob's record $rb should be his kernels' ${ranb}s"

# A session without kernels: measured, 0.
out=$(GPUPOOL_TOKEN=$A run_client "$GP_TESTBIN/hold_session" 4096 </dev/null) || fail "hold_session: $out"
wait_for '.sessions | length == 0' 10
jq -s -e 'map(select(.program == "hold_session"))[0].gpu_busy_seconds == 0' "$ACCT" >/dev/null ||
	fail "a session without kernels measures 0: $(tail -n 1 "$ACCT")"
# The usage sums them (BUSY-SECONDS).
"$POOLCTL" -s "$T/admin.sock" usage --since 2000-01-01 | tee "$T/usage.txt"
"$POOLCTL" -s "$T/admin.sock" usage --since 2000-01-01 --json >"$T/u.json"
want=$(jq -s 'map(select(.tenant == "alice") | .gpu_busy_seconds) | add' "$ACCT")
jq -e --argjson w "$want" '.rows[] | select(.key == "alice") | (.gpu_busy_seconds - $w | fabs) < 0.002' \
	"$T/u.json" >/dev/null || fail "usage: alice's busy seconds should be her records' $want"
# Sessions starting while status is asked for all the time: before its worker serves, a
# session has not asked its driver yet, and that is not "cannot tell" (it ran nothing):
# softgpu's utilization stays known.
( while :; do status_json >/dev/null 2>&1; done ) &
POLL_PID=$!
for _ in $(seq 1 8); do
	GPUPOOL_TOKEN=$A run_client "$GP_TESTBIN/hold_session" 4096 </dev/null >/dev/null ||
		fail "hold_session while status is polled"
done
kill "$POLL_PID"
wait "$POLL_PID" 2>/dev/null || true
wait_for '.sessions | length == 0' 10
status_json >"$T/s2.json"
jq -e '.utilization.util_1m != null and ([.gpus[].util_1m] | all(. != null))' "$T/s2.json" \
	>/dev/null || fail "utilization should stay known on softgpu: $(jq -c .utilization "$T/s2.json")"
gp_stop
echo PASS
