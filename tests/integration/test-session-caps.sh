#!/bin/bash
# Per-session caps on host resources: past max_contexts, max_streams, max_events and
# max_modules a create or load is CUDA_ERROR_OUT_OF_MEMORY and the session goes on; a freed
# stream makes room.
# The worker runs with no core dumps and a modest descriptor limit. Bad values name file:line.
. "$(dirname "$0")/lib.sh"

gp_config "max_streams 8" "max_events 8" "max_modules 2" "max_contexts 3"
gp_start
out=$("$GP_TESTBIN/raw_client" caps 2>&1) || fail "raw_client caps: $out"
echo "$out"
case "$out" in *"8 streams, then 2"*) ;; *) fail "max_streams 8 should allow 8 streams: $out" ;; esac
case "$out" in *"8 events, then 2"*) ;; *) fail "max_events 8 should allow 8 events: $out" ;; esac
case "$out" in *"2 modules, then 2"*) ;; *) fail "max_modules 2 should allow 2 modules: $out" ;; esac

out=$(echo | "$GP_TESTBIN/raw_client" contexts 2>&1) || fail "raw_client contexts: $out"
case "$out" in "3 contexts, then 2"*) ;; *) fail "max_contexts 3 should allow 3 contexts: $out" ;; esac

# The worker's own limits, read from /proc while a session holds it.
rm -f "$T/raw.in"
mkfifo "$T/raw.in"
"$GP_TESTBIN/raw_client" hold <"$T/raw.in" >"$T/raw.out" 2>&1 &
RAW_PID=$!
exec {RAW_IN}>"$T/raw.in"
for _ in $(seq 1 200); do grep -q held "$T/raw.out" && break; sleep 0.05; done
grep -q held "$T/raw.out" || fail "raw_client hold: $(cat "$T/raw.out")"
status_json >"$T/status.json"
pid=$(jq -r '.sessions[0].worker_pid' "$T/status.json")
grep -E "^Max (core file size|open files)" "/proc/$pid/limits"
grep -Eq "^Max core file size +0 +0 " "/proc/$pid/limits" || fail "the worker may dump core"
nofile=$(awk '/^Max open files/ {print $5}' "/proc/$pid/limits")
[ "$nofile" -le 1024 ] || fail "the worker may open $nofile files"
exec {RAW_IN}>&-
wait "$RAW_PID" || fail "raw_client hold failed"
gp_stop

printf 'tls_cert a\ntls_key b\nmax_streams 0\n' >"$T/bad.conf"
out=$("$GP_STAGE/bin/gpupoold" -n -f "$T/bad.conf" 2>&1) && fail "max_streams 0 was accepted"
case "$out" in *"bad.conf:3:"*) ;; *) fail "the error should name file:line: $out" ;; esac
echo PASS
