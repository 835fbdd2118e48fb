#!/bin/bash
# Host limits per worker (daemon/supervisor/cgroup.c): with worker_host_memory 256M a
# session whose worker uses more host memory (on softgpu its device memory is host memory)
# is OOM-killed by the kernel, the log says why and its client gets an error, while a
# concurrent session goes on; with worker_tasks 64 a client that makes softgpu start a
# thread per stream past it gets CUDA_ERROR_OUT_OF_MEMORY and its session goes on; poolctl
# shows a session's host memory within its limit; the cgroups go with their workers; a bad
# value names file:line. Needs writable cgroups (root): elsewhere it says SKIP, exit 77.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=2G SOFTGPU_THREADS=2

gp_config "worker_host_memory 256M" "worker_tasks 64" "worker_cpu lots"
if "$GP_STAGE/bin/gpupoold" -n -f "$T/gpupoold.conf" >"$T/check.out" 2>&1; then
	fail "worker_cpu lots should not parse"
fi
grep -q "gpupoold.conf:9: 'worker_cpu lots'" "$T/check.out" ||
	fail "the error should name file:line: $(cat "$T/check.out")"

# With no cgroup the pool still shows each worker's host memory: its resident set.
gp_config "cgroup off"
gp_start
grep -q "cgroup off: worker_host_memory, worker_tasks and worker_cpu are not enforced" \
	"$T/daemon.log" || fail "the log should say that nothing is enforced with cgroup off"
GPUPOOL_MEMORY=128M hold_start R $((32 << 20))
hold_line R
case "$HELD" in READY*) ;; *) fail "session R: $HELD" ;; esac
assert_status '.sessions[0] | .host_memory_from == "rss" and .host_memory_limit == 0 and .host_memory >= 33554432' \
	"without a cgroup the session should show its worker's RSS, at least the 32 MiB it holds"
echo >&"$R_IN"
wait "$R_PID" || fail "session R should end cleanly"
gp_stop

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: cgroups are not writable here (not root)"
	exit 77
fi
gp_config "worker_host_memory 256M" "worker_tasks 64" "worker_cpu 150%" \
	"accounting_file $T/acct.jsonl"
gp_start
grep -q "cgroup v[12]: a cgroup per worker under" "$T/daemon.log" || {
	if grep -q "no writable cgroup" "$T/daemon.log"; then
		grep "no writable cgroup" "$T/daemon.log"
		echo "SKIP: no writable cgroup (as root): nothing to enforce with"
		exit 77
	fi
	fail "the daemon should say which cgroups it uses"
}
BASE=$(sed -n 's/.*cgroup v[12]: a cgroup per worker under \([^ ,]*\).*/\1/p' "$T/daemon.log" | head -n 1)
[ -d "$BASE" ] || fail "the workers' cgroup base $BASE is not there"

# A session that holds 64 MiB: its worker's host memory shows, from its cgroup, within 256M.
GPUPOOL_MEMORY=128M hold_start A $((64 << 20))
hold_line A
case "$HELD" in READY*) ;; *) fail "session A: $HELD" ;; esac
assert_status '.sessions | length == 1' "one session"
assert_status '.sessions[0] | .host_memory_from == "cgroup" and .host_memory_limit == 268435456' \
	"the session should show its cgroup's limit"
assert_status '.sessions[0] | .host_memory >= 67108864 and .host_memory <= .host_memory_limit' \
	"the session's host memory should hold its 64 MiB and be within its limit"
ID_A=$(jq -r '.sessions[0].id' "$T/status.json")
PID_A=$(jq -r '.sessions[0].worker_pid' "$T/status.json")
[ -d "$BASE/session-$ID_A" ] || fail "no cgroup $BASE/session-$ID_A"
grep -qx "$PID_A" "$BASE/session-$ID_A/cgroup.procs" || fail "worker $PID_A is not in its cgroup"
# Its tasks and CPU limits are there too (v1: in the pids and cpu hierarchies; v2: one dir).
DIRS=$(sed -n 's/.*cgroup v[12]: a cgroup per worker under \([^(]*\).*/\1/p' "$T/daemon.log" | head -n 1)
tasks= cpu=
for dir in ${DIRS//,/ }; do
	f=$dir/session-$ID_A
	[ -f "$f/pids.max" ] && tasks=$(cat "$f/pids.max")
	[ -f "$f/cpu.cfs_quota_us" ] && cpu=$(cat "$f/cpu.cfs_quota_us")
	[ -f "$f/cpu.max" ] && cpu=$(cat "$f/cpu.max")
done
[ "$tasks" = 64 ] || fail "session $ID_A's pids.max should be worker_tasks, 64: '$tasks'"
case "$cpu" in 150000 | "150000 100000") ;; *) fail "session $ID_A's CPU quota should be 150%: '$cpu'" ;; esac
"$POOLCTL" -s "$T/admin.sock" status | tee "$T/table.txt"
grep -q "HOST MEM" "$T/table.txt" && grep -q "host limit 256.0 MiB" "$T/table.txt" ||
	fail "poolctl status should show the host memory and its limit"

# A session that sets 512 MiB of device memory: its worker is OOM-killed, its client errs.
rc=0
timeout 120 env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" GPUPOOL_MEMORY=768M "$GP_TESTBIN/host_limits" grow \
	$((512 << 20)) >"$T/grow.out" 2>&1 || rc=$?
cat "$T/grow.out"
[ "$rc" -ne 124 ] || fail "the client of the OOM-killed worker hung"
[ "$rc" -eq 0 ] && grep -q "^grow: CUDA_ERROR_" "$T/grow.out" ||
	fail "the client should get an error when its worker goes past worker_host_memory"
for _ in $(seq 1 100); do
	grep -q "ended: worker exceeded worker_host_memory (268435456 bytes)" "$T/daemon.log" && break
	sleep 0.1
done
grep "exceeded worker_host_memory" "$T/daemon.log" ||
	fail "the log should say the worker exceeded worker_host_memory"
for _ in $(seq 1 100); do
	grep -q '"ended":"host_memory"' "$T/acct.jsonl" 2>/dev/null && break
	sleep 0.1
done
grep -q '"program":"host_limits".*"ended":"host_memory"' "$T/acct.jsonl" ||
	fail "the session's accounting record should say it ended at host_memory: $(cat "$T/acct.jsonl" 2>&1)"

# Session A did not notice: it is still active, and its memory reads back.
assert_status ".sessions | map(select(.id == $ID_A))[0].state == \"active\"" "session A should go on"
echo >&"$A_IN"
wait "$A_PID" || fail "session A should end cleanly: $(cat "$T/A.out")"
grep -q DONE "$T/A.out" || fail "session A: $(cat "$T/A.out")"

# 200 busy streams want 200 threads: past worker_tasks those fail, reported as the
# CUDA error of the call that synchronizes, and the session goes on.
rc=0
timeout 120 env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" GPUPOOL_MEMORY=128M "$GP_TESTBIN/host_limits" streams 200 \
	>"$T/streams.out" 2>&1 || rc=$?
cat "$T/streams.out"
grep -q "^streams: 200 sync: CUDA_ERROR_OUT_OF_MEMORY" "$T/streams.out" ||
	fail "threads past worker_tasks should fail the streams' work with CUDA_ERROR_OUT_OF_MEMORY"
[ "$rc" -eq 0 ] && grep -q "^after: CUDA_SUCCESS" "$T/streams.out" ||
	fail "the session should go on after worker_tasks refused its threads"
! grep -q "^destroy " "$T/streams.out" ||
	fail "every stream should be destroyed, its thread given back, at worker_tasks"
for _ in $(seq 1 100); do # said once its worker is reaped
	grep -q "worker_tasks (64) refused" "$T/daemon.log" && break
	sleep 0.1
done
grep -q "worker_tasks (64) refused" "$T/daemon.log" || fail "the log should say worker_tasks refused threads"

# A tenant's host_memory= replaces worker_host_memory for its sessions (a reload applies).
echo "tenant default host_memory=192M" >>"$T/gpupoold.conf"
"$POOLCTL" -s "$T/admin.sock" reload >/dev/null || fail "poolctl reload"
GPUPOOL_MEMORY=128M hold_start B $((16 << 20))
hold_line B
case "$HELD" in READY*) ;; *) fail "session B: $HELD" ;; esac
assert_status '.sessions[0] | .host_memory_limit == 201326592 and .host_memory > 0 and .host_memory <= .host_memory_limit' \
	"the tenant's host_memory=192M should be its session's limit"
ID_B=$(jq -r '.sessions[0].id' "$T/status.json")
[ "$(cat "$BASE/session-$ID_B/memory.limit_in_bytes" 2>/dev/null || cat "$BASE/session-$ID_B/memory.max")" = 201326592 ] ||
	fail "the cgroup of session $ID_B should have the tenant's limit"
echo >&"$B_IN"
wait "$B_PID" || fail "session B should end cleanly: $(cat "$T/B.out")"

# Every session's cgroup goes with its worker.
wait_for '.sessions | length == 0' 20
for _ in $(seq 1 100); do
	ls -d "$BASE"/session-* >/dev/null 2>&1 || break
	sleep 0.1
done
if ls -d "$BASE"/session-* 2>/dev/null; then
	fail "sessions' cgroups are left behind"
fi
gp_stop
case "$BASE" in
*/gpupoold-*) [ ! -d "$BASE" ] || fail "the daemon's v1 cgroup $BASE is left behind" ;;
esac

# Under a `cgroup PATH` (which outlives the daemon) a killed daemon left session-1 with a
# process still in it: the next daemon ends and removes it at start, and its own session 1
# gets a cgroup of its own (it was joined to the old one, its process and its counters).
CGP=/gpupool-test-$$
gp_config "cgroup $CGP"
: >"$T/daemon.log"
gp_start
PBASE=$(sed -n 's/.*cgroup v[12]: a cgroup per worker under \([^ ,]*\).*/\1/p' "$T/daemon.log" | head -n 1)
PDIRS=$(sed -n 's/.*cgroup v[12]: a cgroup per worker under \([^(]*\).*/\1/p' "$T/daemon.log" | head -n 1)
gp_stop
case "$PBASE" in *"$CGP") ;; *) fail "cgroup $CGP should be used: '$PBASE'" ;; esac
# The stale process and the PATH's directories go however the test ends.
path_cleanup() {
	[ -z "${STALE:-}" ] || kill -KILL "$STALE" 2>/dev/null || true
	for dir in ${PDIRS//,/ }; do
		for _ in $(seq 1 50); do
			rmdir "$dir"/*/ 2>/dev/null || true
			rmdir "$dir" 2>/dev/null && break
			sleep 0.1
		done
	done
}
trap 'path_cleanup; cleanup' EXIT
mkdir -p "$PBASE/session-1"
sleep 600 &
STALE=$!
echo "$STALE" >"$PBASE/session-1/cgroup.procs"
: >"$T/daemon.log"
gp_start
for _ in $(seq 1 100); do
	[ -d "$PBASE/session-1" ] || break
	sleep 0.1
done
[ ! -d "$PBASE/session-1" ] || fail "$PBASE/session-1, left from before, should be removed at start"
wait "$STALE" 2>/dev/null || true
STALE=
hold_start C $((16 << 20))
hold_line C
case "$HELD" in READY*) ;; *) fail "session C: $HELD" ;; esac
assert_status '.sessions | length == 1' "one session"
ID_C=$(jq -r '.sessions[0].id' "$T/status.json")
PID_C=$(jq -r '.sessions[0].worker_pid' "$T/status.json")
[ "$(cat "$PBASE/session-$ID_C/cgroup.procs")" = "$PID_C" ] ||
	fail "session $ID_C's cgroup should hold its worker $PID_C alone: $(cat "$PBASE/session-$ID_C/cgroup.procs")"
echo >&"$C_IN"
wait "$C_PID" || fail "session C should end cleanly: $(cat "$T/C.out")"
wait_for '.sessions | length == 0' 20
gp_stop
path_cleanup
for dir in ${PDIRS//,/ }; do
	[ ! -d "$dir" ] || fail "$dir should be removable: a worker's cgroup is left in it"
done
echo PASS
