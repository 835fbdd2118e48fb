#!/bin/bash
# The queue is not a way round a tenant's limits: a tenant at sessions=1 may have only its
# queue limit waiting (queue=2) and is refused past it, and when the pool is at
# max_sessions another tenant takes the place of its newest waiter instead of being shut out.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M

gp_config "token aaaaaaaaaaaaaaaaaaaa alice" "token bbbbbbbbbbbbbbbbbbbb bob" \
	"token cccccccccccccccccccc carol" "tenant alice sessions=1 queue=2" \
	"max_sessions 4" "queue_timeout 60"
gp_start
GPUPOOL_TOKEN=aaaaaaaaaaaaaaaaaaaa hold A 4096
case "$HELD" in READY*) ;; *) fail "alice: $HELD" ;; esac
GPUPOOL_TOKEN=aaaaaaaaaaaaaaaaaaaa hold_start A2 4096
wait_for '.sessions | map(select(.state == "queued")) | length == 1' 10
GPUPOOL_TOKEN=aaaaaaaaaaaaaaaaaaaa hold_start A3 4096
wait_for '.sessions | map(select(.state == "queued" and .tenant == "alice")) | length == 2' 10
# A third waiter is past alice's queue limit: refused at once, with the reason.
set +e
out=$(GPUPOOL_LOG=error GPUPOOL_TOKEN=aaaaaaaaaaaaaaaaaaaa run_client "$GP_STAGE/bin/vector_add" 100 2>&1)
set -e
case "$out" in *"refused the session"*"tenant alice has 2 sessions waiting"*) ;;
*) fail "alice's third waiter should be refused: $out" ;; esac
# Bob takes the last of max_sessions 4.
GPUPOOL_TOKEN=bbbbbbbbbbbbbbbbbbbb hold B 4096
case "$HELD" in READY*) ;; *) fail "bob should get in past alice's waiters: $HELD" ;; esac
# The pool is full, but alice's waiters are no reason to shut carol out: alice's newest
# waiter gives way, and carol runs.
out=$(GPUPOOL_TOKEN=cccccccccccccccccccc run_client "$GP_STAGE/bin/vector_add" 2000) ||
	fail "carol was shut out by alice's waiters: $out"
case "$out" in *"2000 elements"*PASSED*) ;; *) fail "carol: $out" ;; esac
hold_line A3 10
case "$HELD" in *ERROR*) ;; *) fail "alice's newest waiter should have given way: $HELD" ;; esac
exec {A3_IN}>&- # it has exited: nothing to tell it
wait "$A3_PID" && fail "alice's displaced waiter should fail cuInit"
grep -q "tenant alice gave its newest place in the queue to tenant carol" "$T/daemon.log" ||
	fail "the displacement should be logged"
# Alice's older waiter keeps its place and goes when her session ends. (The displaced one is
# listed until its worker has exited, which under ASan's leak check at exit takes a while.)
wait_for '.sessions | map(select(.state == "queued" and .tenant == "alice")) | length == 1' 20
release A
hold_line A2 30
case "$HELD" in READY*) ;; *) fail "alice's waiter was not admitted: $HELD" ;; esac
release A2
release B
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
