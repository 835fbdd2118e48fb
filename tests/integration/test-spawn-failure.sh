#!/bin/bash
# A worker that cannot be started (its executable gone, say mid-upgrade) costs that one
# connection; the daemon stays healthy and serves the next client once it can.
. "$(dirname "$0")/lib.sh"

printf '#!/bin/sh\nexec "%s" "$@"\n' "$GP_STAGE/libexec/gpupool/gpupool-worker" >"$T/worker.sh"
chmod +x "$T/worker.sh"
gp_config "worker $T/worker.sh" "warm_workers 0" # a warm worker would have started already
gp_start
mv "$T/worker.sh" "$T/worker.off"
for _ in 1 2 3; do
	set +e
	out=$(GPUPOOL_LOG=error GPUPOOL_CONNECT_TIMEOUT=1 run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
	set -e
	case "$out" in *PASSED*) fail "a session ran without a worker" ;; esac
	# The connection closed before Hello: busy, not refused, so the client tried again.
	case "$out" in *"pool was busy"*) ;; *) fail "the client should say the pool was busy: $out" ;; esac
done
grep -q "cannot start $T/worker.sh" "$T/daemon.log" || fail "the failure should be logged"
assert_status '.sessions | length == 0' "no session is left behind"
mv "$T/worker.off" "$T/worker.sh"
out=$(run_client "$GP_STAGE/bin/vector_add" 1000) || fail "the daemon should serve again: $out"
gp_stop
echo PASS
