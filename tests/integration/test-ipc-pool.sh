#!/bin/bash
# CUDA IPC through the pool (tests/integration/ipc.c, daemon/supervisor/ipc.c): two client
# processes of one tenant, each its own session. The importer opens the exporter's memory,
# reads its words, rewrites them with a kernel and records the exporter's interprocess event;
# the exporter waits on it and checks every word. The imported memory is charged to the
# exporter only (poolctl status --json). Another tenant presenting the same bytes, forged
# bytes, the handle presented to another daemon and any open after the exporter has gone are
# refused with CUDA_ERROR_INVALID_HANDLE.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=256M GPUPOOL_MEMORY=64M
ALICE=aaaaaaaaaaaaaaaaaaaa
BOB=bbbbbbbbbbbbbbbbbbbb

gp_config "token $ALICE alice" "token $BOB bob"
gp_start
D=$T/ipc
mkdir -m 0755 "$D"
chmod 0755 "$T"

GPUPOOL_TOKEN=$ALICE run_client "$GP_TESTBIN/ipc" export "$D" >"$T/export.out" 2>&1 &
A=$!
for _ in $(seq 1 600); do
	[ -f "$D/handle" ] && break
	kill -0 "$A" 2>/dev/null || fail "the exporter ended early: $(cat "$T/export.out")"
	sleep 0.05
done
[ -f "$D/handle" ] || fail "no handle from the exporter"

# The handle is the pool's, not the driver's: it starts with the pool's magic.
head -c 5 "$D/handle" | grep -q '^gpipc' || fail "the handle is not a pool handle"

# Forged bytes open nothing, for the same tenant either.
out=$(GPUPOOL_TOKEN=$ALICE run_client "$GP_TESTBIN/ipc" forged "$D" 2>&1) || fail "forged: $out"
case "$out" in "REFUSED every forged handle"*) ;; *) fail "forged: $out" ;; esac
echo "$out"

# Another tenant presenting the very bytes is refused, as an invalid handle.
out=$(GPUPOOL_TOKEN=$BOB run_client "$GP_TESTBIN/ipc" refused "$D" 2>&1) || fail "bob: $out"
case "$out" in "REFUSED memory CUDA_ERROR_INVALID_HANDLE, event CUDA_ERROR_INVALID_HANDLE"*) ;;
*) fail "another tenant should be refused: $out" ;; esac
echo "another tenant: $out"
grep -q "presented an IPC handle of session" "$T/daemon.log" ||
	fail "the daemon should log the other tenant's attempt"

# Another daemon on this host (its own id) knows nothing of this one's handles.
sed -e "s|^admin_socket .*|admin_socket $T/admin2.sock|" "$T/gpupoold.conf" >"$T/second.conf"
"$GP_STAGE/bin/gpupoold" -f "$T/second.conf" 2>>"$T/daemon2.log" &
D2PID=$!
trap 'kill -KILL "$D2PID" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 1 200); do
	"$POOLCTL" -s "$T/admin2.sock" status --json >"$T/status2.json" 2>/dev/null && break
	sleep 0.1
done
second=$(jq -r .listen "$T/status2.json")
[ -n "$second" ] && [ "$second" != "$GPUPOOL_SERVER" ] || fail "the second daemon did not start"
out=$(GPUPOOL_SERVER=$second GPUPOOL_TOKEN=$ALICE run_client "$GP_TESTBIN/ipc" refused "$D" 2>&1) ||
	fail "another daemon: $out"
kill -TERM "$D2PID"
wait "$D2PID" || fail "the second daemon did not exit cleanly: $(tail "$T/daemon2.log")"
trap cleanup EXIT
case "$out" in "REFUSED memory CUDA_ERROR_INVALID_HANDLE, event CUDA_ERROR_INVALID_HANDLE"*) ;;
*) fail "another daemon should refuse the handle: $out" ;; esac
echo "another daemon: $out"

# The importer, holding twice: before it opens anything and while it holds the mapping.
IPC_HOLD=1 GPUPOOL_TOKEN=$ALICE run_client "$GP_TESTBIN/ipc" import "$D" >"$T/import.out" 2>&1 &
I=$!
waitfile() {
	for _ in $(seq 1 1200); do
		[ -f "$D/$1" ] && return 0
		kill -0 "$I" 2>/dev/null || fail "the importer ended early: $(cat "$T/import.out")"
		sleep 0.05
	done
	fail "the importer never reached $1"
}
waitfile before
ipid=$(cat "$D/before")
status_json >"$T/s1.json"
imp0=$(jq --argjson p "$ipid" '.sessions[] | select(.client_pid == $p) | .memory_used' "$T/s1.json")
exp0=$(jq --argjson p "$ipid" '.sessions[] | select(.client_pid != $p and .tenant == "alice") |
	.memory_used' "$T/s1.json")
[ -n "$imp0" ] && [ -n "$exp0" ] || fail "no sessions in $(cat "$T/s1.json")"
[ "$exp0" -ge 1024 ] || fail "the exporter's 1 KiB should be charged to it: $exp0"
touch "$D/before.go"
waitfile holding
status_json >"$T/s2.json"
imp1=$(jq --argjson p "$ipid" '.sessions[] | select(.client_pid == $p) | .memory_used' "$T/s2.json")
exp1=$(jq --argjson p "$ipid" '.sessions[] | select(.client_pid != $p and .tenant == "alice") |
	.memory_used' "$T/s2.json")
[ "$imp1" = "$imp0" ] || fail "the importer was charged for IPC memory: $imp0 -> $imp1"
[ "$exp1" = "$exp0" ] || fail "the exporter's charge changed: $exp0 -> $exp1"
echo "charged: exporter $exp1 bytes (unchanged), importer $imp1 bytes before and after its open"
touch "$D/holding.go"
wait "$I" || fail "importer: $(cat "$T/import.out")"
cat "$T/import.out"
grep -q "^OK importer" "$T/import.out" || fail "importer: $(cat "$T/import.out")"
for _ in $(seq 1 600); do
	grep -q "^OK exporter" "$T/export.out" && break
	sleep 0.05
done
grep -q "^OK exporter" "$T/export.out" || fail "exporter: $(cat "$T/export.out")"

# The exporter ends: its handles open nothing any more.
touch "$D/release"
wait "$A" || fail "exporter: $(cat "$T/export.out")"
cat "$T/export.out"
wait_for '.sessions | length == 0' 20
out=$(GPUPOOL_TOKEN=$ALICE run_client "$GP_TESTBIN/ipc" refused "$D" 2>&1) ||
	fail "after the exporter: $out"
case "$out" in "REFUSED memory CUDA_ERROR_INVALID_HANDLE, event CUDA_ERROR_INVALID_HANDLE"*) ;;
*) fail "after the exporter: $out" ;; esac
echo "after the exporter ended: $out"
gp_stop
echo PASS
