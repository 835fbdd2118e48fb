#!/bin/bash
# A preemption cancelled (the entitled waiter left before the grace ended), then noticed again
# and cancelled again: the client is told each notice, and when the session is later ended
# for another reason (poolctl evict) it is not told that it was preempted.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G
A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb

gp_config "token $A alice" "token $B bob" "tenant alice guarantee_memory=768M" \
	"queue_timeout 120" "preempt_grace 60"
gp_start
GPUPOOL_TOKEN=$B GPUPOOL_MEMORY=768M GPUPOOL_PREEMPTIBLE=1 hold B1 4096
case "$HELD" in READY*) ;; *) fail "bob: $HELD" ;; esac
for i in 1 2; do
	# alice, within her guarantee, waits for bob's room: bob is noticed ...
	GPUPOOL_TOKEN=$A GPUPOOL_MEMORY=768M hold_start A$i 4096
	wait_for '.sessions | map(select(.tenant == "bob"))[0].preempt_at > 0' 10
	sleep 0.5 # the worker's watchdog tells the notice within 100 ms
	# ... and leaves; at the grace's end (cut to 0) nobody is ended.
	eval "pid=\$A${i}_PID fd=\$A${i}_IN"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	exec {fd}>&-
	wait_for '.sessions | map(select(.tenant == "alice")) | length == 0' 10
	sed -i 's/^preempt_grace 60$/preempt_grace 0/' "$T/gpupoold.conf"
	"$POOLCTL" -s "$T/admin.sock" reload >/dev/null || fail "poolctl reload"
	wait_for '.sessions | map(select(.tenant == "bob"))[0].preempt_at == 0' 10
	n=$(grep -c "(tenant bob): no longer preempted" "$T/daemon.log" || true)
	[ "$n" = "$i" ] || fail "round $i: the cancel should be logged once each round: $n"
	sed -i 's/^preempt_grace 0$/preempt_grace 60/' "$T/gpupoold.conf"
	"$POOLCTL" -s "$T/admin.sock" reload >/dev/null || fail "poolctl reload"
done
sleep 0.3 # the cancel reaches the worker
id=$(status_json | jq -r '.sessions[0].id')
"$POOLCTL" -s "$T/admin.sock" evict "$id" | grep -q "being ended" || fail "evict should confirm"
release B1 && fail "bob's next call should fail"
n=$(grep -c "gpupool: this session is preemptible .* the pool will end it after preempt_grace" \
	"$T/B1.err" || true)
[ "$n" = 2 ] || fail "bob's client should have been told both notices: $(cat "$T/B1.err")"
grep -q "gpupool: the pool ended this session: it was preemptible" "$T/B1.err" &&
	fail "bob was evicted, not preempted: $(cat "$T/B1.err")"
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
