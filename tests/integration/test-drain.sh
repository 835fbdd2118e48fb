#!/bin/bash
# SIGTERM drains: no new sessions, running ones may finish within drain_grace; then the
# daemon exits cleanly. Past drain_grace, sessions are ended.
. "$(dirname "$0")/lib.sh"

gp_config "drain_grace 30"
gp_start
hold A 4096
kill -TERM "$DAEMON_PID"
sleep 0.5
kill -0 "$DAEMON_PID" || fail "the daemon should wait for the running session"
assert_status '.draining == true' "status should say the pool is draining"
set +e
out=$(GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
set -e
case "$out" in *PASSED*) fail "a new session was let in while draining" ;; esac
release A || fail "the running session should finish normally"
wait "$DAEMON_PID" || fail "the daemon should exit 0 after draining"
DAEMON_PID=

gp_config "drain_grace 1"
gp_start
hold A 4096
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" || fail "the daemon should exit 0 after drain_grace"
DAEMON_PID=
grep -q "drain_grace is over" "$T/daemon.log" || fail "the daemon should say why it ended the session"
release A && fail "the session ended by the drain should fail its next call"
echo PASS
