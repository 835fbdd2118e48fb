#!/bin/bash
# An IPC export lasts as long as its allocation (tests/integration/ipc.c freed / open-freed,
# daemon/worker/ipc.c, daemon/supervisor/ipc.c): the exporter exports and frees 300
# allocations (more than the 256 a session may hold exported at once: each free withdraws
# its export), then hands over the handles of an allocation it keeps, of one it freed (the
# address allocated again, with other words) and of one in a context it destroyed. The
# importer, a session of the same tenant, opens the kept one and reads its words; the other
# two are refused with CUDA_ERROR_INVALID_HANDLE by the pool itself: its log shows one open
# and every withdrawal.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=256M GPUPOOL_MEMORY=64M
ALICE=aaaaaaaaaaaaaaaaaaaa

gp_config "token $ALICE alice"
gp_start
D=$T/ipc
mkdir -m 0755 "$D"
chmod 0755 "$T"

GPUPOOL_TOKEN=$ALICE run_client "$GP_TESTBIN/ipc" freed "$D" >"$T/export.out" 2>&1 &
A=$!
for _ in $(seq 1 1200); do
	[ -f "$D/handle" ] && break
	kill -0 "$A" 2>/dev/null || fail "the exporter ended early: $(cat "$T/export.out")"
	sleep 0.05
done
[ -f "$D/handle" ] || fail "no handles from the exporter"
out=$(GPUPOOL_TOKEN=$ALICE run_client "$GP_TESTBIN/ipc" open-freed "$D" 2>&1) ||
	fail "importer: $out"
echo "$out"
case "$out" in "OK importer"*) ;; *) fail "importer: $out" ;; esac
wait "$A" || fail "exporter: $(cat "$T/export.out")"
cat "$T/export.out"
grep -q "^OK exporter" "$T/export.out" || fail "exporter: $(cat "$T/export.out")"
opened=$(grep -c "opened an IPC handle of session" "$T/daemon.log" || true)
[ "$opened" = 1 ] || fail "the pool should have opened the kept handle only, not $opened"
withdrawn=$(grep -c "withdrew an IPC memory export" "$T/daemon.log" || true)
[ "$withdrawn" -ge 302 ] || fail "the pool should show 302 exports withdrawn before the opens: $withdrawn"
echo "the pool withdrew $withdrawn exports, opened 1 handle"
wait_for '.sessions | length == 0' 20
gp_stop
echo PASS
