#!/bin/bash
# Copies in two contexts while one of them is destroyed (ctx_staging.c): directly on
# softgpu, then through the pool, where the worker keeps page-locked staging per context
# (daemon/worker/mem.c). A context's destroy drops only its own staging: over rounds of a
# 32 MiB copy in context A, each with a context B made and destroyed, the pool's report of
# the session's host memory does not grow by a copy's staging per round (it did when every
# destroy dropped A's staging too, and A made it anew). A copy in A queued while B goes
# does not use B's staging, which went with B.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=2G GPUPOOL_MEMORY=1G

out=$(on_softgpu "$GP_TESTBIN/ctx_staging") || fail "directly on softgpu: $out"
case "$out" in *PASS) ;; *) fail "directly on softgpu: $out" ;; esac
gp_start

# host_memory of the only session, once the client printed line $1.
host_memory_at() {
	for _ in $(seq 1 1200); do
		grep -qx "$1" "$T/c.out" && break
		kill -0 "$CPID" 2>/dev/null || fail "the client ended before '$1': $(cat "$T/c.out" "$T/c.err")"
		sleep 0.05
	done
	grep -qx "$1" "$T/c.out" || fail "no '$1' from the client: $(cat "$T/c.out")"
	status_json | jq -e '.sessions[0].host_memory'
}

mkfifo "$T/c.in"
run_client "$GP_TESTBIN/ctx_staging" pause <"$T/c.in" >"$T/c.out" 2>"$T/c.err" &
CPID=$!
exec {CIN}>"$T/c.in"
m1=$(host_memory_at "round 1")
echo >&"$CIN"
m8=$(host_memory_at "round 8")
echo >&"$CIN"
exec {CIN}>&-
wait "$CPID" || fail "through the pool: $(cat "$T/c.out" "$T/c.err")"
grep -qx PASS "$T/c.out" || fail "through the pool: $(cat "$T/c.out")"
echo "the session's host memory after round 1: $m1, after round 8: $m8"
# Seven more rounds each made 32 MiB of staging anew when A's was dropped: 224 MiB.
[ $((m8 - m1)) -lt $((96 << 20)) ] ||
	fail "host memory grew by $((m8 - m1)) bytes over 7 rounds: context A's staging was made anew"
wait_for '.sessions | length == 0' 10
assert_status '.gpus[0].memory_used == 0' "the session's memory must be free"
gp_stop
echo PASS
