#!/bin/bash
# Misbehaving clients: each is refused or closed on its own, and the pool
# keeps serving everyone else.
. "$(dirname "$0")/lib.sh"

gp_start
"$GP_TESTBIN/raw_client" version || fail "a protocol version mismatch must be refused with a message"
"$GP_TESTBIN/raw_client" old-version || fail "a client of the previous protocol must be refused naming both versions"
"$GP_TESTBIN/raw_client" garbage || fail "a frame with a bad magic must close the session"
"$GP_TESTBIN/raw_client" oversize || fail "an oversized frame must close the session"
"$GP_TESTBIN/raw_client" type || fail "an unknown message type must close the session"
"$GP_TESTBIN/raw_client" foreign || fail "pointers and handles the session does not own must be refused"
"$GP_TESTBIN/raw_client" pools || fail "pool calls with handles and pointers the session does not own must be refused"
"$GP_TESTBIN/raw_client" image || fail "images reaching outside the bytes sent must be refused"
"$GP_TESTBIN/raw_client" launch-ex || fail "launch attributes the worker cannot honour must be refused"

# Device and host addresses never alias in the client (unified copies depend on it).
out=$(run_client "$GP_TESTBIN/alias" 2>&1) || fail "alias: $out"
echo "$out"

# An asynchronous failure is reported by the next synchronizing call, not by an allocation.
out=$(run_client "$GP_TESTBIN/deferred" 2>&1) || fail "deferred: $out"
echo "$out"

# A client that connects and never finishes TLS does not stop others.
exec 5<>/dev/tcp/${GPUPOOL_SERVER%:*}/${GPUPOOL_SERVER##*:}
printf 'not TLS at all\r\n\r\n' >&5

out=$(run_client "$GP_STAGE/bin/vector_add" 5000) || fail "the pool stopped serving: $out"
case "$out" in *PASSED*) ;; *) fail "vector_add: $out" ;; esac
exec 5>&-
wait_for '.sessions | length == 0' 10
grep -q "closing: malformed frame from the client" "$T/daemon.log" || fail "the daemon should log why it closed the session"
gp_stop
echo PASS
