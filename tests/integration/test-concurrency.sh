#!/bin/bash
# Many sessions at once, over TLS and the Unix socket, with cudart programs among them and
# one client killed mid-run: every survivor's result is right, and when all have gone the
# pool holds no session, no reservation and no memory.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_MEMORY=2G

gp_config "listen_unix $T/c.sock" "default_memory 64M" "max_sessions 32" "max_handshakes 32"
gp_start
RT=$GP_BUILD/tests/runtime
n=12
pids=()
for i in $(seq 1 $n); do
	srv=$GPUPOOL_SERVER
	[ $((i % 2)) -eq 0 ] && srv=unix:$T/c.sock
	case $((i % 3)) in
	0) prog=("$GP_STAGE/bin/vector_add" $((5000 + i * 997))) ;;
	1) prog=("$RT/rt_threads.static") ;;
	2) prog=("$RT/rt_async.shared") ;;
	esac
	GPUPOOL_SERVER=$srv run_client "${prog[@]}" >"$T/c$i.out" 2>&1 &
	pids+=($!)
done
# One more that holds memory and is killed while the others run.
hold_start K 8388608
hold_line K
[ -n "$HELD" ] || fail "the held session did not start"
kill -9 "$K_PID"
wait "$K_PID" 2>/dev/null || true

for i in $(seq 1 $n); do
	wait "${pids[$((i - 1))]}" || fail "client $i failed: $(cat "$T/c$i.out")"
	grep -q "PASSED" "$T/c$i.out" || fail "client $i: $(cat "$T/c$i.out")"
done
wait_for '.sessions | length == 0' 20
status_json >"$T/end.json"
jq -e '.gpus | all(.memory_reserved == 0 and .sessions == 0)' "$T/end.json" >/dev/null ||
	fail "the pool still holds something: $(jq -c .gpus "$T/end.json")"
[ "$(grep -c "ended: tenant" "$T/daemon.log")" -eq $((n + 1)) ] ||
	fail "every session should end with one summary line"
gp_stop
echo PASS
