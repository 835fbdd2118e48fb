#!/bin/bash
# Compute shares held by time (issue 14; compute_enforce time, docs/scheduling.md): two
# sessions with shares of 25% and 75% that both saturate one softgpu GPU get GPU time in that
# ratio (within 10%), as the pool's own accounting measures it (poolctl status --json, then
# the records): their workers hold launches back, without MPS's thread percentage. A session
# without a share beside them is not held. Bad compute_enforce values name file:line.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M SOFTGPU_SMS=4 SOFTGPU_THREADS=2
A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb
ACCT=$T/usage.jsonl

# A value it does not know: the daemon refuses to start, naming the line.
gp_config "compute_enforce sometimes"
if "$GP_STAGE/bin/gpupoold" -f "$T/gpupoold.conf" 2>"$T/bad.log"; then
	fail "gpupoold started with compute_enforce sometimes"
fi
grep -q "gpupoold.conf:7: 'compute_enforce sometimes': expected mps, time, both or off" "$T/bad.log" ||
	fail "the error should name the line: $(cat "$T/bad.log")"

gp_config "token $A alice" "token $B bob" "compute_enforce time" "accounting_file $ACCT"
SOFTGPU_LOG=1 gp_start
# Kernels of 20 ms, two launched before each wait: each client alone would keep the GPU
# busy nearly all the time.
start_busy() { # NAME SHARE
	rm -f "$T/$1.in"
	mkfifo "$T/$1.in"
	env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" GPUPOOL_TOKEN=$A GPUPOOL_COMPUTE=$2 \
		"$GP_TESTBIN/busy" 20 0 2 <"$T/$1.in" >"$T/$1.out" 2>"$T/$1.err" &
	eval "${1}_PID=$!"
	exec {fd}>"$T/$1.in"
	eval "${1}_IN=$fd"
}
stop_busy() { # NAME
	local fd pid
	eval "fd=\${${1}_IN}; pid=\${${1}_PID}"
	echo stop >&"$fd"
	exec {fd}>&-
	wait "$pid" || fail "$1: $(cat "$T/$1.out" "$T/$1.err")"
}
start_busy Q 25%
start_busy H 75%
wait_for '[.sessions[] | select(.state == "active" and .gpu_busy_seconds > 1)] | length == 2' 120
assert_status '[.sessions[] | .compute_enforce] == ["time", "time"]' "both shares held by time"
assert_status '[.sessions[].compute] | sort == [25, 75]' "25% and 75% granted"
# No MPS thread percentage: both workers' softgpu shows all 4 SMs (MPS's 25% would be 1).
for n in Q H; do
	case "$(head -n 1 "$T/$n.out")" in
	"READY sms 4") ;;
	*) fail "compute_enforce time should not set CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: $n $(cat "$T/$n.out" "$T/$n.err")" ;;
	esac
done
busy_of() { jq -r --argjson c "$1" '.sessions[] | select(.compute == $c) | .gpu_busy_seconds' "$T/s.json"; }
status_json >"$T/s.json"
q1=$(busy_of 25) h1=$(busy_of 75)
sleep 30 # the measured interval; nothing is asserted on its length
status_json >"$T/s.json"
q2=$(busy_of 25) h2=$(busy_of 75)
jq '.sessions[] | {id, compute, gpu_busy_seconds, held_seconds}' "$T/s.json"
echo "25%: $q1 -> $q2 s busy; 75%: $h1 -> $h2 s busy"
awk -v a="$q1" -v b="$q2" -v c="$h1" -v d="$h2" 'BEGIN {
	q = b - a; h = d - c; r = h / q
	printf "GPU time in the interval: %.3fs and %.3fs, ratio %.3f (want 3)\n", q, h, r
	exit !(q > 0.5 && r >= 2.7 && r <= 3.3) }' || fail "the GPU time of 25% and 75% shares should be 1:3 within 10%"
jq -e '.sessions[] | select(.compute == 25) | .held_seconds > 1' "$T/s.json" >/dev/null ||
	fail "the 25% session's launches should have been held"
# A session without a share beside them is not held back.
out=$(GPUPOOL_TOKEN=$B run_client "$GP_TESTBIN/busy" 50 4) || fail "bob's busy: $out"
stop_busy Q
stop_busy H
wait_for '.sessions | length == 0' 20
jq -c '{tenant, gpu_busy_seconds, held_s}' "$ACCT"
jq -s -e 'map(select(.tenant == "bob"))[0].gpu_busy_seconds >= 0.2' "$ACCT" >/dev/null ||
	fail "bob's unshared session: $(cat "$ACCT")"
gp_stop
echo PASS
