#!/bin/bash
# run.sh MODE PROGRAM -- runs an nvcc-built test program and checks it passed.
#   softgpu   directly on softgpu (LD_LIBRARY_PATH to it)
#   pool      through gpupoold + softgpu + the interposer (LD_PRELOAD)
#   pool-path the same, the interposer found through LD_LIBRARY_PATH instead
#   unreachable  no pool: the first runtime call must fail, quickly, not hang
. "$(dirname "$0")/../integration/lib.sh"
mode=$1
prog=$2
export SOFTGPU_DEVICES=1

case "$mode" in
softgpu)
	out=$(on_softgpu "$prog" 2>&1) || fail "$prog: $out"
	;;
pool)
	gp_start
	out=$(run_client "$prog" 2>&1) || fail "$prog: $out"
	wait_for '.sessions | length == 0' 10
	gp_stop
	;;
pool-path)
	gp_start
	out=$(env LD_LIBRARY_PATH="$GP_STAGE/lib/gpupool" "$CLIENT_ASAN" \
		${GP_SAN_RUNTIME:+"LD_PRELOAD=$GP_SAN_RUNTIME"} "$prog" 2>&1) || fail "$prog: $out"
	gp_stop
	;;
unreachable)
	set +e
	out=$(GPUPOOL_SERVER=127.0.0.1:1 timeout 60 env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" \
		"$prog" 2>&1)
	rc=$?
	set -e
	[ $rc -ne 124 ] || fail "$prog hung without a pool"
	[ $rc -ne 0 ] || fail "$prog succeeded without a pool: $out"
	case "$out" in *cudaErrorNoDevice*) ;; *) fail "expected cudaErrorNoDevice: $out" ;; esac
	echo "$out"
	echo PASS
	exit 0
	;;
*)
	fail "unknown mode $mode"
	;;
esac
echo "$out"
case "$out" in *PASSED*) echo PASS ;; *) fail "$prog did not report PASSED" ;; esac
