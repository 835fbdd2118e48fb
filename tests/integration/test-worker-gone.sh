#!/bin/bash
# The session's worker killed while one client thread sends a large copy, another waits in
# cuStreamSynchronize and a third makes small calls: every thread's call returns an error
# (CUDA_ERROR_DEVICE_UNAVAILABLE, 46), none waits on forever. A few rounds, killed at
# different points. The time limit only keeps a hang from stalling CI; it judges no speed.
# GONE_SPIN (the kernel's iterations) and GONE_ROUNDS (the rounds' numbers) vary it by hand.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=512M
spin=${GONE_SPIN:-20000000}
[ -n "${GP_SAN_RUNTIME:-}" ] && spin=2000000

gp_start
k=0
for round in ${GONE_ROUNDS:-1 2 3 4}; do
	k=$((k + 1))
	out="$T/gone$k.out"
	rm -f "$out"
	env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" timeout -s KILL 120 \
		"$GP_TESTBIN/worker_gone" 64 "$spin" >"$out" 2>"$T/gone$k.err" &
	pid=$!
	for _ in $(seq 1 1200); do
		grep -q READY "$out" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	grep -q '^READY' "$out" || fail "round $round: the client never got going: $(cat "$out" "$T/gone$k.err")"
	# A different moment in the threads' loops each round.
	sleep "0.$(( round * 2 ))"
	wpid=$(status_json | jq -r '.sessions[0].worker_pid')
	[ -n "$wpid" ] && [ "$wpid" != null ] || fail "round $round: no worker pid"
	kill -KILL "$wpid"
	rc=0
	wait "$pid" || rc=$?
	echo "round $round: $(tr '\n' ' ' <"$out")"
	[ "$rc" -eq 0 ] || fail "round $round: the client ended with $rc (137: a thread never returned): $(cat "$out" "$T/gone$k.err")"
	for th in copy sync small; do
		grep -q "^$th: 46$" "$out" || fail "round $round: thread $th should have failed with 46: $(cat "$out")"
	done
	wait_for '.sessions | length == 0' 10
done
kill -0 "$DAEMON_PID" || fail "the daemon died"
gp_stop
echo PASS
