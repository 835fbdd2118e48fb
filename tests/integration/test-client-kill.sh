#!/bin/bash
# kill -9 of a client in the middle of a copy: within a second the session is gone and
# its memory free; then a worker killed by a signal is reaped and the pool keeps serving.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

gp_start
hold A 16777216 1 --loop
case "$HELD" in READY*) ;; *) fail "copying session: $HELD" ;; esac
sleep 0.3
# 16 MiB allocated and its context's 9 MiB (softgpu's default heap and printf buffer).
assert_status '.gpus[0].memory_used == 26214400' "25 MiB in use while copying"
kill -KILL "$A_PID"
start=$(date +%s%N)
wait_for '.sessions | length == 0' 5
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "session gone ${ms} ms after kill -9"
# The worker notices at once, its watchdog within a second at the latest; 5 s leaves room
# for a loaded machine (wait_for above gives up at 5 s anyway).
[ "$ms" -le 5000 ] || fail "the session outlived its client by ${ms} ms"
assert_status '.gpus[0].memory_used == 0 and .gpus[0].memory_reserved == 0' "memory must be free"

# A client that forks and exits: the session ends with it, not with its lingering child.
out=$(run_client "$GP_TESTBIN/forker" 20)
echo "$out"
case "$out" in *"child: cuMemAlloc failed"*) ;; *) fail "CUDA in a forked child: $out" ;; esac
wait_for '.sessions | length == 0' 5
pkill -f "$GP_TESTBIN/forker" || true

# The worker itself killed: reaped, logged, and the daemon serves the next client.
hold B 4096
wpid=$(status_json | jq -r '.sessions[0].worker_pid')
kill -KILL "$wpid"
wait_for '.sessions | length == 0' 5
grep -q "killed by signal 9" "$T/daemon.log" || fail "the daemon should log how the worker died"
release B && fail "the client of a killed worker should see an error"
out=$(run_client "$GP_STAGE/bin/vector_add" 10000) || fail "the pool stopped serving: $out"
kill -0 "$DAEMON_PID" || fail "the daemon died"
gp_stop
echo PASS
