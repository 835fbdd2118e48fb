#!/bin/bash
# A launch held for a compute share (compute_enforce time) does not hold the worker's main
# thread: a waiter kernel spins on stream 1 until a flag is set, keeping the session over its
# 10% share; a second kernel is then launched on stream 2 (held) and, after it, a copy on
# stream 3 sets the flag. The copy gets through while the launch is held, the waiter ends, the
# share refills, the held kernel runs: both results are checked, and the pool's accounting
# shows the launch was held. (With the hold on the main thread the copy was never read: the
# waiter spun on, the share never refilled, and the session hung.)
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M
gp_config "compute_enforce time" "kernel_timeout 120"
gp_start
rm -f "$T/G.in"
mkfifo "$T/G.in"
env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" GPUPOOL_COMPUTE=10% \
	"$GP_TESTBIN/gate_flag" <"$T/G.in" >"$T/G.out" 2>"$T/G.err" &
G_PID=$!
trap 'kill -KILL "$G_PID" 2>/dev/null || true; cleanup' EXIT # a hung client is not left behind
exec {G_IN}>"$T/G.in"
for _ in $(seq 1 1200); do
	grep -q . "$T/G.out" 2>/dev/null && break
	sleep 0.05
done
[ "$(head -n 1 "$T/G.out")" = SPINNING ] || fail "gate_flag: $(cat "$T/G.out" "$T/G.err")"
assert_status '.sessions[0] | .compute == 10 and .compute_enforce == "time"' "a 10% share held by time"
# The waiter's spinning takes the session past its share (a bucket of 10% of a second):
# launches are held from then on.
wait_for '.sessions[0].gpu_busy_seconds > 0.3' 60
echo go >&"$G_IN"
for _ in $(seq 1 1200); do
	[ "$(sed -n 2p "$T/G.out")" != "" ] && break
	sleep 0.05
done
[ "$(sed -n 2p "$T/G.out")" = "DONE ok" ] ||
	fail "the held launch's kernel should run once the copy after it set the flag: $(cat "$T/G.out" "$T/G.err")"
assert_status '.sessions[0].held_seconds > 0' "the second launch should have been held"
exec {G_IN}>&-
wait "$G_PID" || fail "gate_flag: $(cat "$T/G.out" "$T/G.err")"
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
