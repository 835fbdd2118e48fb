#!/bin/bash
# Connections from one address that send a complete first TLS record and then stall (the
# ClientHello it begins never ends) each hold a worker in TLS until handshake_timeout; they
# may take only max_handshakes_per_address of the listener's max_handshakes slots, so a
# client from another address is admitted while they stall (checked by order: the stalled
# ones are still in the handshake when its program has finished).
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1

gp_config "max_handshakes 4" "max_handshakes_per_address 2" "handshake_timeout 60" "warm_workers 0"
gp_start
port=${GPUPOOL_SERVER##*:}
# Ten stalls from 127.0.0.2: a 4-byte record holding the start of a 4 KiB ClientHello.
python3 - "$port" >"$T/stall.log" 2>&1 <<'PY' &
import socket, sys, time
socks = []
for _ in range(10):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", int(sys.argv[1])))
    s.sendall(bytes([0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x10, 0x00]))
    socks.append(s)
print("stalling", flush=True)
time.sleep(50)
PY
stall_pid=$!
wait_for '[.sessions[] | select(.state == "handshake" and (.client | startswith("127.0.0.2:")))] | length == 2' 20
sleep 1 # the pump has had its chances to give the others slots: still only 2
assert_status '[.sessions[] | select(.state == "handshake")] | length == 2' \
	"one address may hold only max_handshakes_per_address handshake slots"
out=$(run_client "$GP_STAGE/bin/vector_add" 1000) || fail "vector_add from 127.0.0.1: $out"
case "$out" in *PASSED*) ;; *) fail "vector_add: $out" ;; esac
assert_status '[.sessions[] | select(.state == "handshake" and (.client | startswith("127.0.0.2:")))] | length == 2' \
	"the stalled handshakes should still be stalled when the other client is done"
kill "$stall_pid" 2>/dev/null || true
wait "$stall_pid" 2>/dev/null || true
wait_for '.sessions | length == 0' 20
gp_stop
echo PASS
