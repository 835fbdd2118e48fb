#!/bin/bash
# Shares and borrowing: a tenant without a guarantee borrows the whole idle GPU; when it
# ends, a tenant within its guarantee is admitted before a borrowing tenant that queued
# earlier. poolctl says where each waiter is in the queue's order and why it waits.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G
A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb

gp_config "token $A alice" "token $B bob" "tenant alice guarantee_memory=768M" \
	"queue_timeout 60"
gp_start
GPUPOOL_TOKEN=$B GPUPOOL_MEMORY=1G hold B1 4096
case "$HELD" in READY*) ;; *) fail "bob should borrow the idle GPU: $HELD" ;; esac
assert_status '.sessions[0].share == ""' "bob has no guarantee"
# bob queues first, alice second; both ask for more than is left when the other is in.
GPUPOOL_TOKEN=$B GPUPOOL_MEMORY=768M hold_start B2 4096
wait_for '.sessions | map(select(.state == "queued" and .tenant == "bob")) | length == 1' 10
GPUPOOL_TOKEN=$A GPUPOOL_MEMORY=768M hold_start A1 4096
wait_for '.sessions | map(select(.state == "queued" and .tenant == "alice")) | length == 1' 10
assert_status '.sessions | map(select(.state == "queued")) | sort_by(.queue_place) |
	map([.tenant, .queue_place, .waiting_for]) == [["alice", 1, "capacity"], ["bob", 2, "capacity"]]' \
	"alice (within her guarantee) should be first in the queue's order, bob second"
assert_status '.sessions | map(select(.tenant == "alice"))[0].share == "within"' \
	"alice holds nothing of her guarantee"
"$POOLCTL" -s "$T/admin.sock" status | tee "$T/status.txt"
grep -q "#1 in queue, waits for room" "$T/status.txt" || fail "poolctl should say alice is next"
grep -q "#2 in queue, waits for room" "$T/status.txt" || fail "poolctl should say bob is second"
# bob's first session ends: alice goes, although bob's waiter came first.
release B1
hold_line A1 30
case "$HELD" in READY*) ;; *) fail "alice was not admitted: $HELD" ;; esac
assert_status '.sessions | map(select(.tenant == "bob" and .state == "queued")) |
	map([.queue_place, .waiting_for]) == [[1, "capacity"]]' \
	"bob's waiter should still wait, for room (256M left)"
assert_status '.sessions | map(select(.tenant == "alice"))[0] | [.state, .share] == ["active", "within"]' \
	"alice should be active, within her guarantee"
release A1
hold_line B2 30
case "$HELD" in READY*) ;; *) fail "bob's waiter was not admitted after alice: $HELD" ;; esac
release B2
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
