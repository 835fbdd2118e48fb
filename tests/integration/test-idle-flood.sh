#!/bin/bash
# The unauthenticated lock-out: 200 connections from one address that say nothing or
# trickle, reopened as the pool closes them, hold no worker and no handshake slot. A real
# client from the same address is admitted on its first try while they are held, and the
# Unix socket, with budgets of its own, admits too.
. "$(dirname "$0")/lib.sh"

gp_config "listen_unix $T/pool.sock" "first_byte_timeout 2"
gp_start
host=${GPUPOOL_SERVER%:*}
port=${GPUPOOL_SERVER##*:}
"$GP_TESTBIN/idle_flood" "$host" "$port" 200 120 >"$T/flood.out" 2>&1 &
flood=$!
trap 'kill "$flood" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 1 600); do
	grep -q "^open 200" "$T/flood.out" && break
	kill -0 "$flood" 2>/dev/null || fail "idle_flood: $(cat "$T/flood.out")"
	sleep 0.05
done
grep -q "^open 200" "$T/flood.out" || fail "idle_flood did not get its connections open"
assert_status '.sessions | length == 0' "a connection that sent nothing whole got a worker"

# GPUPOOL_CONNECT_TIMEOUT=0: no second try, so admitted means admitted at once.
out=$(GPUPOOL_CONNECT_TIMEOUT=0 run_client "$GP_STAGE/bin/vector_add" 100000) ||
	fail "a real client during the flood: $out"
case "$out" in *"100000 elements"*PASSED*) ;; *) fail "vector_add during the flood: $out" ;; esac
out=$(GPUPOOL_SERVER="unix:$T/pool.sock" GPUPOOL_CONNECT_TIMEOUT=0 \
	run_client "$GP_STAGE/bin/vector_add" 5000) || fail "the Unix socket during the flood: $out"
case "$out" in *"5000 elements"*PASSED*) ;; *) fail "vector_add on the Unix socket: $out" ;; esac

# The flood outlives first_byte_timeout: its sockets are closed and come back, and still
# nothing changes for real clients.
for _ in $(seq 1 400); do
	grep -q "sent no first message" "$T/daemon.log" && break
	sleep 0.05
done
grep -q "sent no first message within 2 s" "$T/daemon.log" ||
	fail "silent connections should be closed at first_byte_timeout"
grep -q "max_pending_per_address 128" "$T/daemon.log" ||
	fail "200 from one address should be over max_pending_per_address"
out=$(GPUPOOL_CONNECT_TIMEOUT=0 run_client "$GP_STAGE/bin/vector_add" 3000) ||
	fail "a real client while the flood reopens: $out"
case "$out" in *"3000 elements"*PASSED*) ;; *) fail "vector_add while the flood reopens: $out" ;; esac
kill -0 "$flood" 2>/dev/null || fail "the flood should still be running: $(cat "$T/flood.out")"
# The real clients' sessions end on their own (slowly under the sanitizers); the flood's
# connections, were they sessions, would stay.
wait_for '.sessions | length == 0' 30
kill "$flood"
wait "$flood" 2>/dev/null || true
gp_stop
echo PASS
