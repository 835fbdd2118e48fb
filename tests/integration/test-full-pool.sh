#!/bin/bash
# A full pool (max_sessions reached) keeps a connection waiting for queue_timeout and then
# closes it; the client tries again until GPUPOOL_CONNECT_TIMEOUT, then cuInit fails with
# a reason (not SIGPIPE); a client that lists another pool goes on to it.
. "$(dirname "$0")/lib.sh"

gp_config "max_sessions 1" "queue_timeout 1"
gp_start
full=$GPUPOOL_SERVER
hold A 4096
set +e
out=$(GPUPOOL_LOG=error GPUPOOL_CONNECT_TIMEOUT=2 run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
rc=$?
set -e
echo "$out"
[ $rc -ne 0 ] || fail "vector_add ran on a full pool"
[ $rc -lt 128 ] || fail "the client was killed by signal $((rc - 128))"
case "$out" in *"cuInit(0) failed: CUDA_ERROR_NO_DEVICE"*) ;; *) fail "cuInit should fail: $out" ;; esac
case "$out" in *"pool was busy"*"GPUPOOL_CONNECT_TIMEOUT"*"may be full"*) ;;
*) fail "the client should say why: $out" ;; esac
grep -q "closed: it waited 1 s for a worker (max_sessions reached)" "$T/daemon.log" ||
	fail "the daemon should log why it closed the connection"

# A second pool, listed after the full one, serves the session.
sed -e "s|^admin_socket .*|admin_socket $T/b.sock|" -e "/^max_sessions/d" \
	"$T/gpupoold.conf" >"$T/b.conf"
"$GP_STAGE/bin/gpupoold" -f "$T/b.conf" 2>>"$T/b.log" &
B_PID=$!
trap 'kill -KILL "$B_PID" 2>/dev/null || true; cleanup' EXIT
other=
for _ in $(seq 1 100); do
	if "$POOLCTL" -s "$T/b.sock" status --json >"$T/b.json" 2>/dev/null; then
		other=$(jq -r .listen "$T/b.json")
		break
	fi
	sleep 0.1
done
[ -n "$other" ] || fail "the second pool did not start: $(cat "$T/b.log")"
out=$(GPUPOOL_SERVER="$full,$other" GPUPOOL_LOG=info \
	run_client "$GP_STAGE/bin/vector_add" 1000 2>&1) || fail "failover past a full pool: $out"
echo "$out"
case "$out" in *"on $other"*PASSED*) ;; *) fail "the second pool should have served: $out" ;; esac
kill -TERM "$B_PID"
wait "$B_PID" || fail "the second pool did not exit cleanly"

release A
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
