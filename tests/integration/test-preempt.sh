#!/bin/bash
# Preemption: a preemptible session of a borrowing tenant holds the GPU; a session within its
# tenant's guarantee comes and waits for that room. The preemptible one is told (the log,
# poolctl), ended after preempt_grace; its client's stderr says why and its next call fails
# with CUDA_ERROR_DEVICE_UNAVAILABLE; the entitled one is admitted; the accounting record and
# the log say why. A session that is not preemptible is never ended.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G
A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb C=cccccccccccccccccccc
ACCT=$T/acct.jsonl

gp_config "token $A alice" "token $B bob" "token $C carol" \
	"tenant alice guarantee_memory=768M" "tenant carol preemptible=no" \
	"queue_timeout 120" "preempt_grace 60" "accounting_file $ACCT"
gp_start
# carol (not preemptible, no guarantee) holds 256M; bob (preemptible) borrows the rest.
GPUPOOL_TOKEN=$C GPUPOOL_MEMORY=256M GPUPOOL_PREEMPTIBLE=1 hold C1 4096
case "$HELD" in READY*) ;; *) fail "carol: $HELD" ;; esac
GPUPOOL_TOKEN=$B GPUPOOL_MEMORY=768M GPUPOOL_PREEMPTIBLE=1 hold B1 4096
case "$HELD" in READY*) ;; *) fail "bob: $HELD" ;; esac
assert_status '.sessions | map([.tenant, .preemptible]) | sort == [["bob", true], ["carol", false]]' \
	"bob's client made him preemptible; carol's line says no"
# alice, within her guarantee, needs bob's room: bob is noticed, with his grace.
GPUPOOL_TOKEN=$A GPUPOOL_MEMORY=768M hold_start A1 4096
wait_for '.sessions | map(select(.tenant == "bob"))[0].preempt_at > 0' 10
assert_status '.sessions | map(select(.tenant == "carol"))[0].preempt_at == 0' \
	"carol is not preemptible"
"$POOLCTL" -s "$T/admin.sock" status | tee "$T/status.txt"
grep -q "bob .*preempted, ends in [0-9]*s" "$T/status.txt" || fail "poolctl should show bob's preemption"
grep -q "session [0-9]* (tenant bob) is preemptible: it will be ended in 60 s (preempt_grace) to admit session [0-9]* (tenant alice, within its guarantee)" \
	"$T/daemon.log" || fail "the notice should be logged"
assert_status '.sessions | map(select(.tenant == "alice"))[0].state == "queued"' \
	"alice waits while bob has his grace"
# The grace is cut to 0 by a reload, which applies to a preemption under way: bob is ended
# at the next tick, and alice goes in.
sed -i 's/^preempt_grace 60$/preempt_grace 0/' "$T/gpupoold.conf"
"$POOLCTL" -s "$T/admin.sock" reload >/dev/null || fail "poolctl reload"
hold_line A1 30
case "$HELD" in READY*) ;; *) fail "alice was not admitted after the preemption: $HELD" ;; esac
grep -q "(tenant bob): ending it: preempted: the session was preemptible" "$T/daemon.log" ||
	fail "the preemption should be logged with its reason"
release B1 && fail "bob's next call should fail"
grep -q "ERROR .*CUDA_ERROR_DEVICE_UNAVAILABLE" "$T/B1.out" ||
	fail "bob's client should see CUDA_ERROR_DEVICE_UNAVAILABLE: $(cat "$T/B1.out")"
grep -q "gpupool: this session is preemptible .* the pool will end it after preempt_grace" "$T/B1.err" ||
	fail "bob's client should have had the notice on its stderr: $(cat "$T/B1.err")"
grep -q "gpupool: the pool ended this session: it was preemptible" "$T/B1.err" ||
	fail "bob's client should be told why on its stderr: $(cat "$T/B1.err")"
wait_for '.sessions | map(select(.tenant == "bob")) | length == 0' 10
for _ in $(seq 1 100); do
	grep -q '"tenant":"bob"' "$ACCT" 2>/dev/null && break
	sleep 0.05
done
grep '"tenant":"bob"' "$ACCT" | jq -e '.ended == "preempted" and (.detail | type == "string")' >/dev/null ||
	fail "bob's accounting record should say preempted: $(cat "$ACCT")"
assert_status '.sessions | map(select(.tenant == "carol"))[0].state == "active"' \
	"carol, not preemptible, should still run"
release A1
release C1
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
