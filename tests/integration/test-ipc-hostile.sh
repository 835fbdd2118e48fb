#!/bin/bash
# The supervisor's side of CUDA IPC against a compromised worker (ipc_worker, named as the
# worker): descriptors that are not sealed memfds, miscounted ones, short handles, unknown
# kinds and operations, descriptors with an open, and requests before admission are refused,
# as are withdrawals of nothing exported, of short handles, of an event and with descriptors,
# and the descriptors closed; a datagram that does not parse ends that session; the daemon
# goes on serving.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=256M
export GPUPOOL_TEST_WORKER=$GP_STAGE/libexec/gpupool/gpupool-worker
export GPUPOOL_TEST_IPC_OUT=$T/ipc-worker.out
gp_config "warm_workers 0" "worker $GP_TESTBIN/ipc_worker" "handshake_timeout 30"
gp_start
set +e
out=$(timeout 60 env GPUPOOL_LOG=error GPUPOOL_CONNECT_TIMEOUT=0 LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" \
	"$GP_STAGE/bin/vector_add" 100 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "the client of an ended worker should fail at once ($rc): $out"
cat "$GPUPOOL_TEST_IPC_OUT"
expect() {
	grep -qx "$1 $2" "$GPUPOOL_TEST_IPC_OUT" || fail "$1 should answer $2: $(cat "$GPUPOOL_TEST_IPC_OUT")"
}
# 1 CUDA_ERROR_INVALID_VALUE, 201 CUDA_ERROR_INVALID_CONTEXT
expect export-file 1
expect export-unsealed 1
expect export-miscounted 1
expect export-short-handle 1
expect export-kind 1
expect export-unadmitted 201
expect open-with-fds 1
expect open-unadmitted 201
expect withdraw-unexported 1
expect withdraw-short-handle 1
expect withdraw-event 1
expect withdraw-with-fds 1
expect op-unknown 1
grep -qx garbage "$GPUPOOL_TEST_IPC_OUT" || fail "ipc_worker did not get to its last request"
wait_for '.sessions | length == 0' 20
grep -q "an IPC request that does not parse; ending it" "$T/daemon.log" ||
	fail "the unparseable request should end the session"
# No descriptor it sent is left open in the daemon.
if ls -l "/proc/$DAEMON_PID/fd" 2>/dev/null | grep -q -e /etc/passwd -e ipc-worker; then
	fail "the daemon kept a descriptor the worker sent: $(ls -l /proc/$DAEMON_PID/fd)"
fi
gp_stop
echo PASS
