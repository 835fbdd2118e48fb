#!/bin/bash
# No pool, or a pool that cannot be trusted: cuInit fails (never succeeds), quickly,
# and with GPUPOOL_LOG set the interposer says why on stderr. Silent otherwise.
. "$(dirname "$0")/lib.sh"

# Nothing listens on port 1 of loopback.
set +e
out=$(GPUPOOL_SERVER=127.0.0.1:1 GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "vector_add succeeded without a pool"
echo "$out"
case "$out" in *"cuInit(0) failed: CUDA_ERROR_NO_DEVICE"*) ;; *) fail "cuInit should fail with NO_DEVICE: $out" ;; esac
case "$out" in *"pool unreachable"*"127.0.0.1:1"*) ;; *) fail "GPUPOOL_LOG should explain: $out" ;; esac

# Without GPUPOOL_LOG the interposer prints nothing of its own.
set +e
out=$(GPUPOOL_SERVER=127.0.0.1:1 run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
set -e
case "$out" in *gpupool*) fail "the interposer printed without GPUPOOL_LOG: $out" ;; esac

# No GPUPOOL_SERVER at all.
set +e
out=$(env -u GPUPOOL_SERVER GPUPOOL_LOG=error LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" \
	"$GP_STAGE/bin/vector_add" 1000 2>&1)
set -e
case "$out" in *"GPUPOOL_SERVER is not set"*) ;; *) fail "should say GPUPOOL_SERVER is unset: $out" ;; esac

# A pool whose certificate the client's CA did not sign.
gp_start
# Several pools: the first that answers and admits serves the session.
out=$(GPUPOOL_SERVER="127.0.0.1:1,$GPUPOOL_SERVER" GPUPOOL_LOG=info \
	run_client "$GP_STAGE/bin/vector_add" 1000 2>&1) || fail "failover: $out"
case "$out" in *"pool unreachable"*"session 1 on $GPUPOOL_SERVER"*PASSED*) ;;
*) fail "the second pool should have served: $out" ;; esac
"$GP_SRC/scripts/gen-certs.sh" "$T/other" >/dev/null
set +e
out=$(GPUPOOL_CA=$T/other/ca.pem GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "vector_add trusted a pool signed by another CA"
case "$out" in *"certificate verification failed"*) ;; *) fail "should name the TLS failure: $out" ;; esac
gp_stop
echo PASS
