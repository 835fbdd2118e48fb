#!/bin/bash
# The walking skeleton end to end: gpupoold over TLS on loopback, softgpu as
# the driver, the unmodified vector_add example through the interposer; then a
# held session seen by `poolctl status --json` with its memory; then SIGTERM.
. "$(dirname "$0")/lib.sh"

gp_start
assert_status '.gpus | length == 1' "the inventory should list softgpu's one GPU"
assert_status '.gpus[0].memory_total > 0' "the GPU should report its memory"
assert_status '.sessions | length == 0' "no session yet"

out=$(run_client "$GP_STAGE/bin/vector_add" 100000) || fail "vector_add failed: $out"
echo "$out"
case "$out" in
*"100000 elements"*"PASSED"*) ;;
*) fail "vector_add did not print a checked result: $out" ;;
esac

# A session holding 3 allocations of 1 MiB: poolctl must show it and its memory, with what
# its context holds (softgpu's default 8 MiB heap and 1 MiB printf buffer): 12 MiB.
hold H 1048576 3
case "$HELD" in READY*) ;; *) fail "hold_session: $HELD" ;; esac
assert_status '.sessions | length == 1' "poolctl should show the held session"
assert_status '.sessions[0].memory_used == 12582912' "the session should use 12 MiB"
assert_status '.sessions[0].state == "active"' "the session should be active"
assert_status '.sessions[0].program == "hold_session"' "the session should name its program"
assert_status '.sessions[0].tenant == "default"' "without client certificates the tenant is default"
assert_status '.sessions[0].calls >= 8' "the session should count its calls"
assert_status '.gpus[0].memory_used == 12582912' "the GPU should show the session's memory"
"$POOLCTL" -s "$T/admin.sock" status
calls=$(status_json | jq '.sessions[0].calls')
release H || fail "hold_session failed"
grep -q DONE "$T/H.out" || fail "hold_session did not finish: $(cat "$T/H.out")"
wait_for '.sessions | length == 0' 5
assert_status '.gpus[0].memory_used == 0' "memory is free after the session ends"

# Device queries never cross the network: 100 rounds of every attribute add no calls.
hold Q 1048576 3 --attrs 100
case "$HELD" in READY*) ;; *) fail "hold_session --attrs: $HELD" ;; esac
assert_status ".sessions[0].calls == $calls" "attribute queries should not reach the pool"
release Q
wait_for '.sessions | length == 0' 5

# Device printf: the kernels' lines reach the client's stdout, before the synchronize returns.
out=$(run_client "$GP_TESTBIN/printer") || fail "printer: $out"
echo "$out"
[ "$(echo "$out" | grep -c '^thread [0-2] of block [01]: ')" = 6 ] || fail "six device lines: $out"
echo "$out" | grep -q '^thread 2 of block 1: 9  1.00 ok 1099511627776 ff$' || fail "formatting: $out"
[ "$(echo "$out" | tail -n 1)" = "printer: synchronized" ] || fail "device output after the sync"
grep -q "^thread" "$T/daemon.log" && fail "device output leaked into the daemon's log"

gp_stop
grep -q "session 1 ended" "$T/daemon.log" || fail "the worker should log its session summary"
echo "PASS"
