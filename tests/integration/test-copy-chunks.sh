#!/bin/bash
# Host <-> device copies around the 1 MiB chunk boundaries, both ways, synchronous and on
# several streams, ordered with kernels on the same buffers, pitched, into memory freed at
# once, and invalid ranges that fail without ending the session (copy_chunks.c): directly
# on softgpu, then through the pool over TLS and over the Unix socket, where the worker
# streams a copy of more than one chunk (daemon/worker/mem.c). The pool's report says the
# session's memory is back afterwards. Past the staging bound behind answers still queued
# on the stream, through the ring and without it (the test hook GPUPOOL_WORKER_NO_RING=1).
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=2G GPUPOOL_MEMORY=1G
mib=64
[ -n "${GP_SAN_RUNTIME:-}" ] && mib=8

out=$(on_softgpu "$GP_TESTBIN/copy_chunks" "$mib") || fail "directly on softgpu: $out"
case "$out" in *PASS) ;; *) fail "directly on softgpu: $out" ;; esac
gp_config "listen_unix $T/client.sock"
gp_start
out=$(run_client "$GP_TESTBIN/copy_chunks" "$mib") || fail "through the pool: $out"
echo "$out"
case "$out" in *PASS) ;; *) fail "through the pool: $out" ;; esac
out=$(GPUPOOL_SERVER=unix:$T/client.sock run_client "$GP_TESTBIN/copy_chunks" "$mib") ||
	fail "through the Unix socket: $out"
case "$out" in *PASS) ;; *) fail "through the Unix socket: $out" ;; esac
# Past the worker's staging bound (256 MiB): its ring of page-locked chunks, both ways.
if [ -z "${GP_SAN_RUNTIME:-}" ]; then
	out=$(GPUPOOL_SERVER=unix:$T/client.sock run_client "$GP_TESTBIN/copy_chunks" 300 big) ||
		fail "300 MiB through the Unix socket: $out"
	case "$out" in *PASS) ;; *) fail "300 MiB through the Unix socket: $out" ;; esac
	# The ring behind answers still queued on its stream, which need the send lock.
	out=$(GPUPOOL_SERVER=unix:$T/client.sock timeout 60 env LD_PRELOAD="$CLIENT_PRELOAD" \
		"$CLIENT_ASAN" "$GP_TESTBIN/copy_chunks" 8 behind) ||
		fail "the ring behind queued answers: $out"
	case "$out" in *PASS) ;; *) fail "the ring behind queued answers: $out" ;; esac
fi
wait_for '.sessions | length == 0' 10
assert_status '.gpus[0].memory_used == 0' "the session's memory must be free"
gp_stop
# Without the ring (the test hook GPUPOOL_WORKER_NO_RING=1, as when its page-locked memory
# cannot be made) past the bound the copy goes chunk by chunk, also behind queued answers.
if [ -z "${GP_SAN_RUNTIME:-}" ]; then
	GPUPOOL_WORKER_NO_RING=1 gp_start
	out=$(GPUPOOL_SERVER=unix:$T/client.sock timeout 60 env LD_PRELOAD="$CLIENT_PRELOAD" \
		"$CLIENT_ASAN" "$GP_TESTBIN/copy_chunks" 8 behind) ||
		fail "without the ring, behind queued answers: $out"
	case "$out" in *PASS) ;; *) fail "without the ring, behind queued answers: $out" ;; esac
	grep -q "past the staging bound without the ring" "$T/daemon.log" ||
		fail "the worker should have copied without the ring"
	wait_for '.sessions | length == 0' 10
	assert_status '.gpus[0].memory_used == 0' "the session's memory must be free"
	gp_stop
fi
echo PASS
