#!/bin/bash
# Tenants from tokens, and per-tenant limits: a tenant at its session limit waits while
# another tenant gets in; an unknown token is refused; idle sessions are ended.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M

gp_config "token aaaaaaaaaaaaaaaaaaaa alice" "token bbbbbbbbbbbbbbbbbbbb bob" \
	"tenant alice sessions=1" "queue_timeout 30"
gp_start
GPUPOOL_TOKEN=aaaaaaaaaaaaaaaaaaaa hold A 4096
case "$HELD" in READY*) ;; *) fail "alice: $HELD" ;; esac
assert_status '.sessions[0].tenant == "alice"' "the token should name the tenant"
GPUPOOL_TOKEN=aaaaaaaaaaaaaaaaaaaa hold_start A2 4096
wait_for '.sessions | map(select(.state == "queued" and .tenant == "alice")) | length == 1' 10
GPUPOOL_TOKEN=bbbbbbbbbbbbbbbbbbbb hold B 4096
case "$HELD" in READY*) ;; *) fail "bob should get in past alice's waiter: $HELD" ;; esac
release A
hold_line A2 30
case "$HELD" in READY*) ;; *) fail "alice's second session was not admitted: $HELD" ;; esac
release A2
release B
set +e
out=$(GPUPOOL_LOG=error GPUPOOL_TOKEN=cccccccccccccccccccc run_client "$GP_STAGE/bin/vector_add" 100 2>&1)
set -e
case "$out" in *"token is not known"*) ;; *) fail "an unknown token should be refused: $out" ;; esac
gp_stop

gp_config "idle_timeout 1"
gp_start
# A kernel that runs longer than idle_timeout keeps its session: busy is not idle.
start=$(date +%s)
out=$(run_client "$GP_TESTBIN/spin" -t 4000) || fail "the busy session was ended: $out"
case "$out" in *"DONE"*ok*) ;; *) fail "spin: $out" ;; esac
echo "a $(( $(date +%s) - start )) s session with a long kernel survived idle_timeout 1"
hold A 4096
wait_for '.sessions | length == 0' 10
grep -q "idle_timeout reached" "$T/daemon.log" || fail "the idle session should be ended"
release A && fail "the idle-ended session should fail its next call"
gp_stop
echo PASS
