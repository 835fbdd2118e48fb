#!/bin/bash
# A session that does not fit waits in the queue and is admitted when room comes free;
# one that waits past queue_timeout is refused and the client is told why.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=512M

# Whole GPUs (default_memory 0): two sessions fill the pool.
gp_config "queue_timeout 30"
gp_start
hold A 4096
hold B 4096
assert_status '.sessions | map(select(.state == "active")) | length == 2' "two active sessions"
hold_start C 4096
wait_for '.sessions | map(select(.state == "queued")) | length == 1' 10
assert_status '.sessions[] | select(.state == "queued") | .gpus | length == 0' "a waiter holds no GPU"
release A
hold_line C 30
case "$HELD" in READY*) ;; *) fail "the waiting session was not admitted: $HELD" ;; esac
assert_status '.sessions | map(select(.state == "active")) | length == 2' "the waiter became active"
release C || fail "third session failed"
release B
gp_stop

# queue_timeout 1: the waiter is refused, and the interposer says why with GPUPOOL_LOG.
gp_config "queue_timeout 1"
gp_start
hold A 4096
hold B 4096
set +e
out=$(GPUPOOL_LOG=error run_client "$GP_TESTBIN/hold_session" 4096 2>&1 </dev/null)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a session past its queue timeout must not run"
echo "$out"
case "$out" in *"refused the session"*"waited 1 s"*) ;; *) fail "the refusal should say why: $out" ;; esac
case "$out" in *"ERROR cuInit"*) ;; *) fail "cuInit should fail: $out" ;; esac
# A request that can never fit is refused at once.
set +e
out=$(GPUPOOL_LOG=error GPUPOOL_GPUS=3 run_client "$GP_TESTBIN/hold_session" 4096 2>&1 </dev/null)
set -e
case "$out" in *"asked for 3 GPUs; the pool has 2"*) ;; *) fail "3 GPUs: $out" ;; esac
release A
release B
gp_stop
echo PASS
