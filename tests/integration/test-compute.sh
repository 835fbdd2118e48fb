#!/bin/bash
# Compute shares: GPUPOOL_COMPUTE is cut to the tenant's compute=; admission fits memory and
# compute (a share that does not fit waits, though memory is plenty); a session without a
# share is neither counted nor held back; poolctl (text and --json) and /metrics show each
# GPU's granted compute and each session's share; the worker runs as an MPS client with
# that thread percentage, which softgpu honours (that share of the SMs reported, and of
# the threads that run blocks).
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G SOFTGPU_SMS=40 SOFTGPU_THREADS=8 GPUPOOL_MEMORY=64M
A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb C=cccccccccccccccccccc

# softgpu alone: a thread percentage it cannot honour fails cuInit, loudly.
out=$(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=0 on_softgpu "$GP_TESTBIN/hold_session" 4096 </dev/null) &&
	fail "softgpu took a thread percentage of 0: $out"
case "$out" in *"ERROR cuInit(0) CUDA_ERROR_INVALID_VALUE"*) ;; *) fail "softgpu: $out" ;; esac
out=$(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 on_softgpu "$GP_TESTBIN/hold_session" 4096 --sms </dev/null) ||
	fail "softgpu at 50%: $out"
case "$out" in *" sms 20"*) ;; *) fail "softgpu at 50% should report 20 of 40 SMs: $out" ;; esac

gp_config "token $A alice" "token $B bob" "token $C carol" "tenant bob compute=50%" \
	"queue_timeout 60" "metrics_listen 127.0.0.1:0"
SOFTGPU_LOG=1 gp_start
GPUPOOL_TOKEN=$A GPUPOOL_COMPUTE=25% hold A1 4096 --sms
case "$HELD" in READY*" sms 10") ;; *) fail "alice at 25% should see 10 of 40 SMs: $HELD" ;; esac
grep -q "admitted on GPU 0, 67108864 bytes each, 25% of the compute" "$T/daemon.log" ||
	fail "the admission should be logged with the share"
cat "$T/daemon.log" "$T/A1.err" | grep -qF "10 SMs, 2 block thread(s) (25% of the device)" ||
	fail "softgpu in alice's worker should run blocks on 2 of its 8 threads"
# bob asks for 90% and gets his tenant's 50%.
GPUPOOL_TOKEN=$B GPUPOOL_COMPUTE=90 hold B1 4096 --sms
case "$HELD" in READY*" sms 20") ;; *) fail "bob's 90% should be cut to 50%: $HELD" ;; esac
assert_status '.gpus[0].compute_reserved == 75' "25% + 50% granted on GPU 0"
assert_status '.sessions | map(select(.tenant == "bob"))[0] | [.compute, .compute_requested] == [50, 90]' \
	"bob's share: 50% granted of 90% asked"
# alice asks for 30%: 25% is left, so she waits, though the GPU has memory to spare.
GPUPOOL_TOKEN=$A GPUPOOL_COMPUTE=30% hold_start A2 4096 --sms
wait_for '.sessions | map(select(.state == "queued")) | length == 1' 10
assert_status '.sessions | map(select(.state == "queued"))[0] | [.tenant, .waiting_for, .compute_requested] == ["alice", "capacity", 30]' \
	"alice's 30% should wait for compute"
# carol asks for no share, but alice's waiter is before her in the queue and waits for room:
# carol waits behind it (nobody overtakes a waiter for room).
GPUPOOL_TOKEN=$C hold_start C1 4096 --sms
wait_for '.sessions | map(select(.state == "queued")) | length == 2' 10
assert_status '.sessions | map(select(.tenant == "carol"))[0] | [.waiting_for, .queue_place] == ["behind", 2]' \
	"carol should wait behind alice's waiter"
"$POOLCTL" -s "$T/admin.sock" status | tee "$T/status.txt"
grep -q "^0 .* 75% " "$T/status.txt" || fail "poolctl status should show GPU 0's 75% next to its memory"
grep -q "compute 30% asked  #1 in queue, waits for room" "$T/status.txt" ||
	fail "poolctl status should show alice's waiter"
grep -q "compute 50%" "$T/status.txt" || fail "poolctl status should show bob's share"
# alice's first session ends: her 30% fits now, and carol goes after her.
release A1
hold_line A2 30
case "$HELD" in READY*" sms 12") ;; *) fail "alice at 30% should see 12 of 40 SMs: $HELD" ;; esac
hold_line C1 30
case "$HELD" in READY*" sms 40") ;; *) fail "carol, without a share, should see all 40 SMs: $HELD" ;; esac
wait_for '.gpus[0].compute_reserved == 80 and (.sessions | map(select(.state == "active")) | length == 3)' 10
url=$(grep -o "http://[0-9.:]*/metrics" "$T/daemon.log" | head -n 1)
curl -sf "$url" >"$T/metrics" || fail "GET $url"
grep -q '^gpupool_gpu_compute_reserved_percent{gpu="0",name="softgpu"} 80$' "$T/metrics" ||
	fail "metrics: $(grep compute "$T/metrics")"
grep -q '^gpupool_session_compute_percent{session="[0-9]*",tenant="carol",program="hold_session"} 0$' \
	"$T/metrics" || fail "metrics: carol's share: $(grep compute "$T/metrics")"
grep -q '^gpupool_session_compute_percent{session="[0-9]*",tenant="bob",program="hold_session"} 50$' \
	"$T/metrics" || fail "metrics: bob's share: $(grep compute "$T/metrics")"
# A share that is not one: the client says so (with GPUPOOL_LOG) and asks for none. (A
# hostile Hello with more than 100% is refused by the pool: tests/unit/test_pool.c.)
out=$(GPUPOOL_LOG=warn GPUPOOL_TOKEN=$C GPUPOOL_COMPUTE=250% run_client "$GP_STAGE/bin/vector_add" 100 2>&1) ||
	fail "vector_add with GPUPOOL_COMPUTE=250%: $out"
case "$out" in *"GPUPOOL_COMPUTE=250% is not a share of 1% to 100%; asking for none"*PASSED*) ;;
*) fail "the client should say GPUPOOL_COMPUTE=250% is not a share: $out" ;; esac
release A2
release B1
release C1
wait_for '.sessions | length == 0' 10
assert_status '.gpus[0].compute_reserved == 0' "every share should be given back"
gp_stop
echo PASS
