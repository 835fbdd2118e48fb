#!/bin/bash
# Priorities: a preemptible session of priority 0 holds the GPU; a session of priority 5 of a
# tenant with no guarantee comes and waits for that room. poolctl shows each session's
# priority and that the waiter would preempt the holder; the holder is ended after
# preempt_grace, its next call fails with CUDA_ERROR_DEVICE_UNAVAILABLE, its accounting record
# says preempted, and the waiter goes in. A client's GPUPOOL_PRIORITY above its tenant's is
# cut to it; a session of lower priority than the holder preempts nobody. A Hello whose
# priority is not 0-9 is refused.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G
L=llllllllllllllllllll H=hhhhhhhhhhhhhhhhhhhh M=mmmmmmmmmmmmmmmmmmmm
ACCT=$T/acct.jsonl

gp_config "token $L lo" "token $H hi" "token $M mid" \
	"tenant hi priority=5" "tenant mid priority=3" \
	"queue_timeout 120" "preempt_grace 60" "accounting_file $ACCT"
gp_start
# lo (priority 0, the default; asking 9 gets it nothing) holds the whole GPU, preemptible.
GPUPOOL_TOKEN=$L GPUPOOL_MEMORY=1G GPUPOOL_PREEMPTIBLE=1 GPUPOOL_PRIORITY=9 hold L1 4096
case "$HELD" in READY*) ;; *) fail "lo: $HELD" ;; esac
assert_status '.sessions | map(select(.tenant == "lo"))[0] | .priority == 0 and .priority_requested == 9' \
	"lo's tenant has no priority: its client's 9 is cut to 0"
# mid (3) waits without being preemptible: it would preempt lo (0 < 3).
# hi asks 7, gets 5 (its tenant's), and goes before mid in the queue.
GPUPOOL_TOKEN=$M GPUPOOL_MEMORY=1G hold_start M1 4096
wait_for '.sessions | map(select(.tenant == "lo"))[0].preempt_at > 0' 10
GPUPOOL_TOKEN=$H GPUPOOL_MEMORY=1G GPUPOOL_PRIORITY=7 hold_start H1 4096
wait_for '.sessions | map(select(.tenant == "hi" and .state == "queued")) | length == 1' 10
assert_status '.sessions | map(select(.tenant == "hi"))[0] | .priority == 5 and .priority_requested == 7 and .queue_place == 1' \
	"hi's 7 is cut to its tenant's 5, and it is first in the queue"
assert_status '.sessions | map(select(.tenant == "mid"))[0] | .priority == 3 and .queue_place == 2' \
	"mid (3) is second"
lo_id=$(status_json | jq -r '.sessions | map(select(.tenant == "lo"))[0].id')
# The preemption chosen for mid lets hi in as well: it is carried on for whoever is first.
assert_status ".sessions | map(select(.tenant == \"hi\"))[0] | .would_preempt == [$lo_id] and .would_preempt_at > 0" \
	"hi, first, would preempt lo"
assert_status '.sessions | map(select(.tenant == "mid"))[0].would_preempt == []' \
	"mid is not first: nothing is preempted for it now"
"$POOLCTL" -s "$T/admin.sock" status | tee "$T/status.txt"
grep -q "PRIO" "$T/status.txt" || fail "poolctl status should have a PRIO column"
grep -Eq "^[0-9]+ +queued +hi .* 5  #1 in queue, waits for room at priority 5; would preempt session $lo_id at [0-9]{2}:[0-9]{2}:[0-9]{2}" \
	"$T/status.txt" || fail "poolctl should say hi waits and would preempt lo"
grep -Eq "^[0-9]+ +queued +mid .* 3  #2 in queue, waits for room at priority 3, behind 1 of higher priority" "$T/status.txt" ||
	fail "poolctl should show mid second"
grep -q "session $lo_id (tenant lo) is preemptible: it will be ended in 60 s (preempt_grace) to admit session [0-9]* (tenant mid, of priority 3 (this session's is 0))" \
	"$T/daemon.log" || fail "the notice should be logged with the priorities"
# The grace is cut to 0 by a reload: lo is ended at the next tick; hi goes in, mid waits.
sed -i 's/^preempt_grace 60$/preempt_grace 0/' "$T/gpupoold.conf"
"$POOLCTL" -s "$T/admin.sock" reload >/dev/null || fail "poolctl reload"
hold_line H1 30
case "$HELD" in READY*) ;; *) fail "hi was not admitted after the preemption: $HELD" ;; esac
grep -q "(tenant lo): ending it: preempted: the session was preemptible, and its GPU memory or compute was needed for session [0-9]* of tenant mid, of priority 3" \
	"$T/daemon.log" || fail "the preemption should be logged with its reason"
release L1 && fail "lo's next call should fail"
grep -q "ERROR .*CUDA_ERROR_DEVICE_UNAVAILABLE" "$T/L1.out" ||
	fail "lo's client should see CUDA_ERROR_DEVICE_UNAVAILABLE: $(cat "$T/L1.out")"
grep -q "gpupool: the pool ended this session: it was preemptible" "$T/L1.err" ||
	fail "lo's client should be told why on its stderr: $(cat "$T/L1.err")"
for _ in $(seq 1 100); do
	grep -q '"tenant":"lo"' "$ACCT" 2>/dev/null && break
	sleep 0.05
done
grep '"tenant":"lo"' "$ACCT" | jq -e '.ended == "preempted"' >/dev/null ||
	fail "lo's accounting record should say preempted: $(cat "$ACCT")"
# hi (5, not preemptible) holds the GPU: mid (3) preempts nobody and waits.
assert_status '.sessions | map(select(.tenant == "mid"))[0] | .state == "queued" and .would_preempt == []' \
	"mid waits for hi, whom it may not preempt"
assert_status '.sessions | map(select(.preempt_at > 0)) | length == 0' "nobody is being preempted"
release H1
hold_line M1 30
case "$HELD" in READY*) ;; *) fail "mid was not admitted once hi left: $HELD" ;; esac
release M1
# A value that is not a priority is not sent (the interposer says why): the tenant's.
GPUPOOL_TOKEN=$H GPUPOOL_MEMORY=1G GPUPOOL_PRIORITY=high GPUPOOL_LOG=warn hold H2 4096
case "$HELD" in READY*) ;; *) fail "hi with a bad GPUPOOL_PRIORITY: $HELD" ;; esac
grep -q "GPUPOOL_PRIORITY=high: expected 0 to 9" "$T/H2.err" ||
	fail "the interposer should say why it sent no priority: $(cat "$T/H2.err")"
assert_status '.sessions[0] | .priority == 5 and .priority_requested == -1' \
	"a session asking for no valid priority gets its tenant's"
release H2
# A priority that is not 0-9 on the wire (the interposer never sends one) is refused, named.
for p in -3 10 2147483647; do
	GPUPOOL_TOKEN=$H RAW_PRIORITY=$p "$GP_TESTBIN/raw_client" hold </dev/null >"$T/raw.out" 2>&1 &&
		fail "a Hello with priority $p should be refused"
	grep -q "GPUPOOL_PRIORITY=$p is not a priority (0 to 9)" "$T/raw.out" ||
		fail "the refusal should name priority $p: $(cat "$T/raw.out")"
done
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
