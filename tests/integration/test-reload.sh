#!/bin/bash
# SIGHUP (or poolctl reload) with a bad file keeps the running configuration; a good one
# takes effect for new sessions.
. "$(dirname "$0")/lib.sh"

gp_config "tenant default sessions=5"
gp_start
echo "tenant default sessions=5 gpus=banana" >>"$T/gpupoold.conf"
kill -HUP "$DAEMON_PID"
sleep 0.5
grep -q "reload failed, keeping the running configuration: .*gpupoold.conf:[0-9]*: tenant" \
	"$T/daemon.log" || fail "a bad reload should be logged with file and line"
out=$(run_client "$GP_STAGE/bin/vector_add" 1000) || fail "the pool should keep serving: $out"
set +e
"$POOLCTL" -s "$T/admin.sock" reload 2>"$T/err"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "gpupoold.conf:" "$T/err" || fail "poolctl reload should report the error"

# Now a good file: tenant default may not open sessions at all.
gp_config "tenant default sessions=0"
"$POOLCTL" -s "$T/admin.sock" reload | grep -q "reloaded" || fail "poolctl reload should succeed"
set +e
out=$(GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
set -e
case "$out" in *"tenant default may not open sessions"*) ;; *) fail "new limits should apply: $out" ;; esac
gp_stop
echo PASS
