#!/bin/bash
# Peers that never finish the handshake. One that has not sent its first message whole (a
# TLS record) gets no worker and is closed after first_byte_timeout, however it trickles;
# one that sends a whole record and stalls gets a worker and handshake_timeout seconds for
# TLS and Hello together. Real clients past max_handshakes wait for a slot: not refused.
. "$(dirname "$0")/lib.sh"

gp_config "handshake_timeout 2" "max_handshakes 1" "first_byte_timeout 1"
gp_start
host=${GPUPOOL_SERVER%:*}
port=${GPUPOOL_SERVER##*:}
# One byte of a TLS record header every 0.3 s: the record never completes.
( exec 7<>"/dev/tcp/$host/$port"; for _ in $(seq 1 12); do printf '\026' >&7; sleep 0.3; done ) \
	2>/dev/null &
trickler=$!
for _ in $(seq 1 200); do
	grep -q "sent no first message" "$T/daemon.log" && break
	sleep 0.05
done
grep -q "sent no first message within 1 s" "$T/daemon.log" ||
	fail "the trickling peer should be closed at first_byte_timeout"
assert_status '.sessions | length == 0' "a peer that never sent a whole record got a worker"
# A whole record with the start of a ClientHello that never ends: it takes the one slot.
( exec 7<>"/dev/tcp/$host/$port"; printf '\026\003\001\000\004\001\000\020\000' >&7; sleep 10 ) &
staller=$!
wait_for '.sessions | length == 1' 5
# A real client waits for that slot instead of being turned away, and runs.
out=$(GPUPOOL_CONNECT_TIMEOUT=0 run_client "$GP_STAGE/bin/vector_add" 1000) ||
	fail "a real client behind a stalled handshake: $out"
case "$out" in *PASSED*) ;; *) fail "vector_add: $out" ;; esac
grep -q "no TLS handshake within the deadline" "$T/daemon.log" || fail "the deadline should be logged"
if grep -q "refused: max_handshakes" "$T/daemon.log"; then fail "nobody should be refused"; fi
kill "$trickler" "$staller" 2>/dev/null || true
gp_stop
echo PASS
