#!/bin/bash
# A client killed while the GPU works through its queue of long kernels: its session ends
# within seconds (the worker notices the hang-up while it waits in the driver), not when the
# queue is done. And a pool shutting down keeps its drain_grace: a worker busy in a call
# still ends when told, without the supervisor having to kill it.
. "$(dirname "$0")/lib.sh"

gp_config "drain_grace 1"
gp_start
# Each kernel spins for many seconds on softgpu; 300 of them would take an hour.
env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/spin" 4000000000 300 \
	>"$T/spin.out" 2>&1 &
SPIN_PID=$!
for _ in $(seq 1 600); do grep -q QUEUED "$T/spin.out" && break; sleep 0.05; done
grep -q QUEUED "$T/spin.out" || fail "spin: $(cat "$T/spin.out")"
wait_for '(.sessions | length) == 1 and .sessions[0].state == "active"' 10
kill -KILL "$SPIN_PID"
wait "$SPIN_PID" 2>/dev/null || true
# Generous for a loaded machine; before the watchdog it took as long as the queue.
wait_for '.sessions | length == 0' 15
grep -q "the client is gone" "$T/daemon.log" || fail "the worker should log why it ended"

# Shutdown in the middle of a long kernel.
env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/spin" 4000000000 3 \
	>"$T/spin2.out" 2>&1 &
SPIN_PID=$!
for _ in $(seq 1 600); do grep -q QUEUED "$T/spin2.out" && break; sleep 0.05; done
wait_for '(.sessions | length) == 1 and .sessions[0].state == "active"' 10
gp_stop
if grep -q "ignored SIGTERM" "$T/daemon.log"; then
	fail "a busy worker ignored SIGTERM: shutdown took longer than drain_grace"
fi
grep -q "ended by the pool in the middle of a call" "$T/daemon.log" ||
	fail "the worker should log that it ended mid-call"
wait "$SPIN_PID" 2>/dev/null || true
echo PASS
