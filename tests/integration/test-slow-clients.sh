#!/bin/bash
# Peers that never finish the handshake: a connection gets handshake_timeout seconds for
# TLS and Hello together, however slowly it trickles bytes, and at most max_handshakes of
# them wait at once, so they cannot take the slots real clients need.
. "$(dirname "$0")/lib.sh"

gp_config "handshake_timeout 1" "max_handshakes 1"
gp_start
host=${GPUPOOL_SERVER%:*}
port=${GPUPOOL_SERVER##*:}
# One byte of a TLS record header every 0.3 s: each read succeeds, the deadline does not move.
( exec 7<>"/dev/tcp/$host/$port"; for _ in $(seq 1 12); do printf '\026' >&7; sleep 0.3; done ) &
trickler=$!
wait_for '.sessions | length == 1' 5
# The slot for unauthenticated peers is taken: the next connection is turned away at once.
set +e
out=$(GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
set -e
case "$out" in *PASSED*) fail "max_handshakes 1 let a second handshake in" ;; esac
grep -q "refused: max_handshakes reached" "$T/daemon.log" || fail "the refusal should be logged"
# The trickler is cut off at its deadline, long before it stops sending.
start=$(date +%s%N)
wait_for '.sessions | length == 0' 5
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "the trickling peer was dropped ${ms} ms after the check started"
grep -q "no TLS handshake within the deadline" "$T/daemon.log" || fail "the deadline should be logged"
kill "$trickler" 2>/dev/null || true
out=$(run_client "$GP_STAGE/bin/vector_add" 1000) || fail "a real client after that: $out"
gp_stop
echo PASS
