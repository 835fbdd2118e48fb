#!/bin/bash
# Priorities where a client looks before it connects, and where an operator looks: a quote
# (poolctl quote --priority, as the client's GPUPOOL_PRIORITY) names the session's priority
# and says what the queue would do with it: ending a preemptible session of lower priority
# would let it in (and after how long), or a waiter before it holds it up; a client queues at
# a candidate where it would preempt rather than passing it by. /metrics has each session's
# priority; poolctl status says why a waiter waits with its priority.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet.sh"

fleet_certs
admin_certs
fleet_start 2 127.0.0.2:0 1 1G "tls_ca $T/certs/ca.pem" "admin_ca $T/admin/ca.pem" \
	"admin_listen 127.0.0.2:0" "metrics_listen 127.0.0.2:0" \
	"tenant default priority=5" "queue_timeout 120" "preempt_grace 60"
aport=$(jq -r .admin_listen "$T/d2/status.json")
POOL=127.0.0.2:${aport##*:}
export GPUPOOL_SERVER=$D2_LISTEN GPUPOOL_CERT=$T/certs/client.pem GPUPOOL_KEY=$T/certs/client.key
quote() { fpoolctl tenant --pool "$POOL" quote --memory 1G "$@" --json | jq '.[0]'; }
check() { # check JQ_EXPR WHAT: the last quote satisfies it
	jq -e "$1" "$T/q.json" >/dev/null || { cat "$T/q.json"; fail "$2"; }
}

# An empty pool: it fits at its tenant's priority, or at the one asked for when lower.
quote >"$T/q.json"
check '.fits and .priority == 5 and .priority_requested == -1 and .ahead == 0 and .preempt == 0' \
	"an empty pool: fits at the tenant's priority 5"
quote --priority 7 >"$T/q.json"
check '.fits and .priority == 5 and .priority_requested == 7' "7 asked is cut to 5"
fpoolctl tenant --pool "$POOL" quote --priority 10 --json >/dev/null 2>"$T/bad.err" &&
	fail "poolctl quote --priority 10 should be refused"
grep -q "is not 0 to 9" "$T/bad.err" || fail "poolctl should say why: $(cat "$T/bad.err")"

# A preemptible session of priority 0 holds the whole GPU.
GPUPOOL_MEMORY=1G GPUPOOL_PREEMPTIBLE=1 GPUPOOL_PRIORITY=0 hold L 4096
case "$HELD" in READY*) ;; *) fail "the holder: $HELD" ;; esac
quote >"$T/q.json"
check '(.fits | not) and .priority == 5 and .preempt == 1 and .preempt_grace == 60 and
	(.held_up | not) and (.reason | test("ending 1 preemptible session would make room in 60 s"))' \
	"priority 5 would preempt the holder of priority 0"
quote --priority 0 >"$T/q.json"
check '(.fits | not) and .priority == 0 and .preempt == 0' \
	"priority 0 preempts nobody of its own priority"

# A waiter of priority 3 (not preemptible) queues; the preemption for it begins. A quote
# of priority 1 would wait behind it; one of 5 goes before it and would still preempt.
GPUPOOL_MEMORY=1G GPUPOOL_PRIORITY=3 hold_start W 4096
dwait 2 '.sessions | map(select(.state == "queued")) | length == 1'
quote --priority 1 >"$T/q.json"
check '(.fits | not) and .priority == 1 and .ahead == 1 and .held_up and .preempt == 0 and
	(.reason | test("1 session waits before it at priority 1 \\(1 of higher priority\\)"))' \
	"priority 1 would wait behind the waiter of priority 3"
quote >"$T/q.json"
check '.ahead == 0 and (.held_up | not)' "priority 5 goes before the waiter of 3"
# A second waiter, of priority 1: poolctl says why each waits, with its priority.
GPUPOOL_MEMORY=1G GPUPOOL_PRIORITY=1 hold_start V 4096
dwait 2 '.sessions | map(select(.state == "queued")) | length == 2'
dwait 2 '.sessions | map(select(.state == "queued" and .priority == 3))[0] |
	.ahead_higher == 0 and .waiting_reason == "room at priority 3"'
dwait 2 '.sessions | map(select(.state == "queued" and .priority == 1))[0] |
	.ahead_higher == 1 and .priority_requested == 1 and
	.waiting_reason == "room at priority 1, behind 1 of higher priority"'
"$POOLCTL" -s "$T/d2/admin.sock" status >"$T/status.txt"
grep -Eq "#2 in queue, waits for room at priority 1, behind 1 of higher priority" "$T/status.txt" ||
	{ cat "$T/status.txt"; fail "poolctl status should say why the second waiter waits"; }

# /metrics: every session's priority.
url=$(grep -o "http://[0-9.:]*/metrics" "$T/d2/daemon.log" | head -n 1)
curl -sf "$url" >"$T/metrics" || fail "GET $url"
grep -q '^# TYPE gpupool_session_priority gauge$' "$T/metrics" || fail "the priority's TYPE"
for p in 0 3 1; do
	[ "$(grep -c "^gpupool_session_priority{session=\"[0-9]*\",tenant=\"default\",program=\"hold_session\"} $p$" "$T/metrics")" = 1 ] ||
		{ grep priority "$T/metrics"; fail "a session of priority $p in /metrics"; }
done

kill -KILL "$W_PID" "$V_PID" 2>/dev/null
release L || fail "the holder should end cleanly"
wait "$W_PID" "$V_PID" 2>/dev/null || true
dwait 2 '.sessions | length == 0'

# A client with two candidates, both full: on the first a preemptible session of priority 0
# holds the GPU (its quote: preempt 1), on the second one that is not preemptible (it would
# wait). The client queues at the first rather than passing it by (no_wait) for the second,
# and gets in there once the holder is preempted (preempt_grace 0).
fleet_stop 2
fleet_start 2 127.0.0.2:0 1 1G "tls_ca $T/certs/ca.pem" "admin_ca $T/admin/ca.pem" \
	"admin_listen 127.0.0.2:0" "tenant default priority=5" "queue_timeout 120" \
	"preempt_grace 0"
port=${D2_LISTEN##*:}
aport=$(jq -r .admin_listen "$T/d2/status.json")
aport=${aport##*:}
fleet_start 3 "127.0.0.3:$port" 1 1G "tls_ca $T/certs/ca.pem" "admin_ca $T/admin/ca.pem" \
	"admin_listen 127.0.0.3:$aport" "tenant default priority=5" "queue_timeout 120"
GPUPOOL_SERVER=127.0.0.2:$port GPUPOOL_MEMORY=1G GPUPOOL_PREEMPTIBLE=1 GPUPOOL_PRIORITY=0 hold P 4096
case "$HELD" in READY*) ;; *) fail "the preemptible holder: $HELD" ;; esac
GPUPOOL_SERVER=127.0.0.3:$port GPUPOOL_MEMORY=1G GPUPOOL_PRIORITY=0 hold F 4096
case "$HELD" in READY*) ;; *) fail "the other holder: $HELD" ;; esac
GPUPOOL_SERVER=127.0.0.2:$port,127.0.0.3:$port GPUPOOL_QUOTE_PORT=$aport GPUPOOL_MEMORY=1G \
	GPUPOOL_LOG=debug hold N 4096
case "$HELD" in READY*) ;; *) fail "the client should get in by preemption: $HELD $(cat "$T/N.err")" ;; esac
grep -q "quote from 127.0.0.2:$aport: does not fit, .* 1 to preempt" "$T/N.err" ||
	{ cat "$T/N.err"; fail "127.0.0.2's quote should say it would preempt one"; }
dwait 2 '(.sessions | length) == 1 and .sessions[0].priority == 5'
dwait 3 '(.sessions | length) == 1 and .sessions[0].priority == 0'
release P && fail "the preempted holder's next call should fail"
release N || fail "the client that got in by preemption should end cleanly"
release F || fail "the other holder should end cleanly"
fleet_stop 2
fleet_stop 3
echo PASS
